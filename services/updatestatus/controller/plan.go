package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/requeue"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// What a recomputation does is decided here, from plain values: what is
// published, what the assessment wants published, and the time. The
// reconciler executes the plan and decides nothing.
//
// # Events
//
// Events tell how the published status moved: they are derived from the
// published and the desired UpgradeStatus status, and recorded (libs/events)
// right after a status write that includes that move succeeds
// (statuspublisher.go), whatever the node writes do: the write first, then
// the Events, as docs/architecture.md orders them. A failed status write
// records nothing and keeps its Events for the write that follows; a failed
// node write cannot lose them. What is lost is what a crash interrupts: the
// Events of a status handed over and not yet written (the next leader
// derives them again from what is published), or of one written and not yet
// recorded (never repeated).

// plan is everything one recomputation writes.
type plan struct {
	// status is the UpgradeStatus status to apply; nil when it is unchanged.
	status *updatev1alpha1.UpgradeStatusStatus
	// events are recorded once status is written.
	events []events.Event
	// nodes are the NodeProgressInsight writes, in no particular order.
	nodes []nodeWrite
	// requeueAfter is when to recompute with no object change: the next
	// time threshold of the assessment or heartbeat refresh; 0 for never.
	requeueAfter time.Duration
	// prototype is the value to set key PrototypeKey of the prototype
	// ConfigMap to; nil to leave it. prototypeErr says why that value could
	// not be made.
	prototype    *string
	prototypeErr error
}

// prototypeState is the prototype ConfigMap as read: value is its key
// PrototypeKey ("" when absent).
type prototypeState struct {
	value string
}

// planInput is what a plan is decided from.
type planInput struct {
	now time.Time
	// object is the UpgradeStatus the plan is made for, the object its
	// Events are about; published is its status as last written.
	object    runtime.Object
	published updatev1alpha1.UpgradeStatusStatus
	// desired is the assessment's status, without the controller's conditions.
	desired updatev1alpha1.UpgradeStatusStatus
	// assessErr says why there is no assessment; desired is ignored then.
	assessErr error
	// nextCheck is the assessment's next time threshold (zero: none).
	nextCheck time.Time
	// alertsConfigured says whether alerts are read at all; alerts is the
	// AlertsAvailable condition of the last read (nil: not read yet).
	alertsConfigured bool
	alerts           *metav1.Condition
	// prototype is the prototype ConfigMap; nil when it does not exist or
	// is not kept.
	prototype *prototypeState

	// publishedNodes are the published insights by name (read, never
	// written).
	publishedNodes map[string]*updatev1alpha1.NodeProgressInsight
	desiredNodes   []updatev1alpha1.NodeStatusInsight
	// owner is the owner reference of the Node of that name, false when the
	// Node does not exist. A lookup, not a map: built per recomputation, a
	// map of every Node was a twentieth of what the controller allocated at
	// 5,000 nodes.
	owner func(node string) (metav1.OwnerReference, bool)
}

// decide plans one recomputation.
func decide(in planInput) plan {
	var p plan
	if in.assessErr != nil {
		// Nothing to publish but the reason: keep the last insights, say why
		// they are stale, and wait for the objects to change.
		desired := in.published.DeepCopy()
		meta.SetStatusCondition(&desired.Conditions, statusCondition(in.assessErr, in.now))
		setAlertsCondition(&desired.Conditions, in.alertsConfigured, in.alerts)
		if !equality.Semantic.DeepEqual(&in.published, desired) {
			p.status = desired
		}
		return p
	}

	desired := in.desired.DeepCopy()
	// The report's node tables go with the status they belong to, so that a
	// report is one read of it.
	desired.ReportedNodes = render.Reported(*desired, in.desiredNodes)
	desired.Conditions = append([]metav1.Condition(nil), in.published.Conditions...)
	meta.SetStatusCondition(&desired.Conditions, statusCondition(nil, in.now))
	setAlertsCondition(&desired.Conditions, in.alertsConfigured, in.alerts)
	beat, nextBeat := heartbeat(meta.FindStatusCondition(in.published.Conditions, updatev1alpha1.ConditionHeartbeat),
		isUpdating(desired), in.now)
	if beat != nil {
		setCondition(&desired.Conditions, *beat)
	}
	if !equality.Semantic.DeepEqual(&in.published, desired) {
		p.status = desired
		p.events = transitionEvents(in.object, &in.published, desired)
	}
	p.nodes = planNodes(in.publishedNodes, in.desiredNodes, in.owner)
	p.prototype, p.prototypeErr = planPrototype(in.prototype, in.desired.ControlPlane)
	var next requeue.Soonest
	next.At(in.nextCheck)
	next.At(nextBeat)
	p.requeueAfter = next.After(in.now)
	return p
}

// planPrototype is the value to give key PrototypeKey of the prototype
// ConfigMap, cur, for the control plane insight cp: the ClusterVersion
// insight as YAML, with the API's JSON field names (sigs.k8s.io/yaml goes
// through JSON; the old prototype's yaml.v3 names were a bug). Nil when the
// ConfigMap does not exist (it is never created), there is no ClusterVersion
// insight, or the key already holds it.
func planPrototype(cur *prototypeState, cp *updatev1alpha1.ControlPlane) (*string, error) {
	if cur == nil || cp == nil || cp.ClusterVersion == nil {
		return nil, nil
	}
	value, err := yaml.Marshal(cp.ClusterVersion)
	if err != nil || cur.value == string(value) {
		return nil, err
	}
	v := string(value)
	return &v, nil
}

// setAlertsCondition puts the AlertsAvailable condition in conds, or takes it
// out when alerts are not configured (a previous configuration's condition
// must not linger).
func setAlertsCondition(conds *[]metav1.Condition, configured bool, c *metav1.Condition) {
	if !configured {
		meta.RemoveStatusCondition(conds, updatev1alpha1.ConditionAlertsAvailable)
		return
	}
	if c != nil {
		meta.SetStatusCondition(conds, *c)
	}
}

// Heartbeat: while the cluster updates, the UpgradeStatus carries a Heartbeat
// condition whose lastTransitionTime is refreshed at most once a minute, so a
// reader can tell a status that is current from one nobody updates any more.
// When the update ends it turns False (reason Idle) once and then stays
// untouched: an idle cluster costs no writes.
const (
	heartbeatInterval = time.Minute
	reasonUpdating    = "Updating"
	reasonIdle        = "Idle"
)

// heartbeat is the Heartbeat condition to publish (nil: leave it as it is)
// and when it next needs a refresh (zero: never).
func heartbeat(published *metav1.Condition, updating bool, now time.Time) (*metav1.Condition, time.Time) {
	if !updating {
		if published == nil || published.Status != metav1.ConditionTrue {
			return nil, time.Time{}
		}
		return &metav1.Condition{Type: updatev1alpha1.ConditionHeartbeat, Status: metav1.ConditionFalse, Reason: reasonIdle,
			Message:            "The cluster is not updating; the status is refreshed when something changes.",
			LastTransitionTime: metav1.NewTime(now)}, time.Time{}
	}
	if published != nil && published.Status == metav1.ConditionTrue {
		if due := published.LastTransitionTime.Add(heartbeatInterval); now.Before(due) {
			return nil, due
		}
	}
	return &metav1.Condition{Type: updatev1alpha1.ConditionHeartbeat, Status: metav1.ConditionTrue, Reason: reasonUpdating,
		Message:            "The cluster is updating; this condition is refreshed at most once a minute.",
		LastTransitionTime: metav1.NewTime(now)}, now.Add(heartbeatInterval)
}

// setCondition replaces or adds c as is: unlike meta.SetStatusCondition it
// moves lastTransitionTime even when the status stays, which is the point of
// the heartbeat.
func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			(*conds)[i] = c
			return
		}
	}
	*conds = append(*conds, c)
}

// statusCondition is the controller's own condition for an assessment outcome.
func statusCondition(assessErr error, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type: updatev1alpha1.ConditionStatusAvailable, Status: metav1.ConditionTrue,
		Reason: updatev1alpha1.ReasonAsExpected, Message: "The update status is current.",
		LastTransitionTime: metav1.NewTime(now),
	}
	if assessErr != nil {
		c.Status, c.Reason = metav1.ConditionFalse, updatev1alpha1.ReasonCannotAssess
		c.Message = "Cannot assess the update status: " + assessErr.Error()
	}
	return c
}

// isUpdating is true while the control plane or any worker pool is updating.
func isUpdating(s *updatev1alpha1.UpgradeStatusStatus) bool {
	if s.ControlPlane != nil && meta.IsStatusConditionTrue(s.ControlPlane.Conditions, updatev1alpha1.ConditionUpdating) {
		return true
	}
	for _, p := range s.WorkerPools {
		if meta.IsStatusConditionTrue(p.Conditions, updatev1alpha1.ConditionUpdating) {
			return true
		}
	}
	return false
}

// nodeWrite is what to do to one NodeProgressInsight: apply it whole, or
// delete it.
type nodeWrite struct {
	name string
	// owner, labels and status are the insight as the controller wants it.
	// One server-side apply sets all three, creating the insight when it is
	// missing: the insight has no status subresource, so a change of phase
	// is one write, not a status write and a label patch.
	owner  metav1.OwnerReference
	labels map[string]string
	status *updatev1alpha1.NodeStatusInsight
	// remove: the node has no insight any more.
	remove bool
}

// planNodes compares the published NodeProgressInsights with the desired
// ones: it applies those that are missing (only for Nodes that still exist)
// or whose status or controller labels changed, and deletes those of nodes
// without an insight.
func planNodes(published map[string]*updatev1alpha1.NodeProgressInsight, desired []updatev1alpha1.NodeStatusInsight,
	ownerOf func(node string) (metav1.OwnerReference, bool)) []nodeWrite {
	var out []nodeWrite
	keep := make(map[string]bool, len(desired))
	for i := range desired {
		in := &desired[i]
		keep[in.Name] = true
		pub, exists := published[in.Name]
		// Every node is compared on every recomputation: the comparisons
		// neither reflect nor allocate (at 5,000 nodes, reflection's
		// DeepEqual and a label map per node were a quarter of the
		// controller's CPU and much of its garbage).
		if exists && insightsEqual(&pub.Status, in) && ownLabelsEqual(pub.Labels, in) {
			continue
		}
		// An apply states the owner too; without the Node there is none to
		// state, and the Node's garbage collection removes its insight.
		owner, ok := ownerOf(in.Name)
		if !ok {
			continue
		}
		out = append(out, nodeWrite{name: in.Name, owner: owner, labels: updatev1alpha1.NodeInsightLabels(in), status: in})
	}
	for name := range published {
		if !keep[name] {
			out = append(out, nodeWrite{name: name, remove: true})
		}
	}
	return out
}

// ownLabelsEqual says whether have carries exactly the controller's labels
// of the insight in; labels others set are not compared.
func ownLabelsEqual(have map[string]string, in *updatev1alpha1.NodeStatusInsight) bool {
	for _, k := range updatev1alpha1.NodeInsightLabelKeys {
		hv, hok := have[k]
		wv, wok := updatev1alpha1.NodeInsightLabel(in, k)
		if hok != wok || hv != wv {
			return false
		}
	}
	return true
}

// insightsEqual is equality.Semantic.DeepEqual for node insights, written
// out field by field: times compare as instants, a nil and an empty list are
// equal. TestInsightsEqualIsSemanticDeepEqual changes every field in turn,
// so a field added to the type and not compared here fails it.
func insightsEqual(a, b *updatev1alpha1.NodeStatusInsight) bool {
	if a.Name != b.Name || a.Resource != b.Resource || a.PoolResource != b.PoolResource ||
		a.ScopeType != b.ScopeType || a.Version != b.Version || a.Message != b.Message {
		return false
	}
	if (a.EstimatedToComplete == nil) != (b.EstimatedToComplete == nil) ||
		a.EstimatedToComplete != nil && a.EstimatedToComplete.Duration != b.EstimatedToComplete.Duration {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		ca, cb := &a.Conditions[i], &b.Conditions[i]
		if ca.Type != cb.Type || ca.Status != cb.Status || ca.ObservedGeneration != cb.ObservedGeneration ||
			!ca.LastTransitionTime.Equal(&cb.LastTransitionTime) || ca.Reason != cb.Reason || ca.Message != cb.Message {
			return false
		}
	}
	return true
}
