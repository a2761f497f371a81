// Package v1alpha1 holds aro.openshift.io/v1alpha1: the ARO operator's
// Cluster object, which aro-monitor reads for its configuration and writes
// conditions to.
//
// The schema is a superset of the ARO operator's. Every spec field ARO's
// resource provider writes is accepted with the same JSON name and type (plus
// the removed `features` block and the old genevaLogging fields, so objects
// from older clusters apply too), and the status keeps ARO's shape —
// operatorVersion, conditions as operator/v1 OperatorConditions, and
// redHatKeysPresent — because the resource provider reads those conditions.
// What aro-monitor adds lives in new status fields only (checks,
// vantagePoints, subnets, effectiveConfiguration); the spec stays ARO's, since
// the resource provider rewrites the whole spec on every sync. aro-monitor's
// own settings are in aromonitor.upshift.io/v1alpha1 MonitorConfig.
//
// Like ARO's CRD, the spec carries no validation beyond types: it is written
// by the resource provider, and refusing what it writes would break the sync.
//
// +kubebuilder:object:generate=true
// +groupName=aro.openshift.io
package v1alpha1
