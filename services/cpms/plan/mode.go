package plan

import (
	"fmt"
	"strconv"
	"strings"

	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mode is how the controller shares the control plane with OpenShift's own
// control-plane-machine-set operator. It is chosen from what the cluster
// runs, never both at once:
//
//   - Orchestrate: the operator runs (every OpenShift 4.12+ IPI cluster).
//     The payload stays untouched; the set uses the operator's OnDelete
//     strategy; this controller decides when and which outdated machine to
//     delete (after its pre-flight checks, one index at a time) and the
//     operator creates the replacement with its own code.
//   - Replace: no operator runs (older clusters, platforms or topologies it
//     does not serve). This controller creates and deletes machines itself.
type Mode string

const (
	ModeOrchestrate Mode = "Orchestrate"
	ModeReplace     Mode = "Replace"
)

// Modes lists every mode, for metrics that reset gauges.
var Modes = []Mode{ModeOrchestrate, ModeReplace}

// Conditions this controller adds to the set's status, in both modes. They
// are additional to the upstream operator's Available, Degraded and
// Progressing, which it keeps writing when it runs.
const (
	// ConditionMode is always True; its reason is the mode in effect. It is
	// also the record the next pass reads the mode from: a change of what
	// the cluster runs moves between modes only when no replacement is
	// under way.
	ConditionMode = "UpshiftMode"
	// ConditionUpshiftProgressing is this controller's own Progressing:
	// what it does next, or why it holds (a pre-flight check, a pause, the
	// other operator). Equal to Progressing when the whole status is ours.
	ConditionUpshiftProgressing = "UpshiftProgressing"
)

// OwnConditionTypes are the condition types only this controller writes.
var OwnConditionTypes = []string{ConditionMode, ConditionUpshiftProgressing}

// Reasons of a mode that holds every action.
const (
	// ReasonCPMSOperatorStarted: in Replace mode the operator came up while
	// an index was being replaced. Two controllers must never replace the
	// same machines, so this one stops at once and takes up Orchestrate
	// mode once no replacement is under way.
	ReasonCPMSOperatorStarted = "CPMSOperatorStarted"
	// ReasonCPMSOperatorStopped: in Orchestrate mode the operator went away
	// while it was creating a replacement. Nothing is done until that
	// replacement is finished or gone; then Replace mode takes over.
	ReasonCPMSOperatorStopped = "CPMSOperatorStopped"
	// ReasonCPMSOperatorRollingUpdate: the operator runs and the set's
	// strategy is RollingUpdate, under which the operator replaces machines
	// itself; this controller does not compete with it.
	ReasonCPMSOperatorRollingUpdate = "CPMSOperatorRollingUpdate"
	// ReasonAROCPMSDisabled: on Azure Red Hat OpenShift the ARO operator
	// deletes an Active set unless its operator flag aro.cpms.enabled is
	// "true". Acting on a set about to be deleted would leave a replacement
	// half done; recreating it would fight the ARO operator.
	ReasonAROCPMSDisabled = "AROCPMSDisabled"
	// ReasonEtcdHookMissing: in Orchestrate mode a machine is deleted before
	// its replacement exists, so it must carry the etcd operator's quorum
	// hook, which keeps it until the replacement's member votes.
	ReasonEtcdHookMissing = "EtcdHookMissing"
)

// CPMSOperator is what the cluster runs of OpenShift's own
// control-plane-machine-set operator.
type CPMSOperator struct {
	// Running: its Deployment exists, is not being deleted and asks for at
	// least one replica. A Deployment that asks for pods that are not up
	// yet (a crash loop, a node drain) runs: it may act at any moment.
	Running bool
	// Description names what was seen, for messages.
	Description string
}

// AROCPMSFlag is the ARO operator flag that lets an Active set live.
const AROCPMSFlag = "aro.cpms.enabled"

// AROCluster is what the cpms-controller reads of ARO's Cluster `cluster`.
type AROCluster struct {
	// CPMSEnabled: the operator flag AROCPMSFlag is "true" (any case), the
	// only value for which the ARO operator keeps an Active set.
	CPMSEnabled bool
}

// previousMode is the mode the last pass recorded in ConditionMode; empty on
// the first pass.
func previousMode(cpms *machinev1.ControlPlaneMachineSet) Mode {
	c := meta.FindStatusCondition(cpms.Status.Conditions, ConditionMode)
	if c == nil {
		return ""
	}
	for _, m := range Modes {
		if Mode(c.Reason) == m {
			return m
		}
	}
	return ""
}

// chooseMode is the mode of this pass and, when the mode holds every action,
// why. A change of what the cluster runs changes the mode only between
// replacements (inFlight is false): a replacement started by one controller
// is never finished by the other.
func chooseMode(prev Mode, running, inFlight bool) (Mode, string) {
	want := ModeReplace
	if running {
		want = ModeOrchestrate
	}
	switch {
	case prev == "" || prev == want:
		return want, ""
	case !inFlight:
		return want, ""
	case prev == ModeReplace:
		return ModeReplace, ReasonCPMSOperatorStarted
	default:
		return ModeOrchestrate, ReasonCPMSOperatorStopped
	}
}

// replacementUnderWay: an index holds a replacement beside the machine it
// replaces, or a machine that has not come up yet.
func (o *observation) replacementUnderWay() []string {
	var out []string
	for _, g := range o.groups {
		if len(g.machines) > 1 || g.pending() != nil {
			out = append(out, strconv.Itoa(g.index))
		}
	}
	return out
}

// decideMode sets the mode of this pass and what holds it.
func (p *planner) decideMode() {
	op := p.in.CPMSOperator
	inFlight := p.o.replacementUnderWay()
	p.mode, p.modeHold = chooseMode(previousMode(p.in.CPMS), op.Running, len(inFlight) > 0)
	indexes := strings.Join(inFlight, ", ")
	switch {
	case p.in.ARO != nil && !p.in.ARO.CPMSEnabled && p.active():
		p.modeHold = ReasonAROCPMSDisabled
		p.modeHoldMsg = fmt.Sprintf("the ARO operator deletes an Active ControlPlaneMachineSet while its operator flag %s is not \"true\" (clusters.aro.openshift.io/cluster spec.operatorflags): Upshift does not act on a set about to be deleted; set the flag to keep it", AROCPMSFlag)
	case p.modeHold == ReasonCPMSOperatorStarted:
		p.modeHoldMsg = fmt.Sprintf("the control-plane-machine-set operator runs (%s) while indexes %s are being replaced: Upshift stopped acting so that no machine is replaced by both, and orchestrates the operator once the replacement is over", op.Description, indexes)
	case p.modeHold == ReasonCPMSOperatorStopped:
		p.modeHoldMsg = fmt.Sprintf("the control-plane-machine-set operator stopped (%s) while indexes %s were being replaced: Upshift replaces machines itself once that replacement is over", op.Description, indexes)
	case p.mode == ModeOrchestrate && p.o.strategy == machinev1.RollingUpdate:
		p.modeHold = ReasonCPMSOperatorRollingUpdate
		p.modeHoldMsg = "strategy RollingUpdate: the control-plane-machine-set operator replaces outdated machines itself; set spec.strategy.type to OnDelete to have Upshift choose when and which machine is replaced"
	}
}

// modeCondition is ConditionMode for this pass.
func (p *planner) modeCondition() metav1.Condition {
	op := p.in.CPMSOperator
	msg := "no control-plane-machine-set operator runs: Upshift creates and deletes control-plane machines itself"
	if p.mode == ModeOrchestrate {
		msg = "the control-plane-machine-set operator runs: Upshift decides when and which outdated machine is deleted, and the operator creates its replacement"
	}
	if op.Description != "" {
		msg += " (" + op.Description + ")"
	}
	return metav1.Condition{Type: ConditionMode, Status: metav1.ConditionTrue, Reason: string(p.mode), Message: msg}
}
