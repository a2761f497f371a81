package framework

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/testenv"
)

// A suite whose component reads another component's kind when it is
// installed (libs/optionalkind) removes that kind's CRD before the component
// starts (ClusterOptions.Prepare) and installs it in a spec: the component
// then uses both its grants, the CRD's and the kind's, as on a cluster where
// the other chart comes second.

// RemoveCRD deletes an Upshift CRD the control plane installed, and waits
// until it is gone.
func RemoveCRD(ctx context.Context, env *testenv.Env, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// InstallCRD creates an Upshift CRD, as its chart does.
func InstallCRD(ctx context.Context, env *testenv.Env, name string) error {
	crds, err := testenv.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if crd.Name == name {
			return env.Client.Create(ctx, crd.DeepCopy())
		}
	}
	return fmt.Errorf("no CRD %s among Upshift's", name)
}
