package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// upshiftAPIs lists the AddToScheme functions of Upshift's own API groups
// (module api/). Each API group adds itself here when it is created.
var upshiftAPIs = []func(*runtime.Scheme) error{
	nodegatev1alpha1.AddToScheme,
	updatev1alpha1.AddToScheme,
	upgradev1alpha1.AddToScheme,
}
