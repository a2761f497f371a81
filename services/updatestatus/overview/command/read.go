package command

import (
	"context"
	"errors"
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aromonitorv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/services/updatestatus/overview"
)

// The singletons the view reads.
var (
	clusterVersionKey = client.ObjectKey{Name: "version"}
	cpmsKey           = client.ObjectKey{Namespace: "openshift-machine-api", Name: "cluster"}
)

// readAll reads every kind the view shows, the ClusterVersion first: when
// that read cannot reach the server or is not authenticated, nothing else
// will do better, and the command fails with that error instead of
// printing a view of six failed reads. The others are read at once, each
// with its own outcome.
func readAll(ctx context.Context, c client.Reader) (overview.Input, error) {
	var in overview.Input
	cv := &configv1.ClusterVersion{}
	err := c.Get(ctx, clusterVersionKey, cv)
	if err != nil && fatal(err) {
		return in, err
	}
	in.ClusterVersion = result(cv, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		in.UpgradeStatus = get(ctx, c, client.ObjectKey{Name: updatev1alpha1.UpgradeStatusName}, &updatev1alpha1.UpgradeStatus{})
	})
	wg.Go(func() {
		var l upgradev1alpha1.UpgradeConfigList
		in.UpgradeConfigs = list(ctx, c, &l, func() []upgradev1alpha1.UpgradeConfig { return l.Items })
	})
	wg.Go(func() {
		var l nodegatev1alpha1.MutexRunConfigList
		in.MutexRuns = list(ctx, c, &l, func() []nodegatev1alpha1.MutexRunConfig { return l.Items })
	})
	wg.Go(func() {
		in.ControlPlaneMachineSet = get(ctx, c, cpmsKey, &machinev1.ControlPlaneMachineSet{})
	})
	wg.Go(func() {
		in.MonitorConfig = get(ctx, c, client.ObjectKey{Name: aromonitorv1alpha1.SingletonName}, &aromonitorv1alpha1.MonitorConfig{})
	})
	wg.Wait()
	return in, nil
}

func get[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) overview.Read[T] {
	return result(obj, c.Get(ctx, key, obj))
}

// result is the outcome of a Get of obj.
func result[T client.Object](obj T, err error) overview.Read[T] {
	if err == nil {
		return overview.Read[T]{Object: obj, Outcome: overview.Found}
	}
	var zero T
	if apierrors.IsNotFound(err) && !optionalkind.NotServed(err) {
		return overview.Read[T]{Object: zero, Outcome: overview.Absent}
	}
	return overview.Read[T]{Object: zero, Outcome: outcome(err), Err: err.Error()}
}

func list[T any](ctx context.Context, c client.Reader, l client.ObjectList, items func() []T) overview.Read[[]T] {
	if err := c.List(ctx, l); err != nil {
		return overview.Read[[]T]{Outcome: outcome(err), Err: err.Error()}
	}
	return overview.Read[[]T]{Object: items(), Outcome: overview.Found}
}

func outcome(err error) overview.Outcome {
	switch {
	case meta.IsNoMatchError(err), optionalkind.NotServed(err):
		return overview.NotInstalled
	case apierrors.IsForbidden(err):
		return overview.Forbidden
	}
	return overview.Failed
}

// fatal: an error no other read would escape either.
func fatal(err error) bool {
	var status apierrors.APIStatus
	return apierrors.IsUnauthorized(err) || !errors.As(err, &status)
}

// mapper maps the kinds the view reads to their resources without asking
// the server: discovery would cost a round trip (a large one on OpenShift)
// before the reads, and a CRD that is not installed shows in its read's
// NotFound all the same (optionalkind.NotServed).
func mapper() meta.RESTMapper {
	kinds := []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{configv1.GroupVersion.WithKind("ClusterVersion"), meta.RESTScopeRoot},
		{updatev1alpha1.GroupVersion.WithKind("UpgradeStatus"), meta.RESTScopeRoot},
		{upgradev1alpha1.GroupVersion.WithKind("UpgradeConfig"), meta.RESTScopeNamespace},
		{nodegatev1alpha1.GroupVersion.WithKind("MutexRunConfig"), meta.RESTScopeNamespace},
		{machinev1.GroupVersion.WithKind("ControlPlaneMachineSet"), meta.RESTScopeNamespace},
		{aromonitorv1alpha1.GroupVersion.WithKind("MonitorConfig"), meta.RESTScopeRoot},
	}
	var gvs []schema.GroupVersion
	for _, k := range kinds {
		gvs = append(gvs, k.gvk.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, k := range kinds {
		m.Add(k.gvk, k.scope)
	}
	return m
}
