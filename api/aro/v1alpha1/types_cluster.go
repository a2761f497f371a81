package v1alpha1

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SingletonName is the only Cluster object that counts. ARO compares it
// case-insensitively; so does aro-monitor.
const SingletonName = "cluster"

// ARO's condition types that aro-monitor can write, with ARO's names and
// meanings: the resource provider and ARO's central monitor read them. ARO's
// operator removes any other type from the list (only its own and
// *ControllerAvailable/Progressing/Degraded survive its writes), so
// aro-monitor's own findings live on its MonitorConfig, never here.
const (
	InternetReachableFromMaster = "InternetReachableFromMaster"
	InternetReachableFromWorker = "InternetReachableFromWorker"
	ServicePrincipalValid       = "ServicePrincipalValid"
	MachineValid                = "MachineValid"
	DefaultIngressCertificate   = "DefaultIngressCertificate"
	DefaultClusterDNS           = "DefaultClusterDNS"
)

// LastSubnetReconcileAnnotation is set on the Cluster, as ARO's subnet
// controller sets it, each time a subnet's network security group was
// re-associated; the resource provider's monitor turns a recent one into its
// NSG reconciliation metric. The value is in time.RFC1123, ARO's format.
const LastSubnetReconcileAnnotation = "aro.openshift.io/lastSubnetReconcileTimestamp"

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

// ClusterStatus is ARO's status, field for field: ARO's CRD keeps nothing
// else (it has no preserved unknown fields), so anything more would be pruned
// on write.
type ClusterStatus struct {
	// operatorVersion is written by ARO's operator.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// conditions are written by ARO's operator and read by its resource
	// provider. A plain (atomic) list in ARO's CRD: a writer replaces the
	// whole list, so every writer reads, changes its own types and writes
	// the rest back as it found them.
	// +optional
	// +listType=atomic
	Conditions []operatorv1.OperatorCondition `json:"conditions,omitempty"`
	// redHatKeysPresent is written by ARO's pull-secret controller.
	// +optional
	RedHatKeysPresent []string `json:"redHatKeysPresent,omitempty"`
}
