package overview

import (
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"

	aromonitorv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// aroMonitorSection is aro-monitor's findings. They hold no upgrade, so the
// worst they make the section is "attention", never blocked.
func aroMonitorSection(in Input) Section {
	s := Section{Component: AROMonitor}
	r := in.MonitorConfig
	if unreadable(&s, r.Outcome, r.Err, "MonitorConfig") {
		return s
	}
	if r.Outcome == Absent || r.Object == nil {
		s.State, s.Waiting = StateIdle, "no MonitorConfig yet (aro-monitor creates it when it starts)"
		return s
	}
	st := r.Object.Status
	var bad []string
	for _, c := range st.Conditions {
		if conditionBad(c) {
			bad = append(bad, c.Type)
			s.Lines = append(s.Lines, "  "+joinNonEmpty(": ", c.Type+"="+string(c.Status), c.Reason, oneLine(c.Message, 160)))
		}
	}
	s.Lines = capped(s.Lines, 4, "  ")
	var workloads []string
	for _, w := range st.Workloads {
		workloads = append(workloads, fmt.Sprintf("    %s %s/%s: %s", w.Kind, w.Namespace, w.Name, oneLine(w.Problem, 120)))
	}
	if len(workloads) > 0 {
		s.Lines = append(s.Lines, fmt.Sprintf("  %d workload problems:", len(workloads)))
		s.Lines = append(s.Lines, capped(workloads, 3, "    ")...)
	}
	head := fmt.Sprintf("%d conditions, %d failing", len(st.Conditions), len(bad))
	s.Lines = append([]string{head}, s.Lines...)
	if len(bad) > 0 || len(workloads) > 0 {
		s.State, s.Waiting = StateAttention, plural(len(bad)+len(workloads), "finding")+": "+joinNonEmpty(", ", append(bad, plural(len(workloads), "workload problem"))...)
		return s
	}
	s.State, s.Waiting = StateIdle, "every check passes"
	return s
}

// conditionBad: aro-monitor's condition types say what is right when True
// (InternetReachableFromMaster, NSGAssociated, ...), except
// RemediationSuppressed.
func conditionBad(c operatorv1.OperatorCondition) bool {
	if c.Type == aromonitorv1alpha1.RemediationSuppressed {
		return c.Status == operatorv1.ConditionTrue
	}
	return c.Status == operatorv1.ConditionFalse
}

func plural(n int, what string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
