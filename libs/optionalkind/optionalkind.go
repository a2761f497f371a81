// Package optionalkind lets a controller read a kind that another Upshift
// component's chart installs (node-gate's MutexRunConfigs), whether that
// chart is installed before the controller, after it, or never.
//
// A watch of a kind the API server does not serve keeps a controller from
// starting, so the kind cannot simply be watched. Instead: when the kind is
// served at setup it is watched at once; otherwise the controller watches
// that one CRD, by name, and the event that shows it established starts the
// kind's watch (from a goroutine of its own: adding a watch waits for the
// controller's start, which waits for this CRD informer's handlers). The
// kind's existing objects then arrive as create events. No restart, no
// polling.
//
// The CRD's cache entry (CacheEntry) narrows the CRD informer to the one
// name, which is also all the RBAC a chart grants: list and watch on
// customresourcedefinitions with resourceNames [<crd>].
package optionalkind

import (
	"context"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// CacheEntry is the manager cache's entry for the CRD of a kind: that one
// CRD by name.
func CacheEntry(crd string) (client.Object, cache.ByObject) {
	return &apiextensionsv1.CustomResourceDefinition{}, cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", crd)}
}

// How long, and how often, a CRD seen established is checked to be served.
const (
	servedTimeout = 30 * time.Second
	servedPoll    = 200 * time.Millisecond
)

// Kind is one optional kind of one controller.
type Kind struct {
	// watching is set once the kind's watch has been started.
	watching atomic.Bool
}

// Setup watches obj's kind (its CRD is named crd) for ctl, events going to
// h: now if the kind is served, else once its CRD is established.
func Setup(mgr ctrl.Manager, ctl controller.Controller, obj client.Object, crd string, h handler.EventHandler) (*Kind, error) {
	k := &Kind{}
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	_, err = mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		k.watching.Store(true)
		return k, ctl.Watch(source.Kind(mgr.GetCache(), obj, h))
	case !meta.IsNoMatchError(err):
		return nil, err
	}
	log := mgr.GetLogger().WithValues("kind", gvk.Kind, "crd", crd)
	log.Info("optional kind not served: watching for its CRD")
	// starting guards against two starts; it is cleared when a start gives
	// up, so that a later event of the CRD tries again.
	var starting atomic.Bool
	onCRD := func(o client.Object) {
		c, ok := o.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || c.Name != crd || !established(c) || k.watching.Load() || !starting.CompareAndSwap(false, true) {
			return
		}
		go func() {
			// An informer's first list may show a CRD that was just deleted
			// (the API server's watch cache lags), and discovery follows
			// Established by a moment: wait, briefly, until the kind is
			// really served.
			ctx, cancel := context.WithTimeout(context.Background(), servedTimeout)
			defer cancel()
			err := wait.PollUntilContextCancel(ctx, servedPoll, true, func(context.Context) (bool, error) {
				_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
				return err == nil, nil
			})
			if err == nil {
				err = ctl.Watch(source.Kind(mgr.GetCache(), obj, h))
			}
			if err != nil {
				log.Info("the CRD is established but its kind is not served; waiting for the CRD's next change", "error", err.Error())
				starting.Store(false)
				return
			}
			k.watching.Store(true)
			log.Info("optional kind's CRD established: watching it")
		}()
	}
	crdEvents := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			onCRD(e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			onCRD(e.ObjectNew)
		},
	}
	return k, ctl.Watch(source.Kind(mgr.GetCache(), client.Object(&apiextensionsv1.CustomResourceDefinition{}), handler.EventHandler(crdEvents)))
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// Watched says whether the kind is watched, so that its objects can be
// read from the cache; while it is false there are none to read. A nil Kind
// is never watched.
func (k *Kind) Watched() bool { return k != nil && k.watching.Load() }
