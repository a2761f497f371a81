// Package ocpsim plays the OpenShift operators Upshift does not own — the
// cluster-version-operator, the machine-config-operator (render, node and
// drain controllers and the machine-config-daemon on every node), the
// machine-api (machines and MachineSets), the quorum guard of the
// cluster-etcd-operator and the control-plane-machine-set operator — against
// any kube-apiserver, faithfully enough that controllers reading
// ClusterVersion, ClusterOperators, MachineConfigPools, MachineConfigs, Nodes
// and Machines cannot tell the difference.
//
// In a test, package simcluster starts a control plane (libs/testenv), seeds
// it with Seed and runs New's simulator on it:
//
//	c, err := simcluster.Start(ctx, simcluster.Options{
//		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true},
//		Seed:         &ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 6},
//		Sim:          &ocpsim.Options{TimeScale: 600},
//	})
//	defer c.Stop()
//	// now patch ClusterVersion.spec.desiredUpdate and watch the cluster update
//
// From a shell: `ocpsim seed --kubeconfig ... --workers 6` then
// `ocpsim run --kubeconfig ... --time-scale 600`.
//
// Every simulated duration (operator updates, drains, reboots, instance
// launches) is divided by Options.TimeScale. Faults are requested with the
// annotation ocpsim.upshift.io/fault on the object (see package faults):
// among them NotUpgradeable on a ClusterOperator and AdminAckRequired on the
// ClusterVersion make the CVO report Upgradeable=False and refuse updates to
// another minor version (ReleaseAccepted=False, PreconditionChecks). An
// unmanaged entry in ClusterVersion spec.overrides does the same with the
// CVO's reason ClusterVersionOverridesSet; a CVO of 4.16 to 4.21 refuses
// z-stream updates for it too, one of 4.22 or later lets them through with
// a warning (the message follows the release the CVO runs).
//
// The control-plane-machine-set operator acts only in a cluster seeded with
// its Deployment (Topology.CPMSOperator) and only while that Deployment asks
// for a replica: it replaces deleted control-plane Machines of an Active
// OnDelete ControlPlaneMachineSet, one per index, and reports its
// ClusterOperator with the version the CVO rolled its Deployment out with.
// Scaled to zero it does nothing, and a cluster update waits on
// control-plane-machine-set until it runs again (package cpmsoperator).
// With Options.PayloadWebhook the simulator also installs the payload's
// validating webhook for ControlPlaneMachineSets (ValidatingWebhookConfiguration
// controlplanemachineset.machine.openshift.io, failurePolicy Fail) and serves
// it on 127.0.0.1 only while the operator runs: it then admits every set
// (the real webhook validates the spec; not simulated), and while the
// operator is scaled to zero the apiserver, finding nothing listening,
// refuses every create and update of a set (not status writes) with
// "failed calling webhook "controlplanemachineset.machine.openshift.io"".
// The configuration is removed when the simulator stops.
//
// The simulated update service is Topology.Graph (versions in every
// channel) and Topology.Releases (GraphRelease: channels, and Risks that make
// updates to a release conditional). The CVO publishes availableUpdates,
// conditionalUpdates (with a Recommended condition per update) and
// desired.channels for spec.channel, recomputes them when the channel
// changes, and accepts desiredUpdate.image by digest alone for any release
// of the graph (cvo.ReleaseImage gives a release's digest pull spec).
//
// Sub-packages: seed (topology → objects), cvo, mco, machineapi, etcd,
// cpmsoperator (one simulated operator each, pure decisions +
// controller-runtime loops), faults, timescale, simcluster.
package ocpsim

import (
	"time"

	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/tools/ocpsim/cpmsoperator"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/etcd"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/seed"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// Topology is the shape of a seeded cluster (see package seed).
type Topology = seed.Topology

// Workload is a Deployment (with an optional PDB) in a Topology.
type Workload = seed.Workload

// CustomPool is an extra MachineConfigPool in a Topology.
type CustomPool = seed.CustomPool

// GraphRelease is a release of the simulated update graph with its channels
// and risks (Topology.Releases).
type GraphRelease = cvo.GraphRelease

// Risk is a known issue of updating to a GraphRelease, which makes the
// update conditional.
type Risk = cvo.Risk

// Seed creates a cluster of the given topology through c.
func Seed(ctx context.Context, c client.Client, t Topology) (*seed.Objects, error) {
	return seed.Seed(ctx, c, t)
}

// Options configure the simulator.
type Options struct {
	// TimeScale divides every simulated duration (600: ten simulated minutes
	// per wall second). <= 0 means real time.
	TimeScale float64
	// Operators overrides the simulated release payload.
	Operators []cvo.Operator
	// Graph, when set, replaces the seeded update graph with these releases
	// (every release in every channel, no risks).
	Graph []string
	// MCO, MachineAPI override simulated durations (zero: defaults).
	MCO        mco.Durations
	MachineAPI machineapi.Durations
	// EtcdPromotion is the simulated time from a new control-plane node's
	// Ready to its etcd member voting (zero: one minute), after which the
	// etcd operator releases the old machine's hook.
	EtcdPromotion time.Duration
	// EtcdMemberRemoval is the simulated time from a control-plane
	// machine's deletion to its member's removal (zero: 30 seconds); the
	// hook stays at least this long.
	EtcdMemberRemoval time.Duration
	// Log receives what is simulated (default: controller-runtime's logger).
	Log logr.Logger
	// Parts are the operators to play (none: all of them). A controller
	// suite that seeds no ClusterVersion or pools plays only what its
	// controller talks to, so the others never touch its objects.
	Parts []Part
	// PayloadWebhook installs the payload's validating webhook for
	// ControlPlaneMachineSets (ValidatingWebhookConfiguration
	// controlplanemachineset.machine.openshift.io: CREATE and UPDATE,
	// failurePolicy Fail), served by the simulator on 127.0.0.1 and
	// answering only while the CPMS operator runs: scaled to zero (or
	// without its Deployment) every create and update of a set — not its
	// status — is refused, as on a real cluster. It needs PartCPMSOperator
	// played; the configuration is removed when the simulator stops (see
	// cpmsoperator.SetupWebhook). Off by default.
	PayloadWebhook bool
}

// Part is one simulated operator.
type Part string

// The simulated operators.
const (
	PartCVO        Part = "cvo"
	PartMCO        Part = "mco"
	PartMachineAPI Part = "machineapi"
	PartEtcd       Part = "etcd"
	// PartCPMSOperator is the control-plane-machine-set operator; it acts
	// only in a cluster seeded with its Deployment (Topology.CPMSOperator).
	PartCPMSOperator Part = "cpmsoperator"
)

func (o Options) plays(p Part) bool {
	return len(o.Parts) == 0 || slices.Contains(o.Parts, p)
}

// Sim is a running (or ready to run) simulator.
type Sim struct {
	mgr ctrl.Manager
}

// New builds the simulator's controllers on a manager for cfg.
func New(cfg *rest.Config, o Options) (*Sim, error) {
	if o.Log.GetSink() == nil {
		o.Log = ctrl.Log.WithName("ocpsim")
	}
	cfg = rest.CopyConfig(cfg)
	// Status updates send fields of openshift/api types that the installed
	// (Default feature set) CRDs do not have; the apiserver's warnings about
	// them are noise here.
	cfg.WarningHandler = rest.NoWarnings{}
	// One simulator plays several operators at once; client-go's default of
	// 5 requests per second would throttle it far below the time scale.
	if cfg.QPS < 500 {
		cfg.QPS, cfg.Burst = 500, 1000
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Logger:                 o.Log,
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
			// The CVO reads only its graph ConfigMap; caching every ConfigMap
			// of the cluster would be wasted memory.
			ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{cvo.GraphNamespace: {}}}}},
		Controller: config.Controller{SkipNameValidation: ptrTrue()},
	})
	if err != nil {
		return nil, fmt.Errorf("ocpsim: %w", err)
	}
	scale := timescale.New(o.TimeScale)
	if err := mco.IndexPodsByNode(context.Background(), mgr); err != nil {
		return nil, err
	}
	if o.plays(PartCVO) {
		co := cvo.Options{Scale: scale, Operators: o.Operators, Graph: o.Graph, Log: o.Log}
		if o.plays(PartCPMSOperator) {
			// The simulated CPMS operator reports its own version, from the
			// Deployment the CVO rolls out.
			co.SelfReported = []string{cpmsoperator.ClusterOperator}
		}
		if err := cvo.Setup(mgr, co); err != nil {
			return nil, err
		}
	}
	if o.plays(PartMCO) {
		if err := mco.Setup(mgr, mco.Options{Scale: scale, Durations: o.MCO, Log: o.Log}); err != nil {
			return nil, err
		}
	}
	if o.plays(PartMachineAPI) {
		if err := machineapi.Setup(mgr, machineapi.Options{Scale: scale, Durations: o.MachineAPI, Log: o.Log, KubeletVersion: seed.KubeletVersion}); err != nil {
			return nil, err
		}
	}
	if o.plays(PartEtcd) {
		if err := etcd.Setup(mgr, etcd.Options{Scale: scale, Promotion: o.EtcdPromotion, MemberRemoval: o.EtcdMemberRemoval, Log: o.Log}); err != nil {
			return nil, err
		}
	}
	if o.plays(PartCPMSOperator) {
		if err := cpmsoperator.Setup(mgr, cpmsoperator.Options{Scale: scale, Log: o.Log}); err != nil {
			return nil, err
		}
		if o.PayloadWebhook {
			if err := cpmsoperator.SetupWebhook(mgr, cpmsoperator.WebhookOptions{Log: o.Log}); err != nil {
				return nil, err
			}
		}
	} else if o.PayloadWebhook {
		return nil, fmt.Errorf("ocpsim: PayloadWebhook needs the %s part played", PartCPMSOperator)
	}
	return &Sim{mgr: mgr}, nil
}

func ptrTrue() *bool { t := true; return &t }

// Run runs the simulator until ctx is cancelled.
func (s *Sim) Run(ctx context.Context) error { return s.mgr.Start(ctx) }

// Start runs the simulator in the background until ctx is cancelled or stop
// is called; stop waits for it to finish and returns what Run returned.
func (s *Sim) Start(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// Client is the simulator's cached client (useful for tests that already
// wait for the simulator's cache).
func (s *Sim) Client() client.Client { return s.mgr.GetClient() }

// InjectFault adds fault r to its object through c.
func InjectFault(ctx context.Context, c client.Client, r faults.Request) error {
	obj, err := objectFor(r.Kind)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: r.Namespace, Name: r.Name}
	if err := c.Get(ctx, key, obj); err != nil {
		return fmt.Errorf("fault %s/%s=%s: %w", r.Kind, r.Name, r.Fault, err)
	}
	orig := obj.DeepCopyObject().(client.Object)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[faults.Annotation] = faults.Add(a[faults.Annotation], r.Fault)
	obj.SetAnnotations(a)
	return c.Patch(ctx, obj, client.MergeFrom(orig))
}
