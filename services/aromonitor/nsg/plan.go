package nsg

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
)

// Reasons of the NSG check's conditions and Events.
const (
	ReasonCheckDisabled          = "CheckDisabled"
	ReasonARMUnavailable         = "ARMUnavailable"
	ReasonCredentialsUnavailable = "CredentialsUnavailable"
	ReasonConfigurationInvalid   = "ConfigurationInvalid"
	ReasonNotSuppressed          = "NotSuppressed"
	EventReassociated            = "NSGReassociated"
	EventReassociationFailed     = "NSGReassociationFailed"
	EventDrift                   = "NSGDrift"
	EventSuppressed              = "RemediationSuppressed"
)

// RetryInterval bounds the wait before the next pass after one that could
// not read or repair everything: ARM is throttling, or down.
const RetryInterval = time.Minute

// offMessage is the conditions' message while ARO's subnet flags switch the
// check off.
const offMessage = "the check is off: aro.azuresubnets.enabled is false"

// Outcome is one remediation outcome for the metrics.
type Outcome struct{ Action, Result string }

// Subnet is a cluster subnet to check.
type Subnet struct {
	ID, Name    string
	ExpectedNSG string
	// Related is the Machine or MachineSet the subnet was found on, or nil.
	// The events library folds Events that differ only in their note into
	// one series: without a related object per subnet, a second subnet's
	// re-association would only bump the first one's count.
	Related runtime.Object
}

// Pass plans one NSG check over every cluster subnet. The reconciler feeds
// it what it reads from Azure Resource Manager, subnet by subnet, carries
// out the re-associations it asks for, and writes the status it returns.
// It does no I/O.
type Pass struct {
	// Cluster is the ARO Cluster, what the Events are about.
	Cluster *arov1alpha1.Cluster
	// Prev is aro-monitor's status as read: the previous pass's records.
	Prev     amv1alpha1.MonitorConfigStatus
	Policy   Policy
	Interval time.Duration
	Now      time.Time

	subnets  []amv1alpha1.SubnetStatus
	read     map[string]bool
	pending  *pending
	errs     []string
	events   []events.Event
	outcomes []Outcome
}

// Result is a pass's end: the status to write, the Events to record once it
// is written, the outcomes for the metrics and when to run again.
type Result struct {
	Status   amv1alpha1.MonitorConfigStatus
	Events   []events.Event
	Outcomes []Outcome
	Requeue  time.Duration
	// Exact says the requeue must not be spread (jittered): a retry after
	// a missing credential is due within RetryInterval, not later.
	Exact bool
	// Errors are what ARM could not answer or refused, for the log.
	Errors []string
}

// Unavailable ends a pass that read no subnet: the check is off, the
// cluster's subnets could not be found, or no credential could be built.
// The subnets' records are carried over as they are: the status is
// applied, and a list left out would delete every record this manager owns
// (the budget spent, a running suppression), e.g. while the credentials
// Secret is recreated. retrySoon bounds the requeue by RetryInterval.
func (p *Pass) Unavailable(reason, message string, retrySoon bool) Result {
	prev := p.Prev
	sup := suppression(prev.Subnets, p.Now)
	if p.Policy.Mode == Off && sup.Status != operatorv1.ConditionTrue {
		sup = operatorv1.OperatorCondition{Type: amv1alpha1.RemediationSuppressed, Status: operatorv1.ConditionFalse,
			Reason: ReasonCheckDisabled, Message: offMessage}
	}
	check := clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckNSG)
	check.LastCheckTime = clusterstatus.Time(p.Now)
	res := Result{Requeue: p.Interval, Events: p.events, Outcomes: p.outcomes}
	if retrySoon {
		res.Requeue, res.Exact = min(p.Interval, RetryInterval), true
	}
	res.Status = p.status(check, prev.Subnets, clusterstatus.Unknown(amv1alpha1.NSGAssociated, reason, message), &sup)
	return res
}

// Off ends a pass with the check switched off. It is requeued all the
// same: a suppression recorded before the check was switched off must
// still be seen to end.
func (p *Pass) Off() Result { return p.Unavailable(ReasonCheckDisabled, offMessage, false) }

// ReadFailed records a subnet ARM did not answer for: it keeps its last
// record but is not judged on it.
func (p *Pass) ReadFailed(sn Subnet, err error) {
	st := p.previous(sn)
	p.subnets = append(p.subnets, st)
	p.errs = append(p.errs, fmt.Sprintf("reading subnet %s: %s", sn.ID, ARMReason(err)))
}

// Subnet decides about a subnet ARM answered for, attached to the group
// attached ("" for none). It returns whether to re-associate the expected
// group; if so, Reassociated must be told how that went.
func (p *Pass) Subnet(sn Subnet, attached string) (reassociate bool) {
	prev := findSubnet(p.Prev.Subnets, sn.ID)
	st := p.previous(sn)
	st.LastCheckTime = clusterstatus.Time(p.Now)
	st.AttachedNSG = attached
	d := Decide(Observation{Expected: sn.ExpectedNSG, Attached: attached}, toRecord(prev), p.Now, p.Policy)
	switch d.Action {
	case Report:
		// Once per drift, not once per pass.
		if !drifted(prev) {
			p.event(sn, events.Warning(nil, EventDrift, "Check", fmt.Sprintf("Subnet %s: %s", sn.Name, d.Message)))
		}
	case Suppress:
		p.event(sn, events.Warning(nil, EventSuppressed, "Reassociate", fmt.Sprintf("Subnet %s: %s", sn.Name, d.Message)))
		p.outcomes = append(p.outcomes, Outcome{"suppress", "done"})
	case Reassociate:
		p.pending = &pending{sn: sn, st: st, d: d}
		return true
	}
	p.subnets = append(p.subnets, fromRecord(st, d.Record))
	p.markRead(st.ID)
	return false
}

// pending is the subnet whose re-association is under way.
type pending struct {
	sn Subnet
	st amv1alpha1.SubnetStatus
	d  Decision
}

// Reassociated is how the re-association Subnet asked for went: err nil
// for done; reached says the request got an answer from ARM (it may have
// acted, so it counts against the budget). It returns whether the
// subnet's record must be stored at once (Progress), before anything else
// is done, so that neither a later failure in this pass nor a crash can
// forget it and spend the budget again.
func (p *Pass) Reassociated(reached bool, err error) (store bool) {
	w := p.pending
	p.pending = nil
	if err != nil {
		p.event(w.sn, events.Warning(nil, EventReassociationFailed, "Reassociate",
			fmt.Sprintf("Subnet %s: re-associating %s failed: %s", w.sn.Name, w.sn.ExpectedNSG, ARMReason(err))))
		p.outcomes = append(p.outcomes, Outcome{"reassociate", "error"})
		p.errs = append(p.errs, fmt.Sprintf("re-associating subnet %s: %s", w.sn.ID, ARMReason(err)))
		if !reached {
			// Nothing reached ARM (the client's own rate limit, a
			// connection refused): nothing to count.
			p.subnets = append(p.subnets, w.st)
			return false
		}
		// ARM refused or failed it: the attempt counts against the
		// budget, or a lasting 403 or 409 would be retried every pass.
		w.d.Record.LastFailed = true
		p.subnets = append(p.subnets, fromRecord(w.st, w.d.Record))
		return true
	}
	w.st.AttachedNSG = w.sn.ExpectedNSG
	p.event(w.sn, events.Normal(nil, EventReassociated, "Reassociate", fmt.Sprintf("Subnet %s: %s", w.sn.Name, w.d.Message)))
	p.outcomes = append(p.outcomes, Outcome{"reassociate", "success"})
	p.subnets = append(p.subnets, fromRecord(w.st, w.d.Record))
	p.markRead(w.st.ID)
	return true
}

// Progress is the status to store mid-pass: the subnets' records done so
// far, the ones of todo (still to do) as they were. The conditions and the
// check's times stay as they were until the pass ends.
func (p *Pass) Progress(todo []Subnet) amv1alpha1.MonitorConfigStatus {
	prev := p.Prev
	list := append([]amv1alpha1.SubnetStatus(nil), p.subnets...)
	for _, sn := range todo {
		if rec := findSubnet(prev.Subnets, sn.ID); rec.ID != "" {
			list = append(list, rec)
		}
	}
	var associated operatorv1.OperatorCondition
	if c := clusterstatus.ConditionByType(prev.Conditions, amv1alpha1.NSGAssociated); c != nil {
		associated = *c
	}
	return p.status(clusterstatus.FindCheck(prev.Checks, amv1alpha1.CheckNSG), list, associated,
		clusterstatus.ConditionByType(prev.Conditions, amv1alpha1.RemediationSuppressed))
}

// StoreFailed ends a pass whose mid-pass record could not be stored. The
// next pass is after the interval, not the workqueue's back-off: a retry
// within seconds would be free to act again without the record.
func (p *Pass) StoreFailed() Result {
	return Result{Events: p.events, Outcomes: p.outcomes, Requeue: p.Interval}
}

// Problems records what kept subnets from being found (a Machine naming a
// subnet that cannot be parsed).
func (p *Pass) Problems(errs []string) { p.errs = append(p.errs, errs...) }

// Done ends a pass that went over every subnet: NSGAssociated and
// RemediationSuppressed from the subnets' records.
func (p *Pass) Done() Result {
	check := clusterstatus.FindCheck(p.Prev.Checks, amv1alpha1.CheckNSG)
	check.LastCheckTime = clusterstatus.Time(p.Now)
	var drifts []string
	for _, sn := range p.subnets {
		if p.read[sn.ID] && !strings.EqualFold(sn.AttachedNSG, sn.ExpectedNSG) {
			drifts = append(drifts, fmt.Sprintf("%s is associated with %s", sn.ID, orNone(sn.AttachedNSG)))
		}
	}
	sort.Strings(drifts)
	var associated operatorv1.OperatorCondition
	switch {
	case len(drifts) > 0:
		associated = operatorv1.OperatorCondition{Type: amv1alpha1.NSGAssociated, Status: operatorv1.ConditionFalse,
			Reason: arov1alpha1.ReasonCheckFailed, Message: strings.Join(drifts, "\n")}
	case len(p.errs) > 0:
		associated = clusterstatus.Unknown(amv1alpha1.NSGAssociated, ReasonARMUnavailable, strings.Join(p.errs, "\n"))
	default:
		associated = operatorv1.OperatorCondition{Type: amv1alpha1.NSGAssociated, Status: operatorv1.ConditionTrue,
			Reason: arov1alpha1.ReasonCheckDone, Message: fmt.Sprintf("All %d cluster subnets are associated with the cluster's network security group", len(p.subnets))}
		check.LastSuccessTime = clusterstatus.Time(p.Now)
	}
	sup := suppression(p.subnets, p.Now)
	res := Result{Events: p.events, Outcomes: p.outcomes, Requeue: p.Interval, Errors: p.errs}
	if len(p.errs) > 0 {
		// Retry sooner than the interval, but bounded: ARM is the one
		// throttling us, or it is down. A failed re-association is in its
		// record already, so the budget bounds the retries.
		res.Requeue = min(p.Interval, RetryInterval)
	}
	res.Status = p.status(check, p.subnets, associated, &sup)
	return res
}

// status is the NSG check's part of aro-monitor's record.
func (p *Pass) status(check amv1alpha1.CheckStatus, list []amv1alpha1.SubnetStatus, associated operatorv1.OperatorCondition, suppressed *operatorv1.OperatorCondition) amv1alpha1.MonitorConfigStatus {
	prev := p.Prev.Conditions
	st := amv1alpha1.MonitorConfigStatus{Checks: []amv1alpha1.CheckStatus{check}, Subnets: list}
	// Empty only mid-pass before the first pass ever ended.
	if associated.Type != "" {
		st.Conditions = append(st.Conditions, clusterstatus.Condition(prev, associated, p.Now))
	}
	if suppressed != nil {
		st.Conditions = append(st.Conditions, clusterstatus.Condition(prev, *suppressed, p.Now))
	}
	return st
}

// previous is the subnet's last record, under its canonical ID.
func (p *Pass) previous(sn Subnet) amv1alpha1.SubnetStatus {
	st := findSubnet(p.Prev.Subnets, sn.ID)
	st.ID = strings.ToLower(sn.ID)
	st.ExpectedNSG = sn.ExpectedNSG
	return st
}

// event puts e on the Cluster, by name only: without the resourceVersion
// every status write changes, a repeat folds into the Event of an earlier
// pass as its series instead of showing as a new one.
func (p *Pass) event(sn Subnet, e events.Event) {
	e.Regarding = &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: p.Cluster.Name}}
	e.Related = sn.Related
	p.events = append(p.events, e)
}

func (p *Pass) markRead(id string) {
	if p.read == nil {
		p.read = map[string]bool{}
	}
	p.read[id] = true
}

// suppression is RemediationSuppressed as the subnets' records say at now.
func suppression(list []amv1alpha1.SubnetStatus, now time.Time) operatorv1.OperatorCondition {
	var suppressed []string
	reasons := map[string]bool{}
	for _, sn := range list {
		if sn.SuppressedUntil != nil && now.Before(sn.SuppressedUntil.Time) {
			suppressed = append(suppressed, fmt.Sprintf("%s until %s: %s", sn.ID, sn.SuppressedUntil.UTC().Format(time.RFC3339), sn.SuppressedMessage))
			reasons[sn.SuppressedReason] = true
		}
	}
	if len(suppressed) == 0 {
		return operatorv1.OperatorCondition{Type: amv1alpha1.RemediationSuppressed, Status: operatorv1.ConditionFalse,
			Reason: ReasonNotSuppressed, Message: "Remediation is running for every subnet"}
	}
	sort.Strings(suppressed)
	// A tug-of-war is the one to act on: it names another actor.
	reason := BudgetExhausted
	if reasons[TugOfWar] {
		reason = TugOfWar
	}
	return operatorv1.OperatorCondition{Type: amv1alpha1.RemediationSuppressed, Status: operatorv1.ConditionTrue,
		Reason: reason, Message: strings.Join(suppressed, "\n")}
}

// ARMReason is an ARM error in one line: the status and ARM's error code.
func ARMReason(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
		if re.StatusCode == http.StatusNotFound {
			msg += " (the subnet does not exist)"
		}
		return msg
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}

func findSubnet(list []amv1alpha1.SubnetStatus, id string) amv1alpha1.SubnetStatus {
	for _, s := range list {
		if strings.EqualFold(s.ID, id) {
			return s
		}
	}
	return amv1alpha1.SubnetStatus{}
}

func drifted(s amv1alpha1.SubnetStatus) bool {
	return s.LastCheckTime != nil && !strings.EqualFold(s.AttachedNSG, s.ExpectedNSG)
}

func toRecord(s amv1alpha1.SubnetStatus) Record {
	rec := Record{SuppressedKind: s.SuppressedReason, SuppressedWhy: s.SuppressedMessage, LastFailed: s.LastRemediationFailed}
	for _, t := range s.Remediations {
		rec.Remediations = append(rec.Remediations, t.Time)
	}
	if s.SuppressedUntil != nil {
		rec.SuppressedUntil = &s.SuppressedUntil.Time
	}
	return rec
}

func fromRecord(s amv1alpha1.SubnetStatus, rec Record) amv1alpha1.SubnetStatus {
	s.Remediations = nil
	for _, t := range rec.Remediations {
		s.Remediations = append(s.Remediations, metav1.NewTime(t))
	}
	s.SuppressedUntil, s.SuppressedReason, s.SuppressedMessage = nil, rec.SuppressedKind, rec.SuppressedWhy
	s.LastRemediationFailed = rec.LastFailed
	if rec.SuppressedUntil != nil {
		s.SuppressedUntil = clusterstatus.Time(*rec.SuppressedUntil)
	}
	return s
}
