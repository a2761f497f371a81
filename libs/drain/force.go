package drain

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

// PodsOn lists the pods bound to node from r, the apiserver: an owner never
// caches pods (every pod of the cluster, for the few nodes it drains).
func PodsOn(ctx context.Context, r client.Reader, node string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	sel := fields.OneTermEqualSelector("spec.nodeName", node)
	if err := r.List(ctx, &pods, client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// Force takes one step on a pod, with its UID as a precondition so that a
// new pod of the same name is never touched. A pod already gone, or replaced,
// is no error: the step has nothing left to do.
func Force(ctx context.Context, c client.Client, a Action) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}}
	uid := types.UID(a.UID)
	switch a.Step {
	case commonv1alpha1.DrainStepDelete, commonv1alpha1.DrainStepForceDelete:
		opts := []client.DeleteOption{client.Preconditions{UID: &uid}}
		if a.GracePeriod != nil {
			opts = append(opts, client.GracePeriodSeconds(*a.GracePeriod))
		}
		err := c.Delete(ctx, pod, opts...)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case commonv1alpha1.DrainStepRemoveFinalizers:
		// A JSON patch whose test on the UID fails is Invalid: another pod.
		body, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/uid", "value": a.UID},
			{"op": "remove", "path": "/metadata/finalizers"},
		})
		if err != nil {
			return err
		}
		err = c.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, body))
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			return nil
		}
		return err
	}
	return fmt.Errorf("unknown step %q", a.Step)
}
