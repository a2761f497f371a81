package runtime

import (
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/upshift-io/upshift/libs/buildinfo"
	"github.com/upshift-io/upshift/libs/scheme"
)

// Options are what a component may set beyond the common flags.
type Options struct {
	// Scheme defaults to scheme.New().
	Scheme *runtime.Scheme
	// Cache lets a component narrow its informers (ByObject selectors,
	// namespaces). The managedFields-stripping transform is always added,
	// and the informers' watches are counted when they expire.
	Cache cache.Options
	// RestConfig skips kubeconfig loading; tests use it.
	RestConfig *rest.Config
	// Controller holds defaults for every controller of the manager (tests
	// that restart a component in one process skip name validation here).
	Controller ctrlconfig.Controller
	// WebhookServer, when set, serves the component's admission webhooks
	// (it registers them on mgr.GetWebhookServer() in Setup). The manager
	// runs it on every replica, leader or not, and /readyz waits for it to
	// listen: the apiserver may call any replica behind the Service.
	WebhookServer webhook.Server
	// LeaderElectionID overrides the Lease name, LeaseName(component): for a
	// component whose replicas elect one leader per something they find at
	// start (aro-monitor's worker agents, one per subnet).
	LeaderElectionID string
}

// LeaseName is the leader-election Lease of a component.
func LeaseName(component string) string { return "upshift-" + component }

// UserAgent is what a component's requests carry, and so what the
// apiserver's audit log shows beside the ServiceAccount: the component and
// its version and, in a pod (the charts set POD_NAME), the pod, which tells
// the replicas of one Deployment apart.
func UserAgent(component, pod string) string {
	ua := component + "/" + buildinfo.Version()
	if pod != "" {
		ua += " (" + pod + ")"
	}
	return ua
}

// PodUserAgent is UserAgent for this process's pod, named by $POD_NAME (the
// charts set it; empty outside a pod): what its requests to the API server,
// and to services outside the cluster, carry.
func PodUserAgent(component string) string { return UserAgent(component, os.Getenv("POD_NAME")) }

// RestConfig loads the kubeconfig named by --kubeconfig, or, when empty, the
// usual chain ($KUBECONFIG, in-cluster, ~/.kube/config).
func RestConfig(f *Flags) (*rest.Config, error) {
	if f.Kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", f.Kubeconfig, err)
		}
		return cfg, nil
	}
	return config.GetConfig()
}

// NewManager creates the controller-runtime manager for a component with the
// conventions every Upshift binary shares.
func NewManager(component string, f *Flags, opts Options) (manager.Manager, error) {
	cfg := opts.RestConfig
	if cfg == nil {
		var err error
		if cfg, err = RestConfig(f); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	var mgr manager.Manager
	cfg.UserAgent = PodUserAgent(component)
	if f.KubeAPIQPS > 0 {
		cfg.QPS, cfg.Burst = float32(f.KubeAPIQPS), f.KubeAPIBurst
	}

	s := opts.Scheme
	if s == nil {
		s = scheme.New()
	}
	cacheOpts := opts.Cache
	// Nobody reads managedFields from the cache, and it is often half of an
	// object's size: dropping it is the cheapest memory win there is.
	cacheOpts.DefaultTransform = chainTransforms(cache.TransformStripManagedFields(), cacheOpts.DefaultTransform)
	// Every informer's watches count their expiries (watches.go).
	cacheOpts.NewInformer = countExpiredWatches(cacheOpts.NewInformer)

	metricsOptions, err := MetricsOptions(f)
	if err != nil {
		return nil, err
	}
	gracefulTimeout := f.GracefulShutdownTimeout
	leaseName := LeaseName(component)
	if opts.LeaderElectionID != "" {
		leaseName = opts.LeaderElectionID
	}
	// With leader election, the manager's writes are fenced by the Lease
	// (fence.go); the lock is built here, not by controller-runtime, so
	// that its renewals are seen.
	var lock *fence
	var leaseEvents *leaseEvents
	if f.LeaderElect {
		if lock, leaseEvents, err = fencedLeaderElection(cfg, f, leaseName); err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
	}
	mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                              s,
		Cache:                               cacheOpts,
		Metrics:                             metricsOptions,
		HealthProbeBindAddress:              f.HealthProbeBindAddress,
		PprofBindAddress:                    f.PprofBindAddress,
		LeaderElection:                      f.LeaderElect,
		LeaderElectionID:                    leaseName,
		LeaderElectionNamespace:             f.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionResourceLockInterface: resourceLock(lock),
		LeaseDuration:                       positive(f.LeaseDuration),
		RenewDeadline:                       positive(f.RenewDeadline),
		RetryPeriod:                         positive(f.RetryPeriod),
		GracefulShutdownTimeout:             &gracefulTimeout,
		Controller:                          opts.Controller,
		WebhookServer:                       opts.WebhookServer,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if leaseEvents != nil {
		//lint:ignore SA1019 client-go's Lease lock records through the old Events API.
		leaseEvents.setRecorder(mgr.GetEventRecorderFor)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready once the informers are filled: a replica that answers before
	// its caches have synced would publish, and be scraped for, an
	// assessment of an empty cluster.
	if err := mgr.AddReadyzCheck("informers", CacheSynced(mgr.GetCache(), cacheSyncProbeWait)); err != nil {
		return nil, err
	}
	if opts.WebhookServer != nil {
		if err := mgr.AddReadyzCheck("webhook", opts.WebhookServer.StartedChecker()); err != nil {
			return nil, err
		}
	}
	buildInfo.WithLabelValues(component, buildinfo.Version()).Set(1)
	return mgr, nil
}

// resourceLock is lock as the interface, nil without leader election (a
// nil *fence is not a nil interface).
func resourceLock(lock *fence) resourcelock.Interface {
	if lock == nil {
		return nil
	}
	return lock
}

// positive is d, or nil (controller-runtime's default) when d is not set:
// Flags built in code rather than parsed leave the lease timings zero.
func positive(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

func chainTransforms(first, second toolscache.TransformFunc) toolscache.TransformFunc {
	if second == nil {
		return first
	}
	return func(obj any) (any, error) {
		obj, err := first(obj)
		if err != nil {
			return nil, err
		}
		return second(obj)
	}
}
