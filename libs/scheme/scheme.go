// Package scheme builds the one runtime.Scheme every Upshift binary and test
// uses: the Kubernetes built-in types, the OpenShift types we read and write
// (from github.com/openshift/api, never redefined here) and Upshift's own API.
package scheme

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// New returns a fresh scheme holding every type Upshift works with.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		configv1.Install,
		mcfgv1.Install,
		machinev1beta1.Install,
		machinev1.Install,
		operatorv1.Install,
	} {
		utilruntime.Must(add(s))
	}
	for _, add := range upshiftAPIs {
		utilruntime.Must(add(s))
	}
	return s
}

// Scheme is a shared instance for callers that do not mutate it.
var Scheme = New()
