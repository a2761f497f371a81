package v1alpha1

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SingletonName is the only Cluster object that counts. ARO compares it
// case-insensitively; so does aro-monitor.
const SingletonName = "cluster"

// Condition types aro-monitor writes, with ARO's names: the resource provider
// and ARO's central monitor read them.
const (
	InternetReachableFromMaster = "InternetReachableFromMaster"
	InternetReachableFromWorker = "InternetReachableFromWorker"
	ServicePrincipalValid       = "ServicePrincipalValid"
	// RemediationSuppressed is aro-monitor's own: True while NSG
	// re-association is stopped for at least one subnet because something
	// else keeps undoing it.
	RemediationSuppressed = "RemediationSuppressed"
	// NSGAssociated is aro-monitor's own: whether every cluster subnet is
	// associated with the cluster's network security group.
	NSGAssociated = "NSGAssociated"
)

// Condition reasons ARO uses for the conditions above. They are not CamelCase
// (two carry spaces) because the resource provider matches them verbatim.
const (
	ReasonCheckDone               = "CheckDone"
	ReasonCheckFailed             = "CheckFailed"
	ReasonValidationSuccessful    = "Validation Successful"
	ReasonServicePrincipalInvalid = "Service Principal invalid"
	ReasonValidationUnavailable   = "Validation Unavailable"
)

// Cluster is the ARO operator's cluster-scoped singleton (named `cluster`):
// the resource provider writes its spec, the in-cluster checks write its
// status conditions.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Master egress",type=string,JSONPath=`.status.conditions[?(@.type=="InternetReachableFromMaster")].status`
// +kubebuilder:printcolumn:name="Worker egress",type=string,JSONPath=`.status.conditions[?(@.type=="InternetReachableFromWorker")].status`
// +kubebuilder:printcolumn:name="SP valid",type=string,JSONPath=`.status.conditions[?(@.type=="ServicePrincipalValid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

// ClusterSpec is written by ARO's resource provider; every field keeps ARO's
// JSON name and type.
type ClusterSpec struct {
	// resourceId is the Azure resource ID of the openShiftClusters resource;
	// the subscription is parsed out of it.
	// +optional
	ResourceID string `json:"resourceId,omitempty"`
	// clusterResourceGroupId is the ID of the managed resource group, where
	// the cluster's network security group lives.
	// +optional
	ClusterResourceGroupID string `json:"clusterResourceGroupId,omitempty"`
	// domain is the cluster domain.
	// +optional
	Domain string `json:"domain,omitempty"`
	// acrDomain is ARO's container registry host.
	// +optional
	ACRDomain string `json:"acrDomain,omitempty"`
	// azEnvironment is the Azure cloud name, e.g. AzurePublicCloud.
	// +optional
	AZEnvironment string `json:"azEnvironment,omitempty"`
	// location is the Azure region.
	// +optional
	Location string `json:"location,omitempty"`
	// infraId is the OpenShift infrastructure ID; network security group
	// names are built from it.
	// +optional
	InfraID string `json:"infraId,omitempty"`
	// storageSuffix is the suffix of the cluster storage account.
	// +optional
	StorageSuffix string `json:"storageSuffix,omitempty"`
	// architectureVersion 0 has separate control-plane and node network
	// security groups, 1 has one.
	// +optional
	ArchitectureVersion int `json:"architectureVersion,omitempty"`
	// genevaLogging configured the old log shipper; empty on current clusters.
	// +optional
	GenevaLogging GenevaLoggingSpec `json:"genevaLogging,omitempty"`
	// internetChecker lists the URLs the egress checks probe.
	// +optional
	InternetChecker InternetCheckerSpec `json:"internetChecker,omitempty"`
	// vnetId is the virtual network's resource ID.
	// +optional
	VnetID string `json:"vnetId,omitempty"`
	// apiIntIP is the internal API load balancer's IP.
	// +optional
	APIIntIP string `json:"apiIntIP,omitempty"`
	// ingressIP is the default ingress IP.
	// +optional
	IngressIP string `json:"ingressIP,omitempty"`
	// gatewayDomains are served through ARO's egress gateway; non-empty means
	// the gateway is on.
	// +optional
	GatewayDomains []string `json:"gatewayDomains,omitempty"`
	// gatewayTelemetryDomain is the gateway's telemetry host.
	// +optional
	GatewayTelemetryDomain string `json:"gatewayTelemetryDomain,omitempty"`
	// gatewayPrivateEndpointIP is the gateway's private endpoint IP.
	// +optional
	GatewayPrivateEndpointIP string `json:"gatewayPrivateEndpointIP,omitempty"`
	// banner selects a console notification.
	// +optional
	Banner Banner `json:"banner,omitempty"`
	// serviceSubnets are the resource provider's own subnets.
	// +optional
	ServiceSubnets []string `json:"serviceSubnets,omitempty"`
	// operatorflags are ARO's free-form feature flags. aro-monitor honours
	// the ones that switch its checks on and off, with ARO's defaults.
	// +optional
	OperatorFlags map[string]string `json:"operatorflags,omitempty"`
	// features is ARO's boolean feature block, removed in 2022 and ignored;
	// accepted so objects from older clusters still apply.
	// +optional
	Features map[string]bool `json:"features,omitempty"`
}

// GenevaLoggingSpec is empty on current ARO clusters; the old fields are
// accepted and ignored.
type GenevaLoggingSpec struct {
	// +optional
	ConfigVersion string `json:"configVersion,omitempty"`
	// +optional
	MonitoringGCSAccount string `json:"monitoringGCSAccount,omitempty"`
	// +optional
	MonitoringGCSEnvironment string `json:"monitoringGCSEnvironment,omitempty"`
	// +optional
	MonitoringGCSNamespace string `json:"monitoringGCSNamespace,omitempty"`
}

// InternetCheckerSpec lists the URLs the egress checks probe.
type InternetCheckerSpec struct {
	// +optional
	URLs []string `json:"urls,omitempty"`
}

// Banner selects a console notification: "" or ContactSupport.
type Banner struct {
	// +optional
	Content string `json:"content,omitempty"`
}

// ClusterStatus keeps ARO's fields and adds aro-monitor's detail.
type ClusterStatus struct {
	// operatorVersion is the version of the component that last wrote
	// conditions from the control plane.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// conditions have ARO's types and meanings; the resource provider reads
	// them. A map keyed by type (ARO's CRD has a plain list), so each of
	// aro-monitor's checks owns its own conditions under server-side apply.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []operatorv1.OperatorCondition `json:"conditions,omitempty"`
	// redHatKeysPresent is written by ARO's pull-secret controller.
	// +optional
	RedHatKeysPresent []string `json:"redHatKeysPresent,omitempty"`

	// checks holds one record per check aro-monitor runs: when it last ran
	// and when it last succeeded.
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
	// credentials describes the service principal or workload identity check.
	// +optional
	Credentials *CredentialStatus `json:"credentials,omitempty"`
	// effectiveConfiguration is the configuration in force, after
	// MonitorConfig defaults and ARO's operator flags.
	// +optional
	EffectiveConfiguration *EffectiveConfiguration `json:"effectiveConfiguration,omitempty"`
}

// CheckName names one of aro-monitor's checks.
// +kubebuilder:validation:Enum=InternetMaster;InternetWorker;Credentials;NSG
type CheckName string

const (
	CheckInternetMaster CheckName = "InternetMaster"
	CheckInternetWorker CheckName = "InternetWorker"
	CheckCredentials    CheckName = "Credentials"
	CheckNSG            CheckName = "NSG"
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
