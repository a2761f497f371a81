// Package v1alpha1 holds aro.openshift.io/v1alpha1: the ARO operator's
// Cluster object, which aro-monitor reads for its configuration and writes
// ARO's own condition types to.
//
// The CRD is ARO's, installed by ARO's operator, not by Upshift: no CRD is
// generated from these types (+kubebuilder:skip). The tests install a copy
// written from ARO's documented schema (api/crds/aro). The status here is
// exactly ARO's — operatorVersion, conditions as operator/v1
// OperatorConditions in a plain list, and redHatKeysPresent — because ARO's
// CRD prunes everything else; aro-monitor's own state lives in the status of
// its MonitorConfig (aromonitor.upshift.io/v1alpha1). The spec types read
// every field ARO's resource provider writes, plus the removed `features`
// block and the old genevaLogging fields of older clusters.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=aro.openshift.io
package v1alpha1
