// Package v1alpha1 holds aromonitor.upshift.io/v1alpha1: MonitorConfig, the
// typed and validated settings of aro-monitor. They live in their own object,
// not in the ARO Cluster's spec, because ARO's resource provider rewrites that
// whole spec on every sync; and not in ARO's free-form operator flags, which
// have no schema. The flags that switch ARO's checks on and off are still
// honoured (see the aro-monitor design doc).
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=aromonitor.upshift.io
package v1alpha1
