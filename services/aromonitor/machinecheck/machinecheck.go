// Package machinecheck decides ARO's MachineValid condition from the
// cluster's Machines and MachineSets, by ARO's rules: three masters, as many
// other Machines as the MachineSets' replicas add up to, and every Machine
// with a readable Azure provider spec, ARO's image (publisher azureopenshift,
// offer aro4), no managed identity, and — for all but the masters — an OS
// disk of at least 128 GB. The messages are ARO's, so whoever reads the
// condition sees what ARO's operator would have written. Round by round the
// condition then moves with a hysteresis (package rounds), which ARO's
// check has not: a scale-down's Machines count until they are gone. No I/O.
package machinecheck

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/hysteresis"
	"github.com/upshift-io/upshift/services/aromonitor/rounds"
)

// ARO's rules.
const (
	ExpectedMasters = 3
	MinDiskSizeGB   = 128
	ImagePublisher  = "azureopenshift"
	ImageOffer      = "aro4"
	// RoleLabel holds a Machine's role; only "master" (exactly) is a master.
	RoleLabel = "machine.openshift.io/cluster-api-machine-role"
)

// ValidMessage is the condition's message when every Machine is valid.
const ValidMessage = "All machines valid"

// Problems lists what ARO's rules find wrong, in ARO's words: per Machine in
// the order given, then the counts. A Machine without a role label is named
// and neither checked nor counted; every other one counts, whatever its
// phase, being deleted included (as in ARO).
func Problems(machines []machinev1beta1.Machine, sets []machinev1beta1.MachineSet) []string {
	var out []string
	masters, workers := 0, 0
	for _, m := range machines {
		role, ok := m.Labels[RoleLabel]
		if !ok {
			out = append(out, fmt.Sprintf("machine %s: cluster-api-machine-role label not found", m.Name))
			continue
		}
		isMaster := role == "master"
		if isMaster {
			masters++
		} else {
			workers++
		}
		out = append(out, machineProblems(m, isMaster)...)
	}
	expectedWorkers := 0
	for _, s := range sets {
		if s.Spec.Replicas != nil {
			expectedWorkers += int(*s.Spec.Replicas)
		}
	}
	if masters != ExpectedMasters {
		out = append(out, fmt.Sprintf("invalid number of master machines %d, expected %d", masters, ExpectedMasters))
	}
	if workers != expectedWorkers {
		out = append(out, fmt.Sprintf("invalid number of worker machines %d, expected %d", workers, expectedWorkers))
	}
	return out
}

func machineProblems(m machinev1beta1.Machine, isMaster bool) []string {
	if m.Spec.ProviderSpec.Value == nil {
		return []string{fmt.Sprintf("machine %s: provider spec missing", m.Name)}
	}
	var spec machinev1beta1.AzureMachineProviderSpec
	if err := json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &spec); err != nil {
		return []string{fmt.Sprintf("machine %s: failed to read provider spec: %v", m.Name, err)}
	}
	var out []string
	if !isMaster && spec.OSDisk.DiskSizeGB < MinDiskSizeGB {
		out = append(out, fmt.Sprintf("machine %s: invalid disk size '%v'", m.Name, spec.OSDisk.DiskSizeGB))
	}
	if spec.Image.Publisher != ImagePublisher || spec.Image.Offer != ImageOffer {
		out = append(out, fmt.Sprintf("machine %s: invalid image '%v'", m.Name, spec.Image))
	}
	if spec.ManagedIdentity != "" {
		out = append(out, fmt.Sprintf("machine %s: invalid managedIdentity '%v'", m.Name, spec.ManagedIdentity))
	}
	return out
}

// Condition is what one round found: True with ARO's message when nothing is
// wrong, else False with each problem on its own line, as ARO writes it.
func Condition(problems []string) (passed bool, reason, message string) {
	if len(problems) == 0 {
		return true, arov1alpha1.ReasonCheckDone, ValidMessage
	}
	var b strings.Builder
	for _, p := range problems {
		b.WriteString(p)
		b.WriteString("\n")
	}
	return false, arov1alpha1.ReasonCheckFailed, b.String()
}

// ReasonSettling: failing since aro-monitor started checking, not yet for
// the failure threshold.
const ReasonSettling = rounds.ReasonSettling

// Round folds one round's problems into the check's record and MachineValid:
// the status moves with the hysteresis (counters in the record), and the
// message says what this round found, also while the status holds.
func Round(prev amv1alpha1.MonitorConfigStatus, problems []string, now time.Time, th hysteresis.Thresholds) amv1alpha1.MonitorConfigStatus {
	passed, reason, message := Condition(problems)
	r := rounds.Result{Passed: passed, Reason: reason, Message: message, Summary: strings.Join(problems, "; ")}
	cond, check := rounds.Fold(prev.Conditions, clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckMachines), arov1alpha1.MachineValid,
		r, rounds.Words{Passing: ValidMessage, Recovering: "every machine valid again"}, now, th)
	return amv1alpha1.MonitorConfigStatus{
		Conditions: []operatorv1.OperatorCondition{cond},
		Checks:     []amv1alpha1.CheckStatus{check},
	}
}
