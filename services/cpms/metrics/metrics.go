// Package metrics publishes the cpms-controller's view of the control plane
// as Prometheus metrics (upshift_cpms_*), set from the planner's output after
// every pass: the state of every index, the replica counters, the reason the
// rollout is held, when a deleting machine started waiting on the etcd
// operator's hook, how long replacements and those waits took, and the
// mutations performed.
//
// Labels are bounded: an index is one of the set's few indexes (replicas is 3
// or 5), states and reasons are the planner's constants. Machine names never
// become labels.
package metrics

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/services/cpms/plan"
)

// ActionKinds are the values of the kind label of upshift_cpms_actions_total.
var ActionKinds = []plan.ActionKind{plan.CreateMachine, plan.DeleteMachine, plan.Remediate, plan.Adopt}

// Conditions are the values of the condition label of upshift_cpms_condition.
var Conditions = []string{plan.ConditionAvailable, plan.ConditionDegraded, plan.ConditionProgressing, plan.ConditionError}

// BlockedReasons are the values of the reason label of upshift_cpms_blocked.
var BlockedReasons = []string{
	plan.ReasonInvalidSpec, plan.ReasonInvalidStrategy, plan.ReasonNoReadyMachines, plan.ReasonUnindexableMachines,
	plan.ReasonExcessIndexes, plan.ReasonUnmanagedNodes, plan.ReasonMachinesAlreadyOwned,
	plan.ReasonFailedReplacement, plan.ReasonReplacementTimedOut, plan.ReasonExcessUpdatedReplicas,
	plan.ReasonUnavailableReplicas, plan.ReasonNodesNotReady, plan.ReasonEtcdDegraded, plan.ReasonKubeAPIServerDegraded,
	plan.ReasonPaused, plan.ReasonWaitingForUserDeletion, plan.ReasonClusterUpdating, plan.ReasonMastersUpdating,
	plan.ReasonEtcdHookMissing, plan.ReasonCPMSOperatorStarted, plan.ReasonCPMSOperatorStopped, plan.ReasonCPMSOperatorRollingUpdate,
	plan.ReasonAROCPMSDisabled,
}

// Recorder turns successive planner outputs into metrics. It remembers the
// previous pass only to see transitions (a replacement finished, a hook
// released); after a restart the first transition of an index in flight is
// not timed, which loses one sample rather than inventing one.
type Recorder struct {
	indexState, replicas, blocked, condition, hookWaitStart, mode *prometheus.GaugeVec
	hookWait, replacementDuration                                 prometheus.Histogram
	actions                                                       *prometheus.CounterVec

	mu sync.Mutex
	// last state per index, and the deleting machine each index waited on.
	states  map[int]plan.IndexState
	waiting map[int]time.Time
	indexes map[int]bool
}

// New registers the metrics on reg (the manager's registry in the binary,
// a fresh one in a test) and returns the Recorder that sets them. The names
// are an interface: the chart's alerts and dashboard use them.
func New(reg prometheus.Registerer) *Recorder {
	r := &Recorder{
		indexState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_cpms_index_state",
			Help: "State set of each index of the ControlPlaneMachineSet: 1 for its current state (Stable, ReplacementRequested, WaitingForDeletion, ReplacementProvisioning, ReplacementReady, OldDeleting, Blocked), 0 for the others.",
		}, []string{"index", "state"}),
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_cpms_replicas",
			Help: "Control-plane machines by kind: desired (spec.replicas), current, ready, updated and unavailable, as in the ControlPlaneMachineSet status.",
		}, []string{"kind"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_cpms_blocked",
			Help: "1 for the reason the controller is not making progress although work exists (a Degraded reason, a failed pre-flight check, Paused, WaitingForUserDeletion), 0 for the others.",
		}, []string{"reason"}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_cpms_condition",
			Help: "1 when the ControlPlaneMachineSet's condition (Available, Degraded, Progressing, Error) is True, 0 otherwise.",
		}, []string{"condition"}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_cpms_mode",
			Help: "1 for the mode in effect: Orchestrate (OpenShift's control-plane-machine-set operator runs and creates the replacements of the machines this controller deletes) or Replace (this controller creates and deletes machines itself), 0 for the other.",
		}, []string{"mode"}),
		hookWaitStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_cpms_etcd_hook_wait_start_timestamp_seconds",
			Help: "Unix time an index's deleting machine started waiting on the etcd operator's EtcdQuorumOperator hook; absent while no machine of the index waits.",
		}, []string{"index"}),
		hookWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "upshift_cpms_etcd_hook_wait_duration_seconds",
			Help:    "Time from a control-plane machine's deletion until the etcd operator released its hook, as seen by the controller.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 s .. 2.3 h
		}),
		replacementDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "upshift_cpms_replacement_duration_seconds",
			Help:    "Time from the creation of an index's replacement machine until the index was Stable again (the old machine gone).",
			Buckets: prometheus.ExponentialBuckets(15, 2, 12), // 15 s .. 8.5 h
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "upshift_cpms_actions_total",
			Help: "Mutations performed, by kind (CreateMachine, DeleteMachine, Remediate, Adopt) and result (success, error).",
		}, []string{"kind", "result"}),

		states:  map[int]plan.IndexState{},
		waiting: map[int]time.Time{},
		indexes: map[int]bool{},
	}
	reg.MustRegister(r.indexState, r.replicas, r.blocked, r.condition, r.mode, r.hookWaitStart, r.hookWait, r.replacementDuration, r.actions)
	for _, k := range ActionKinds {
		for _, res := range []string{"success", "error"} {
			r.actions.WithLabelValues(string(k), res)
		}
	}
	return r
}

// Observe publishes one pass. created gives the creation time of the set's
// machines by name (for the replacement duration); desired is spec.replicas.
func (r *Recorder) Observe(now time.Time, out plan.Output, desired int32, created map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()

	seen := map[int]bool{}
	for _, ix := range out.Indexes {
		seen[ix.Index] = true
		label := strconv.Itoa(ix.Index)
		for _, s := range plan.IndexStates {
			r.indexState.WithLabelValues(label, string(s)).Set(boolValue(s == ix.State))
		}
		prev, known := r.states[ix.Index]
		if known && prev != plan.Stable && ix.State == plan.Stable && len(ix.Machines) == 1 {
			// The index's one machine is its replacement: time it from its
			// creation (machines that were there all along never leave Stable).
			if t, ok := created[ix.Machines[0]]; ok && !t.IsZero() {
				r.replacementDuration.Observe(now.Sub(t).Seconds())
			}
		}
		r.states[ix.Index] = ix.State

		since, wasWaiting := r.waiting[ix.Index]
		switch {
		case ix.DeletingSince != nil && ix.HeldByEtcdHook:
			r.waiting[ix.Index] = *ix.DeletingSince
			r.hookWaitStart.WithLabelValues(label).Set(float64(ix.DeletingSince.UnixNano()) / 1e9)
		case wasWaiting:
			// Released (or the machine is gone): the wait ended about now.
			r.hookWait.Observe(now.Sub(since).Seconds())
			delete(r.waiting, ix.Index)
			r.hookWaitStart.DeleteLabelValues(label)
		}
	}
	for i := range r.indexes {
		if !seen[i] {
			r.forget(i)
		}
	}
	r.indexes = seen

	st := out.Status
	for kind, v := range map[string]int32{"desired": desired, "current": st.Replicas, "ready": st.ReadyReplicas, "updated": st.UpdatedReplicas, "unavailable": st.UnavailableReplicas} {
		r.replicas.WithLabelValues(kind).Set(float64(v))
	}
	for _, t := range Conditions {
		c := meta.FindStatusCondition(st.Conditions, t)
		r.condition.WithLabelValues(t).Set(boolValue(c != nil && c.Status == metav1.ConditionTrue))
	}
	for _, m := range plan.Modes {
		r.mode.WithLabelValues(string(m)).Set(boolValue(m == out.Mode))
	}
	active := blockedReasons(st.Conditions)
	for _, reason := range BlockedReasons {
		r.blocked.WithLabelValues(reason).Set(boolValue(active[reason]))
	}
}

// blockedReasons are the reasons work is held: Degraded's reason, and
// Progressing's when it names a block (a failed pre-flight check while
// True, or a reason the controller does not act under while False).
func blockedReasons(conds []metav1.Condition) map[string]bool {
	out := map[string]bool{}
	if c := meta.FindStatusCondition(conds, plan.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		out[c.Reason] = true
	}
	if c := meta.FindStatusCondition(conds, plan.ConditionProgressing); c != nil {
		switch c.Reason {
		case plan.ReasonNeedsUpdateReplicas, plan.ReasonExcessReplicas, plan.ReasonAllReplicasUpdated, plan.ReasonOperatorDegraded, plan.ReasonInactive:
			// Moving, done, already reported through Degraded, or not asked
			// to act (an Inactive set only observes).
		default:
			out[c.Reason] = true
		}
	}
	return out
}

// ObserveAction counts a mutation.
func (r *Recorder) ObserveAction(kind plan.ActionKind, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	r.actions.WithLabelValues(string(kind), result).Inc()
}

// Forget removes every per-index series and the counters' current values,
// for when the ControlPlaneMachineSet is gone.
func (r *Recorder) Forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := make([]int, 0, len(r.indexes))
	for i := range r.indexes {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		r.forget(i)
	}
	r.indexes = map[int]bool{}
	r.replicas.Reset()
	r.blocked.Reset()
	r.condition.Reset()
	r.mode.Reset()
}

func (r *Recorder) forget(i int) {
	label := strconv.Itoa(i)
	r.indexState.DeletePartialMatch(prometheus.Labels{"index": label})
	r.hookWaitStart.DeleteLabelValues(label)
	delete(r.states, i)
	delete(r.waiting, i)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
