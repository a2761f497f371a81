package v1alpha1

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of aro-monitor's own findings. They live on the
// MonitorConfig, not on ARO's Cluster: ARO's operator removes condition types
// it does not know from the Cluster, and the resource provider's monitors
// would count new ones.
const (
	// NSGAssociated says whether every cluster subnet is associated with the
	// cluster's network security group.
	NSGAssociated = "NSGAssociated"
	// RemediationSuppressed is True while NSG re-association is stopped for
	// at least one subnet because something else keeps undoing it or the
	// hourly budget is spent.
	RemediationSuppressed = "RemediationSuppressed"
	// SubnetServiceEndpoints says whether every cluster subnet has the
	// service endpoints ARO's subnet controller keeps there
	// (Microsoft.ContainerRegistry, Microsoft.Storage). ARO writes no
	// condition for them; the resource provider reads none.
	SubnetServiceEndpoints = "SubnetServiceEndpoints"
	// DaemonSetsAvailable says whether every DaemonSet in the monitored
	// namespaces has a pod available on each node it is scheduled to.
	DaemonSetsAvailable = "DaemonSetsAvailable"
	// PodsHealthy says whether every pod in the monitored namespaces is
	// scheduled, initialised, ready, not waiting and not restarting over
	// and over.
	PodsHealthy = "PodsHealthy"
)

// MonitorConfigStatus is aro-monitor's record: the conditions of every check
// (ARO's types as aro-monitor found them, whether or not it writes them to
// the Cluster, and its own), and the state that must survive a restart — the
// hysteresis counters, the NSG remediation budget and suppressions, the
// credential records. Each check owns its fields under server-side apply.
type MonitorConfigStatus struct {
	// conditions has one entry per condition type aro-monitor decides.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []operatorv1.OperatorCondition `json:"conditions,omitempty"`
	// checks holds one record per check: when it last ran, when it last
	// succeeded, and who owns it on this cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	Checks []CheckStatus `json:"checks,omitempty"`
	// vantagePoints holds the egress results per place probed from: the
	// control plane, and each worker subnet.
	// +optional
	// +listType=map
	// +listMapKey=name
	VantagePoints []VantagePoint `json:"vantagePoints,omitempty"`
	// subnets holds the network security group association per cluster
	// subnet, with the remediation record that survives restarts.
	// +optional
	// +listType=map
	// +listMapKey=id
	Subnets []SubnetStatus `json:"subnets,omitempty"`
	// workloads lists what the last round of the DaemonSets and Pods checks
	// found wrong, at most
	// 50 entries (the conditions' messages say how many there were).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Workloads []WorkloadProblem `json:"workloads,omitempty"`
	// credentials describes the service principal or workload identity check.
	// +optional
	Credentials *CredentialStatus `json:"credentials,omitempty"`
	// effectiveConfiguration is the configuration in force, after
	// MonitorConfig defaults and ARO's operator flags.
	// +optional
	EffectiveConfiguration *EffectiveConfiguration `json:"effectiveConfiguration,omitempty"`
}

// Ownership says who acts for a check: aro-monitor (Replace) or ARO's own
// operator, aro-monitor only observing (Observe).
// +kubebuilder:validation:Enum=Replace;Observe
type Ownership string

const (
	// OwnershipReplace: aro-monitor writes ARO's condition types for the
	// check and remediates, as ARO's controller would.
	OwnershipReplace Ownership = "Replace"
	// OwnershipObserve: ARO's controller runs; aro-monitor probes and
	// reports on its own object, metrics and Events only.
	OwnershipObserve Ownership = "Observe"
)

// CheckName names one of aro-monitor's checks.
// +kubebuilder:validation:Enum=InternetMaster;InternetWorker;Credentials;NSG;Machines;IngressCertificate;ClusterDNS;DaemonSets;Pods
type CheckName string

const (
	CheckInternetMaster CheckName = "InternetMaster"
	CheckInternetWorker CheckName = "InternetWorker"
	CheckCredentials    CheckName = "Credentials"
	// CheckNSG also keeps the subnets' service endpoints: both are ARO's
	// subnet controller's, and one pass writes each subnet at most once.
	CheckNSG                CheckName = "NSG"
	CheckMachines           CheckName = "Machines"
	CheckIngressCertificate CheckName = "IngressCertificate"
	CheckClusterDNS         CheckName = "ClusterDNS"
	CheckDaemonSets         CheckName = "DaemonSets"
	CheckPods               CheckName = "Pods"
)

// CheckStatus records one check's timing.
type CheckStatus struct {
	// +required
	Name CheckName `json:"name"`
	// lastCheckTime is when the check last completed, whatever its result.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// lastSuccessTime is when the check last passed.
	// +optional
	LastSuccessTime *metav1.Time `json:"lastSuccessTime,omitempty"`
	// consecutiveFailures and consecutiveSuccesses are the rounds in a row
	// that failed or passed, for a check whose condition moves with a
	// hysteresis of its own (Machines, IngressCertificate, ClusterDNS,
	// DaemonSets, Pods; the egress checks keep theirs per vantage point).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveSuccesses int32 `json:"consecutiveSuccesses,omitempty"`
	// ownership is Replace while aro-monitor writes ARO's condition for
	// this check on the Cluster (and, for the NSG check, remediates), and
	// Observe while ARO's own operator runs the check: aro-monitor then
	// reports here only.
	// +optional
	Ownership Ownership `json:"ownership,omitempty"`
	// ownershipMessage says why: which of ARO's deployments runs, or the
	// setting that decided.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	OwnershipMessage string `json:"ownershipMessage,omitempty"`
}

// Role is where an egress probe runs from.
// +kubebuilder:validation:Enum=master;worker
type Role string

const (
	RoleMaster Role = "master"
	RoleWorker Role = "worker"
)

// Path says how a probe reached its target.
// +kubebuilder:validation:Enum=Direct;Proxy
type Path string

const (
	PathDirect Path = "Direct"
	PathProxy  Path = "Proxy"
)

// VantagePoint is the latest egress result from one place.
type VantagePoint struct {
	// name is `master` or the worker subnet's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +required
	Role Role `json:"role"`
	// node is the node the probe last ran on.
	// +optional
	Node string `json:"node,omitempty"`
	// reachable is True when every target answered, False when one did
	// not, Unknown when nothing probed from here yet.
	// +required
	Reachable metav1.ConditionStatus `json:"reachable"`
	// path says whether the probes went direct or through the cluster proxy.
	// +optional
	Path Path `json:"path,omitempty"`
	// lastCheckTime is when the probes last ran from here.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// consecutiveFailures and consecutiveSuccesses are the probe rounds in
	// a row that failed or passed: reachable turns False after
	// failureThreshold failed rounds and True after successThreshold passed
	// ones. Kept here so a restart neither resets nor repeats a transition.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveSuccesses int32 `json:"consecutiveSuccesses,omitempty"`
	// targets holds the result per URL.
	// +optional
	// +listType=map
	// +listMapKey=url
	Targets []TargetResult `json:"targets,omitempty"`
}

// ProbePhase is one step of reaching a URL.
// +kubebuilder:validation:Enum=DNS;Connect;TLS;HTTP
type ProbePhase string

const (
	PhaseDNS     ProbePhase = "DNS"
	PhaseConnect ProbePhase = "Connect"
	PhaseTLS     ProbePhase = "TLS"
	PhaseHTTP    ProbePhase = "HTTP"
)

// TargetResult is one URL's latest probe.
type TargetResult struct {
	// +required
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// failedPhase is the phase that failed; empty when the probe succeeded.
	// +optional
	FailedPhase ProbePhase `json:"failedPhase,omitempty"`
	// error is the failure, when there was one.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Error string `json:"error,omitempty"`
	// latencyMilliseconds per phase that ran.
	// +optional
	LatencyMilliseconds map[ProbePhase]int64 `json:"latencyMilliseconds,omitempty"`
}

// SubnetStatus is one cluster subnet's network security group association.
type SubnetStatus struct {
	// id is the subnet's Azure resource ID, lower-cased.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	ID string `json:"id"`
	// expectedNSG is the cluster's network security group for this subnet.
	// +optional
	ExpectedNSG string `json:"expectedNSG,omitempty"`
	// attachedNSG is the one found at the last check; empty means none.
	// +optional
	AttachedNSG string `json:"attachedNSG,omitempty"`
	// lastCheckTime is when the subnet was last read.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// remediations are the times aro-monitor re-associated the group within
	// the budget window, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Remediations []metav1.Time `json:"remediations,omitempty"`
	// lastRemediationFailed says the latest re-association reached Azure
	// Resource Manager but failed. It still counts against the budget, but
	// drift seen again is the same drift, not a tug-of-war.
	// +optional
	LastRemediationFailed bool `json:"lastRemediationFailed,omitempty"`
	// suppressedUntil is set while remediation is stopped for this subnet.
	// +optional
	SuppressedUntil *metav1.Time `json:"suppressedUntil,omitempty"`
	// suppressedReason is TugOfWar (something else keeps undoing the
	// association) or BudgetExhausted (too many re-associations this hour).
	// +optional
	// +kubebuilder:validation:Enum=TugOfWar;BudgetExhausted
	SuppressedReason string `json:"suppressedReason,omitempty"`
	// suppressedMessage says what was seen.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	SuppressedMessage string `json:"suppressedMessage,omitempty"`
}

// CredentialStatus describes the credential check.
type CredentialStatus struct {
	// kind is ServicePrincipal or WorkloadIdentity.
	// +optional
	// +kubebuilder:validation:Enum=ServicePrincipal;WorkloadIdentity
	Kind string `json:"kind,omitempty"`
	// clientId is the application's client ID.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// aadErrorCode is the AADSTS code of the last failure, if any.
	// +optional
	AADErrorCode string `json:"aadErrorCode,omitempty"`
	// secretUpdatedTime is when aro-monitor first saw the credentials
	// Secret's current version (secretResourceVersion): an upper bound of
	// the credential material's age, not the time it was written.
	// +optional
	SecretUpdatedTime *metav1.Time `json:"secretUpdatedTime,omitempty"`
	// secretResourceVersion is the credentials Secret's resourceVersion
	// secretUpdatedTime belongs to.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SecretResourceVersion string `json:"secretResourceVersion,omitempty"`
	// expiryWarnedFor is the expiry the CredentialsExpiring Warning Event
	// was recorded for, so it is recorded once per expiry.
	// +optional
	ExpiryWarnedFor *metav1.Time `json:"expiryWarnedFor,omitempty"`
	// expiresTime is when the secret expires, where it is known.
	// +optional
	ExpiresTime *metav1.Time `json:"expiresTime,omitempty"`
}

// EffectiveConfiguration is what aro-monitor runs with.
type EffectiveConfiguration struct {
	// +optional
	InternetChecks bool `json:"internetChecks"`
	// +optional
	CredentialsCheck bool `json:"credentialsCheck"`
	// +optional
	MachinesCheck bool `json:"machinesCheck"`
	// clusterConfigChecks: DefaultIngressCertificate and DefaultClusterDNS.
	// +optional
	ClusterConfigChecks bool `json:"clusterConfigChecks"`
	// serviceEndpoints is Off, Observe or Remediate.
	// +optional
	ServiceEndpoints string `json:"serviceEndpoints,omitempty"`
	// +optional
	WorkloadsCheck bool `json:"workloadsCheck"`
	// nsgMode is Off, Observe or Remediate.
	// +optional
	NSGMode string `json:"nsgMode,omitempty"`
	// urls are the egress targets probed.
	// +optional
	URLs []string `json:"urls,omitempty"`
	// intervals per check, as Go durations.
	// +optional
	Intervals map[CheckName]string `json:"intervals,omitempty"`
}

// WorkloadProblem is one DaemonSet or pod found unhealthy.
type WorkloadProblem struct {
	// kind is DaemonSet or Pod.
	// +required
	// +kubebuilder:validation:Enum=DaemonSet;Pod
	Kind string `json:"kind"`
	// +required
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// node is the pod's node, if scheduled.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
	// problem says what is wrong, e.g. "2 of 3 available" or
	// "container kube-rbac-proxy waiting: CrashLoopBackOff".
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Problem string `json:"problem"`
}
