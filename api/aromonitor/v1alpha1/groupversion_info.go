package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is aro-monitor's configuration API group and version.
var GroupVersion = schema.GroupVersion{Group: "aromonitor.upshift.io", Version: "v1alpha1"}

// SchemeGroupVersion is GroupVersion under the name the generated apply
// configurations (applyconfiguration/) refer to.
var SchemeGroupVersion = GroupVersion

var (
	// SchemeBuilder collects the functions that add this group's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this group's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &MonitorConfig{}, &MonitorConfigList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
