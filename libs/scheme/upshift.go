package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	aromonitorv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// upshiftAPIs lists the AddToScheme functions of Upshift's own API groups
// (module api/). Each API group adds itself here when it is created.
var upshiftAPIs = []func(*runtime.Scheme) error{
	arov1alpha1.AddToScheme,
	aromonitorv1alpha1.AddToScheme,
	nodegatev1alpha1.AddToScheme,
	updatev1alpha1.AddToScheme,
	upgradev1alpha1.AddToScheme,
}
