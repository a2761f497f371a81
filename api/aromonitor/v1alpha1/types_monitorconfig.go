package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SingletonName is the only MonitorConfig aro-monitor reads. Without one, every
// setting has its default.
const SingletonName = "cluster"

// MonitorConfig holds aro-monitor's settings (cluster-scoped, named `cluster`).
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="metadata.name must be cluster: aro-monitor reads only the MonitorConfig named cluster"
// +kubebuilder:printcolumn:name="Master egress",type=string,JSONPath=`.status.conditions[?(@.type=="InternetReachableFromMaster")].status`
// +kubebuilder:printcolumn:name="Worker egress",type=string,JSONPath=`.status.conditions[?(@.type=="InternetReachableFromWorker")].status`
// +kubebuilder:printcolumn:name="SP valid",type=string,JSONPath=`.status.conditions[?(@.type=="ServicePrincipalValid")].status`
// +kubebuilder:printcolumn:name="NSG",type=string,JSONPath=`.status.conditions[?(@.type=="NSGAssociated")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MonitorConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec MonitorConfigSpec `json:"spec,omitempty"`
	// status is aro-monitor's record of every check. aro-monitor's master
	// role creates the MonitorConfig (every setting at its default) when
	// there is none, to keep it.
	// +optional
	Status MonitorConfigStatus `json:"status,omitempty"`
}

// MonitorConfigList is a list of MonitorConfigs.
// +kubebuilder:object:root=true
type MonitorConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MonitorConfig `json:"items"`
}

// MonitorConfigSpec groups the settings per check.
type MonitorConfigSpec struct {
	// ownership decides, per check, whether aro-monitor replaces ARO's
	// operator or observes beside it. Auto: it observes every check whose
	// ARO controller runs — the check's deployment in
	// openshift-azure-operator (aro-operator-master; aro-operator-worker for
	// the workers' egress) exists and is not scaled to zero — and replaces
	// the others. Replace: it writes ARO's condition types and remediates
	// whatever runs; for clusters where ARO's controllers are stopped in a
	// way aro-monitor cannot see, or two writers would be wanted. Observe:
	// it never writes ARO's condition types nor re-associates a network
	// security group.
	// +optional
	// +kubebuilder:default=Auto
	Ownership OwnershipPolicy `json:"ownership,omitempty"`
	// +optional
	// +kubebuilder:default={}
	Internet InternetConfig `json:"internet,omitempty"`
	// +optional
	// +kubebuilder:default={}
	Credentials CredentialsConfig `json:"credentials,omitempty"`
	// +optional
	// +kubebuilder:default={}
	NSG NSGConfig `json:"nsg,omitempty"`
	// +optional
	// +kubebuilder:default={}
	Machines MachinesConfig `json:"machines,omitempty"`
	// +optional
	// +kubebuilder:default={}
	ClusterConfig ClusterConfigChecks `json:"clusterConfig,omitempty"`
	// +optional
	// +kubebuilder:default={}
	Workloads WorkloadsConfig `json:"workloads,omitempty"`
	// +optional
	// +kubebuilder:default={}
	ARM ARMConfig `json:"arm,omitempty"`
}

// OwnershipPolicy is how aro-monitor shares the cluster with ARO's operator.
// +kubebuilder:validation:Enum=Auto;Replace;Observe
type OwnershipPolicy string

const (
	OwnershipAuto          OwnershipPolicy = "Auto"
	OwnershipAlwaysReplace OwnershipPolicy = "Replace"
	OwnershipAlwaysObserve OwnershipPolicy = "Observe"
)

// InternetConfig tunes the egress probes.
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.interval) || duration(self.timeout) < duration(self.interval)",message="spec.internet.timeout must be shorter than spec.internet.interval"
type InternetConfig struct {
	// interval between probe rounds from each vantage point; jittered by up to 10%.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('24h')",message="spec.internet.interval must be a duration between 5s and 24h, e.g. 5m"
	Interval string `json:"interval,omitempty"`
	// timeout for one URL, all phases together.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('5m')",message="spec.internet.timeout must be a duration between 1s and 5m, e.g. 10s"
	Timeout string `json:"timeout,omitempty"`
	// failureThreshold failed rounds in a row turn a role's condition False.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// successThreshold passed rounds in a row turn it True again.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
	// additionalURLs are probed besides the Cluster's spec.internetChecker.urls.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:items:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="spec.internet.additionalURLs must be http:// or https:// URLs"
	AdditionalURLs []string `json:"additionalURLs,omitempty"`
}

// CredentialsConfig tunes the credential check.
type CredentialsConfig struct {
	// interval between token acquisitions; jittered by up to 10%.
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="spec.credentials.interval must be a duration between 10s and 24h, e.g. 15m"
	Interval string `json:"interval,omitempty"`
	// expiryWarning is how long before a known expiry the check warns.
	// +optional
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.credentials.expiryWarning must be a non-negative duration, e.g. 720h"
	ExpiryWarning string `json:"expiryWarning,omitempty"`
}

// NSGMode says what aro-monitor does about a subnet not associated with the
// cluster's network security group.
// +kubebuilder:validation:Enum=Observe;Remediate
type NSGMode string

const (
	// NSGObserve reports drift in status, Events and metrics, and changes nothing.
	NSGObserve NSGMode = "Observe"
	// NSGRemediate re-associates the group, within the budget.
	NSGRemediate NSGMode = "Remediate"
)

// NSGConfig tunes the network security group check and its remediation.
type NSGConfig struct {
	// mode is Observe or Remediate. ARO's flags can only narrow it: with
	// aro.azuresubnets.nsg.managed false, Remediate acts as Observe.
	// +optional
	// +kubebuilder:default=Remediate
	Mode NSGMode `json:"mode,omitempty"`
	// interval between reads of every cluster subnet; Machine and MachineSet
	// changes also trigger a check.
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="spec.nsg.interval must be a duration between 10s and 24h, e.g. 15m"
	Interval string `json:"interval,omitempty"`
	// maxRemediationsPerHour per subnet; past it, remediation stops for the
	// subnet until the hour has passed.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	MaxRemediationsPerHour int32 `json:"maxRemediationsPerHour,omitempty"`
	// tugOfWarWindow: drift seen again within this long after a remediation
	// means something else is undoing it; remediation stops for the subnet
	// (RemediationSuppressed) for suppressFor.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="spec.nsg.tugOfWarWindow must be a duration between 0s and 24h, e.g. 10m"
	TugOfWarWindow string `json:"tugOfWarWindow,omitempty"`
	// suppressFor is how long remediation stays stopped after a tug-of-war.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="spec.nsg.suppressFor must be a duration between 1m and 168h, e.g. 1h"
	SuppressFor string `json:"suppressFor,omitempty"`
}

// MachinesConfig tunes the MachineValid check.
type MachinesConfig struct {
	// interval between checks of the Machines and MachineSets; a round is
	// due an interval after the last one, whatever changed in between.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('24h')",message="spec.machines.interval must be a duration between 5s and 24h, e.g. 5m"
	Interval string `json:"interval,omitempty"`
	// failureThreshold failed rounds in a row turn MachineValid False: a
	// scale-down's Machines still count until they are deleted, which ARO's
	// own check reports as invalid at once.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// successThreshold passed rounds in a row turn it True again.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
}

// ClusterConfigChecks tunes ARO's DefaultIngressCertificate and
// DefaultClusterDNS checks. A round runs when the default IngressController,
// the DNS operator's configuration, the ClusterVersion or the Cluster's spec
// changes, and at least once per interval.
type ClusterConfigChecks struct {
	// interval is the longest time between two rounds.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="spec.clusterConfig.interval must be a duration between 1m and 24h, e.g. 1h"
	Interval string `json:"interval,omitempty"`
	// failureThreshold failed rounds in a row turn a condition False. A
	// failed round that the threshold holds back is repeated after a
	// minute, so a real misconfiguration shows within minutes while a
	// read that failed once does not flap the condition.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// successThreshold passed rounds in a row turn it True again.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
}

// WorkloadsConfig tunes the DaemonSetsAvailable and PodsHealthy check,
// which reports on aro-monitor's MonitorConfig only.
type WorkloadsConfig struct {
	// enabled switches the check; when off its conditions are removed.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// namespaces are the namespaces whose DaemonSets and pods are checked;
	// the default is the set of OpenShift and ARO namespaces ARO's resource
	// provider monitors.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:default={"openshift-apiserver","openshift-azure-logging","openshift-azure-operator","openshift-etcd","openshift-ingress","openshift-kube-apiserver","openshift-machine-config-operator","openshift-machine-api","openshift-monitoring"}
	Namespaces []string `json:"namespaces,omitempty"`
	// interval between rounds; each round lists the namespaces' DaemonSets
	// and pods from the API server (nothing is watched between rounds).
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="spec.workloads.interval must be a duration between 30s and 24h, e.g. 5m"
	Interval string `json:"interval,omitempty"`
	// restartThreshold is the number of container restarts, summed over a
	// pod's containers as `oc get pods` shows them, from which a pod counts
	// as unhealthy.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	RestartThreshold int32 `json:"restartThreshold,omitempty"`
	// failureThreshold failed rounds in a row turn a condition False: a
	// rollout makes pods unready for a while.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// successThreshold passed rounds in a row turn it True again.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
}

// ARMConfig bounds aro-monitor's use of Azure Resource Manager.
type ARMConfig struct {
	// requestsPerMinute is the budget per subscription, across all checks.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1200
	RequestsPerMinute int32 `json:"requestsPerMinute,omitempty"`
}
