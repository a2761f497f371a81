package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// ClusterOptions say what StartCluster starts.
type ClusterOptions struct {
	// ControlPlane chooses the parts of the control plane.
	ControlPlane testenv.Options
	// Seed is the OpenShift cluster to create; nil seeds nothing.
	Seed *ocpsim.Topology
	// Sim runs ocpsim with these options; nil runs none.
	Sim *ocpsim.Options
	// Components are installed as their charts' identities and, with a
	// Binary, run as them.
	Components []ComponentOptions
	// Prepare runs once the cluster is seeded and simulated and every
	// identity is installed, before the components without a webhook start:
	// the objects they expect to find (a ConfigMap, an UpgradeConfig).
	Prepare func(ctx context.Context, c *Cluster) error
	// Progress, when set, is told each stage as it begins, for a program
	// that narrates them.
	Progress func(Stage)
}

// Stage is a step of StartCluster, in order.
type Stage int

const (
	// StageControlPlane starts etcd, kube-apiserver and the parts asked for.
	StageControlPlane Stage = iota
	// StageWebhooks installs and starts the components that serve a
	// webhook (only when there is one).
	StageWebhooks
	// StageSeed seeds the cluster and starts ocpsim.
	StageSeed
	// StageComponents installs the other components' identities (their
	// Roles may be in namespaces the seed creates), runs Prepare and starts
	// them.
	StageComponents
)

// ComponentOptions is one component of the cluster.
type ComponentOptions struct {
	// Chart is the folder under charts/, rendered as Release in Namespace
	// with the Set values.
	Chart, Release, Namespace string
	Set                       []string
	// Scraper names a ServiceAccount in namespace "monitoring" bound to the
	// chart's metrics-reader ClusterRole: the identity Prometheus scrapes
	// the component as. Empty: none.
	Scraper string
	// Binary runs as the chart's ServiceAccount with the flags the chart's
	// Deployment passes (StartAsIdentity), leader election as LeaderElect,
	// and Args. Empty installs the identity only, for a caller that runs
	// the binary itself (later, or more than once).
	Binary      string
	LeaderElect bool
	Args        []string
	// Replicas above 1 runs that many copies with leader election, kept
	// running by a supervisor (ClusterComponent.Replicas), as the chart's
	// Deployment would with as many replicas; it needs a Scraper, which
	// tells the leader. A webhook is served by replica 0 (the apiserver
	// knows one address); the others serve theirs on ports of their own.
	Replicas int
	// Webhook: the chart's ValidatingWebhookConfigurations are registered
	// in the apiserver, pointed at the component, which gets WebhookFlags
	// and is started — and ready — before anything is seeded: the
	// webhooks' failure policy is Fail.
	Webhook bool
}

// Cluster is a simulated cluster with its components.
type Cluster struct {
	*simcluster.Cluster
	// Components are by release name.
	Components map[string]*ClusterComponent
	started    []*ClusterComponent
}

// ClusterComponent is a component's installed identity, its scraper and,
// when StartCluster ran it, its process.
type ClusterComponent struct {
	Identity *Identity
	Scraper  *Scraper
	Running  *Running
	// Replicas, with ComponentOptions.Replicas above 1, instead of Running.
	Replicas *Replicas
}

// StartCluster is the one way an e2e suite, the demo and the bench stand up
// a simulated cluster: the control plane with the charts' webhooks
// registered, the components that serve them, the seeded cluster and
// ocpsim, then the other components' chart identities and processes. On
// error nothing is left running.
func StartCluster(ctx context.Context, o ClusterOptions) (_ *Cluster, retErr error) {
	progress := func(s Stage) {
		if o.Progress != nil {
			o.Progress(s)
		}
	}
	c := &Cluster{Components: map[string]*ClusterComponent{}}
	cp := o.ControlPlane
	webhooks := false
	for _, co := range o.Components {
		if !co.Webhook {
			continue
		}
		webhooks = true
		chart, err := RenderChart(co.Chart, co.Release, co.Namespace, co.Set...)
		if err != nil {
			return nil, err
		}
		hooks, err := chart.ValidatingWebhooks()
		if err != nil {
			return nil, err
		}
		if len(hooks) == 0 {
			return nil, fmt.Errorf("chart %s registers no validating webhook", co.Chart)
		}
		cp.ValidatingWebhooks = append(append([]*admissionregistrationv1.ValidatingWebhookConfiguration(nil), cp.ValidatingWebhooks...), hooks...)
	}
	defer func() {
		if retErr != nil && c.Cluster != nil {
			_ = c.Stop()
		}
	}()
	progress(StageControlPlane)
	sc, err := simcluster.Start(ctx, simcluster.Options{
		ControlPlane: cp,
		BeforeSeed: func(ctx context.Context, env *testenv.Env) error {
			// Stop needs the control plane from here on.
			c.Cluster = &simcluster.Cluster{Env: env}
			if webhooks {
				progress(StageWebhooks)
			}
			for _, co := range o.Components {
				if co.Webhook {
					if err := c.install(ctx, co); err != nil {
						return err
					}
					if err := c.run(ctx, co); err != nil {
						return err
					}
				}
			}
			progress(StageSeed)
			return nil
		},
		Seed: o.Seed,
		Sim:  o.Sim,
	})
	if err != nil {
		return nil, err
	}
	c.Cluster = sc
	progress(StageComponents)
	// After the seed: a chart's Roles live in OpenShift's namespaces.
	for _, co := range o.Components {
		if !co.Webhook {
			if err := c.install(ctx, co); err != nil {
				return nil, err
			}
		}
	}
	if o.Prepare != nil {
		if err := o.Prepare(ctx, c); err != nil {
			return nil, err
		}
	}
	for _, co := range o.Components {
		if !co.Webhook {
			if err := c.run(ctx, co); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// install creates the component's identity and scraper.
func (c *Cluster) install(ctx context.Context, co ComponentOptions) error {
	id, err := InstallChartIdentity(ctx, c.Env, co.Chart, co.Release, co.Namespace, co.Set...)
	if err != nil {
		return err
	}
	cc := &ClusterComponent{Identity: id}
	if co.Scraper != "" {
		if cc.Scraper, err = InstallMetricsScraper(ctx, c.Env, id.Chart, "monitoring", co.Scraper); err != nil {
			return err
		}
	}
	c.Components[co.Release] = cc
	return nil
}

// run starts the component's binary, if it has one; a webhook server is
// waited for until ready.
func (c *Cluster) run(ctx context.Context, co ComponentOptions) error {
	if co.Binary == "" {
		return nil
	}
	cc := c.Components[co.Release]
	args := co.Args
	if co.Webhook {
		args = append(WebhookFlags(c.Env), args...)
	}
	if co.Replicas > 1 {
		return c.runReplicas(ctx, co, cc, args)
	}
	r, err := StartAsIdentity(co.Binary, cc.Identity, co.Namespace, co.LeaderElect, args...)
	if err != nil {
		return err
	}
	cc.Running = r
	c.started = append(c.started, cc)
	if co.Webhook {
		if err := WaitReady(ctx, r, time.Minute); err != nil {
			return fmt.Errorf("%s not ready: %w\n%s", co.Chart, err, r.Logs())
		}
	}
	return nil
}

// runReplicas starts co.Replicas supervised copies of the component.
func (c *Cluster) runReplicas(ctx context.Context, co ComponentOptions, cc *ClusterComponent, args []string) error {
	if cc.Scraper == nil {
		return fmt.Errorf("%s: replicas need a Scraper to tell the leader", co.Chart)
	}
	// Each replica's webhook port is chosen once: a replica started again
	// listens where it listened before, as a pod's container does.
	extra := make([][]string, co.Replicas)
	for i := 1; i < co.Replicas && co.Webhook; i++ {
		addr, err := testenv.FreeAddr()
		if err != nil {
			return err
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		extra[i] = []string{"--webhook-port=" + port}
	}
	lease := runtime.LeaseName(filepath.Base(co.Binary))
	// Each process is a pod of its own, named as a Deployment's pods are
	// (unique per start), so that the audit log tells them apart.
	var starts atomic.Int64
	rs, err := StartReplicas(co.Chart, lease, co.Replicas, cc.Scraper, func(i int) (*Running, error) {
		pod := fmt.Sprintf("%s-%d-%d", co.Release, i, starts.Add(1))
		return StartPodAsIdentity(pod, co.Binary, cc.Identity, co.Namespace, true, append(append([]string(nil), args...), extra[i]...)...)
	})
	if err != nil {
		return err
	}
	cc.Replicas = rs
	c.started = append(c.started, cc)
	if co.Webhook {
		if err := WaitReady(ctx, rs.Replica(0), time.Minute); err != nil {
			return fmt.Errorf("%s not ready: %w\n%s", co.Chart, err, rs.Logs())
		}
	}
	return nil
}

// Stop stops the components StartCluster ran (in reverse order; one the
// caller already stopped is not stopped again), then ocpsim and the control
// plane.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.started) - 1; i >= 0; i-- {
		if err := c.started[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.started[i].Identity.ServiceAccount, err))
		}
	}
	if c.Cluster != nil {
		errs = append(errs, c.Cluster.Stop())
	}
	return errors.Join(errs...)
}

// StopInto stops the cluster and, unless *err already holds one, reports
// Stop's error in it: a program's `defer cluster.StopInto(&err)`.
func (c *Cluster) StopInto(err *error) {
	if stopErr := c.Stop(); *err == nil {
		*err = stopErr
	}
}

// Stop stops the component's process or replicas.
func (cc *ClusterComponent) Stop(grace time.Duration) error {
	if cc.Replicas != nil {
		return cc.Replicas.Stop(grace)
	}
	return cc.Running.Stop(grace)
}

// WaitReady waits up to timeout for the component's readiness probe to
// answer 200.
func WaitReady(ctx context.Context, r *Running, timeout time.Duration) error {
	return WaitFor(ctx, timeout, func() bool {
		resp, err := http.Get(r.ReadyzURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
