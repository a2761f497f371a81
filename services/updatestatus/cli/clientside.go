package cli

import (
	"context"
	"fmt"
	"net/http"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/optionalkind"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// The client-side source assesses the cluster here, from its own OpenShift
// objects, with the code the controller runs (assess), so that it works on a
// cluster without Upshift. It reads, once each and all at the same time:
//
//   - the ClusterVersion "version" and every ClusterOperator;
//   - every MachineConfigPool, and every MachineConfig's metadata: the
//     assessment reads of a config only the release version annotation
//     (the configs' own contents are large), and the controller reads them
//     the same way;
//   - every Node, in one list in protobuf, the smallest and fastest encoding
//     the API server has for them (see readNodes for why one list);
//   - the machine-config-operator Deployment's image, when the
//     machine-config ClusterOperator reports an operator image to compare
//     it with; unreadable, the check is not made (MCOImageUnknown), as in
//     the controller;
//   - node-gate's MutexRunConfigs when node-gate is installed (its CRD is
//     served), so that pools it holds are reported as gated;
//   - the alerts, as `oc adm upgrade status` reads them (clientalerts.go).

// liveSnapshot is an assessment's input read from a cluster, and oc's
// notice when the alerts could not be read ("" when they were).
type liveSnapshot struct {
	snap         assess.Snapshot
	alertsNotice string
}

// readLive reads the assessment's input from the cluster; now is the
// assessment's time.
func readLive(ctx context.Context, cl clusterClients, now time.Time) (liveSnapshot, error) {
	var live liveSnapshot
	s := &live.snap
	s.Now, s.WallClock = now, now

	var (
		cv      configv1.ClusterVersion
		cos     configv1.ClusterOperatorList
		pools   mcfgv1.MachineConfigPoolList
		mcs     metav1.PartialObjectMetadataList
		runs    nodegatev1alpha1.MutexRunConfigList
		nodes   *corev1.NodeList
		mcoRead mcoDeploymentRead
		alerts  alertsRead
	)
	mcs.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigList"))
	server := cl.cfg.Host
	reads := []func(context.Context) error{
		func(ctx context.Context) error {
			err := cl.c.Get(ctx, client.ObjectKey{Name: "version"}, &cv)
			if apierrors.IsNotFound(err) && !optionalkind.NotServed(err) {
				return fmt.Errorf("%w: there is no ClusterVersion %q on %s", assess.ErrNoClusterVersion, "version", server)
			}
			return platformErr(err, "ClusterVersion", configv1.GroupVersion, server)
		},
		func(ctx context.Context) error {
			return platformErr(cl.c.List(ctx, &cos), "ClusterOperator", configv1.GroupVersion, server)
		},
		func(ctx context.Context) error {
			return platformErr(cl.c.List(ctx, &pools), "MachineConfigPool", mcfgv1.GroupVersion, server)
		},
		func(ctx context.Context) error {
			return platformErr(cl.c.List(ctx, &mcs), "MachineConfig", mcfgv1.GroupVersion, server)
		},
		func(ctx context.Context) error {
			var err error
			nodes, err = cl.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return platformErr(err, "Node", corev1.SchemeGroupVersion, server)
		},
		func(ctx context.Context) error {
			// Optional: without node-gate there are no runs (nil).
			err := cl.c.List(ctx, &runs)
			if meta.IsNoMatchError(err) || optionalkind.NotServed(err) {
				runs.Items = nil
				return nil
			}
			return platformErr(err, "MutexRunConfig", nodegatev1alpha1.GroupVersion, server)
		},
		func(ctx context.Context) error {
			mcoRead = readMCODeployment(ctx, cl.kube)
			return nil
		},
		func(ctx context.Context) error {
			alerts = readAlerts(ctx, cl)
			return nil
		},
	}
	if err := all(ctx, reads); err != nil {
		return live, err
	}

	s.ClusterVersion = &cv
	s.ClusterOperators = cos.Items
	s.MachineConfigPools = pools.Items
	s.MachineConfigs = make([]mcfgv1.MachineConfig, len(mcs.Items))
	for i := range mcs.Items {
		s.MachineConfigs[i].ObjectMeta = mcs.Items[i].ObjectMeta
	}
	s.Nodes = make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		s.Nodes[i] = &nodes.Items[i]
	}
	s.NodeGateRuns = runs.Items
	s.MCOImage, s.MCOImageUnknown = mcoRead.image(s.ClusterOperators)
	s.Alerts = alerts.alerts
	if alerts.err != nil {
		live.alertsNotice = alertsNotice(alerts.err)
	}
	return live, nil
}

// all runs the reads at the same time and returns the first error, after
// every read ended; the first failure cancels the others.
func all(ctx context.Context, reads []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(reads))
	for _, read := range reads {
		go func() { errs <- read(ctx) }()
	}
	var first error
	for range reads {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// mcoDeploymentRead is the outcome of reading the MCO Deployment.
type mcoDeploymentRead struct {
	img   string
	known bool
}

func readMCODeployment(ctx context.Context, kube kubernetes.Interface) mcoDeploymentRead {
	d, err := kube.AppsV1().Deployments(assess.MCONamespace).Get(ctx, assess.MCODeployment, metav1.GetOptions{})
	if err != nil {
		return mcoDeploymentRead{}
	}
	img, known := assess.DeploymentMCOImage(d)
	return mcoDeploymentRead{img: img, known: known}
}

// image is the MCO image for the snapshot: (image, unknown). Like the
// controller, the image counts only while the machine-config operator
// reports an operator image to compare it with; otherwise it is unknown and
// the check is not made.
func (m mcoDeploymentRead) image(cos []configv1.ClusterOperator) (string, bool) {
	for i := range cos {
		if cos[i].Name != "machine-config" {
			continue
		}
		for _, v := range cos[i].Status.Versions {
			if v.Name == "operator-image" {
				return m.img, !m.known
			}
		}
	}
	return "", true
}

// platformErr explains a failed read of one of OpenShift's kinds; nil for
// nil.
func platformErr(err error, kind string, gv schema.GroupVersion, server string) error {
	if err == nil {
		return nil
	}
	if meta.IsNoMatchError(err) || optionalkind.NotServed(err) {
		return fmt.Errorf("%s (%s) is not served by %s: is it an OpenShift 4 cluster?", kind, gv.String(), server)
	}
	return explain(err, kind, server)
}

// newKubeClient is the client of Nodes and the Deployment, in protobuf,
// over the run's HTTP client.
func newKubeClient(cfg *rest.Config, hc *http.Client) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return kubernetes.NewForConfigAndClient(cfg, hc)
}
