// Package plan is node-gate's pure core: from a MutexRunConfig and what the
// cluster looks like (pools, nodes with the machine-config operator's
// annotations, hook Jobs, ClusterVersion, alerts, the time), it computes the
// run's next status, the Events to record and the actions that move the run
// on. It does no I/O; the reconciler reads the inputs from its caches, writes
// the status first (so originals are recorded before anything changes), then
// executes the actions and records the events.
//
// The gate: as soon as an update is pending or requested, every gated
// (source) pool is paused and every one of its nodes labelled into a gate
// pool that node-gate keeps paused (the hold pool), so the machine-config
// operator (MCO) moves none of them. Once the pools render the update, the
// source pool runs again, unpaused, with the run's limit as its
// maxUnavailable: it holds only the nodes node-gate released (and those
// already done), and releasing a node is removing its label. The MCO updates
// it in its own pool, so nothing moves again when the run ends.
//
// With a canary pool (the mutex operator's model) the source pools stay
// paused instead, and a node is released by labelling it into the canary,
// which the MCO updates; its label is removed when its post-update hooks
// are done, and it returns to its source pool at the end.
//
// One file per concern, in the order a pass runs them: planner.go (Plan and
// the pass's flow), validate.go (refusing to start), round.go (rounds and
// node records), gatepools.go (pausing, gate pools, stray labels),
// holdpool.go (holding nodes in the gate pool, running the source pools), hold.go
// (how long a cluster update holds the workers; re-renders), gates.go (what
// holds new starts), lookahead.go (hooks ahead of a node's turn), advance.go
// (moving nodes through their phases within maxUnavailable), hookruns.go and
// hooks.go (running hooks; building their Jobs), restore.go (giving back what
// a run changed), status.go (summary and conditions), compact.go (the
// status's size), objects.go (MutexRule and MutexTarget status), pools.go
// (pool membership as the MCO decides it).
package plan

import (
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/gating"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// Labels and names node-gate puts on the objects it changes.
const (
	// HoldLabel on a node keeps it in the (paused) gate pool of the source
	// pool named by its value until node-gate releases it, by removing the
	// label, back into its source pool, which the MCO updates. (Defined in
	// libs/gating, with ReleasedAnnotation: other components read both.)
	HoldLabel = gating.HoldLabel
	// ReleaseLabel on a node moves it into the canary pool of a run that
	// names one (the mutex operator's model); its value is the source pool.
	ReleaseLabel = "nodegate.upshift.io/released-from"
	// ReleasedAnnotation on a node says which round released it, for which
	// target: "<runID>/<rendered config>" (gating.ReleaseMark), set by the
	// same patch that removes its hold label. It is how a pass knows its
	// own release when the status write of the pass that made it was lost
	// (a restart in between): the record still says the node waits, the
	// node is out of the gate pool, and the MCO may have updated it
	// already. Someone else's removal of the label leaves no such mark. It
	// stays on the node until the next release overwrites it, or a hold
	// (LabelNode with HoldLabel) removes it in the same patch: a node
	// released ahead of its turn and taken back must not read as released. The
	// update-status-controller reads it too, so as not to report a released
	// node as waiting while the run's status is behind.
	ReleasedAnnotation = gating.ReleasedAnnotation
	// GatePoolLabel marks a gate pool node-gate created, with the source pool's name.
	GatePoolLabel = gating.GatePoolLabel
	// RunLabel on hook Jobs holds RunKey of the run that created them.
	RunLabel = "nodegate.upshift.io/run"
	// NodeLabel on hook Jobs holds a hash of the node's name (names may be
	// longer than a label value).
	NodeLabel = "nodegate.upshift.io/node"
	// HookLabel on hook Jobs holds the hook's name.
	HookLabel = "nodegate.upshift.io/hook"
	// GatePoolSuffix makes a source pool's gate pool name.
	GatePoolSuffix = "-gate"
	// MasterPool and WorkerPool are the MCO's built-in pools.
	MasterPool = "master"
	WorkerPool = "worker"
	// DefaultJobTTL is ttlSecondsAfterFinished for hook Jobs that set none.
	DefaultJobTTL int32 = 24 * 3600
	// MinJobTTL is the least ttlSecondsAfterFinished a hook Job gets: the
	// planner reads a finished Job's result from its cache, and a Job
	// removed before that read looks like one not yet cached, which the
	// planner creates again (the hook would run twice).
	MinJobTTL int32 = 3600
)

// Environment variables appended to every hook container. NODE_NAME and
// MUTEX_RULE (the rule's name) are the two the mutex operator set; hooks
// written for it read them.
const (
	EnvNodeName      = "NODE_NAME"
	EnvMutexRule     = "MUTEX_RULE"
	EnvPool          = "POOL"
	EnvTargetConfig  = "TARGET_CONFIG"
	EnvTargetVersion = "TARGET_VERSION"
	EnvRunID         = "RUN_ID"
)

// Input is everything a decision depends on.
type Input struct {
	Now time.Time
	// Run is the MutexRunConfig with its current status. A deletion
	// timestamp means: restore everything, then Result.Finalized.
	Run *nodegatev1alpha1.MutexRunConfig
	// Rules are the run's MutexRules that exist, any order; Targets likewise.
	Rules   []nodegatev1alpha1.MutexRule
	Targets []nodegatev1alpha1.MutexTarget
	// Pools and Nodes are every MachineConfigPool and Node. Nodes are
	// pointers into the informer's cache, shared with later passes, never
	// written: copying 500 Nodes into a list on every pass was a tenth of
	// node-gate's CPU in a rollout.
	Pools []mcfgv1.MachineConfigPool
	Nodes []*corev1.Node
	// Jobs are the run's hook Jobs (labelled RunLabel), pointers into the
	// informer's cache like Nodes, never written, and those node-gate
	// created that the cache does not show yet (for up to 30 s).
	Jobs []*batchv1.Job
	// ClusterVersion is the cluster's "version" object; nil if absent.
	ClusterVersion *configv1.ClusterVersion
	// RenderedReleases maps the rendered MachineConfigs the pools target to
	// the release each was rendered for (its release-image-version
	// annotation); a target missing here belongs to no known release.
	RenderedReleases map[string]string
	// Alerts are the active alerts, or AlertsErr why they could not be read.
	// Both are ignored unless the run has a health gate.
	Alerts    []alerts.Alert
	AlertsErr error
	// MaintenanceSilences are the IDs of the upgrade-scheduler's silences
	// (libs/alerts): an alert suppressed by those alone still closes the
	// health gate, since an upgrade under way is no reason to release nodes
	// into an unhealthy cluster. Read only when an alert is suppressed.
	MaintenanceSilences map[string]bool
	// OtherRuns are the other MutexRunConfigs' claims on pools.
	OtherRuns []RunClaim
	// JobPlaces says where hook Jobs may run; a rule naming another namespace
	// blocks the run.
	JobPlaces JobPlaces
	// GatedPools are the source pools node-gate may gate (its
	// --gated-pools: the chart lets it delete only their gate pools, so a
	// run on another pool could never be deleted); a target naming another
	// blocks the run. Empty: any.
	GatedPools []string
}

// JobPlaces says where a rule's hook Jobs may run: only in a namespace
// node-gate may create Jobs in, and only in the rule's own namespace or one
// an administrator lists for the rules of that namespace. A rule is not a
// way to start pods somewhere its author's namespace was not given.
type JobPlaces struct {
	// Namespaces are where node-gate may create hook Jobs (its
	// --job-namespaces, where the chart grants Jobs). Empty: any.
	Namespaces []string
	// ForRuleNamespace lists, by the namespace of a rule, the other
	// namespaces its Jobs may run in (--rule-job-namespaces, the chart's
	// ruleJobNamespaces). A rule's own namespace needs no entry.
	ForRuleNamespace map[string][]string
	// Own is node-gate's own ServiceAccount (--service-account in
	// --namespace; empty Name: not known). No hook Job runs as it: a pod
	// running as node-gate would hand its author node-gate's token.
	Own types.NamespacedName
}

// RunClaim is another run and the pools it targets.
type RunClaim struct {
	// Name is namespace/name.
	Name    string
	Created time.Time
	Pools   []string
}

// ActionKind says what an Action does.
type ActionKind string

const (
	// SetPoolPaused sets Pool's spec.paused to Paused.
	SetPoolPaused ActionKind = "SetPoolPaused"
	// SetPoolSelector sets Pool's spec.nodeSelector to NodeSelector.
	SetPoolSelector ActionKind = "SetPoolSelector"
	// SetPoolMaxUnavailable sets Pool's spec.maxUnavailable to MaxUnavailable.
	SetPoolMaxUnavailable ActionKind = "SetPoolMaxUnavailable"
	// CreatePool creates NewPool (a gate pool).
	CreatePool ActionKind = "CreatePool"
	// DeletePool deletes the gate pool Pool.
	DeletePool ActionKind = "DeletePool"
	// LabelNode sets Label=Pool on Node.
	LabelNode ActionKind = "LabelNode"
	// UnlabelNode removes Label from Node.
	UnlabelNode ActionKind = "UnlabelNode"
	// CreateJob creates Job (already-exists means done: names are deterministic).
	CreateJob ActionKind = "CreateJob"
)

// Action is one change to the cluster.
type Action struct {
	Kind   ActionKind
	Pool   string
	Node   string
	Paused bool
	// Label is the label LabelNode sets and UnlabelNode removes: HoldLabel
	// or ReleaseLabel. LabelNode with HoldLabel also removes the node's
	// ReleasedAnnotation.
	Label string
	// ReleaseMark, on the UnlabelNode that releases a node from its gate
	// pool, is the ReleasedAnnotation value the same patch sets.
	ReleaseMark  string
	NodeSelector *metav1.LabelSelector
	// MaxUnavailable is for SetPoolMaxUnavailable.
	MaxUnavailable *intstr.IntOrString
	NewPool        *mcfgv1.MachineConfigPool
	Job            *batchv1.Job
}

// ObjectKind says which object an Event is about.
type ObjectKind string

const (
	OnRun  ObjectKind = "MutexRunConfig"
	OnNode ObjectKind = "Node"
	OnPool ObjectKind = "MachineConfigPool"
)

// Passage is a node that passed the gate: Note says its hooks (Job,
// attempts, duration) and how long it waited for its release, for the MCO
// and in all.
type Passage struct {
	Node string
	Note string
}

// Result is the decision.
type Result struct {
	Status  nodegatev1alpha1.MutexRunConfigStatus
	Actions []Action
	// Events are about the run, or about a node or pool with the run as
	// related object; record them after the actions.
	Events []events.Event
	// Passages are the nodes that passed the gate in this pass, each with
	// its hooks and times, for the log. Their records are compacted, and
	// an Event per node would be thousands of writes to the API server the
	// update shares: the run's Events are a few per run and per failure.
	Passages []Passage
	// RequeueAfter, when not zero, is when time alone changes the decision
	// (a window opening, a hook timing out).
	RequeueAfter time.Duration
	// Finalized: the run is being deleted and everything is restored.
	Finalized bool
	// ActionsFirst: the actions may be performed before the status is
	// written, taking the status write off the path from a decision to the
	// write the MCO or the Job controller acts on. It is set when the pass
	// changes no pool and records no original: its actions are hook Jobs
	// (deterministic names: a pass that decides again, its status lost,
	// meets the same Job) and hold labels (a node this pass released
	// carries ReleasedAnnotation, so the next pass continues its record
	// from the release even after the MCO updated it; one held or
	// unlabelled for another reason is decided again the same way).
	ActionsFirst bool
}

// NodeAnnotations are the only Node annotations the planner reads; a
// reconciler's cache may drop the others.
var NodeAnnotations = []string{
	mcostate.CurrentConfig, mcostate.DesiredConfig, mcostate.State, mcostate.Reason,
	mcostate.CurrentImage, mcostate.DesiredImage, ReleasedAnnotation,
}
