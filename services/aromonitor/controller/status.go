package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/apply"

	"github.com/upshift-io/upshift/services/aromonitor/config"
)

// clusterStatus is the apply configuration of the ARO Cluster's status. The
// Cluster type is ARO's, with no generated apply configurations: this one
// sends the object's identity and the status fields set in Status, and
// nothing of the spec, so that each manager owns exactly the status fields
// its check writes.
type clusterStatus struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
	Status                                 *arov1alpha1.ClusterStatus `json:"status,omitempty"`
}

// IsApplyConfiguration marks clusterStatus as an apply configuration.
func (*clusterStatus) IsApplyConfiguration() {}

// applyStatus writes the fields set in st — and only those — under the field
// manager (libs/apply forces ownership: these fields are this check's alone).
func applyStatus(ctx context.Context, c client.Client, manager string, st arov1alpha1.ClusterStatus) error {
	ac := &clusterStatus{
		TypeMetaApplyConfiguration:   *metav1ac.TypeMeta().WithAPIVersion(arov1alpha1.GroupVersion.String()).WithKind("Cluster"),
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName(arov1alpha1.SingletonName),
		Status:                       &st,
	}
	_, err := apply.Status(ctx, c, ac, manager)
	return err
}

// snapshot is what every check reads first.
type snapshot struct {
	cluster  *arov1alpha1.Cluster
	settings config.Settings
	// configErr is a MonitorConfig that could not be used; the defaults run.
	configErr error
}

// load reads the Cluster (nil when there is none: nothing to do) and the
// settings in force.
func load(ctx context.Context, c client.Client) (*snapshot, error) {
	cluster := &arov1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var spec *amv1alpha1.MonitorConfigSpec
	mc := &amv1alpha1.MonitorConfig{}
	switch err := c.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc); {
	case err == nil:
		spec = &mc.Spec
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	s := &snapshot{cluster: cluster}
	s.settings, s.configErr = config.Compute(spec, cluster.Spec)
	if s.configErr != nil {
		s.settings, _ = config.Compute(nil, cluster.Spec)
	}
	return s, nil
}
