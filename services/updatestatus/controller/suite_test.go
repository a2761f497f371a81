package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "update-status controller")
}

var env *testenv.Env

var _ = BeforeSuite(func(ctx context.Context) {
	// The controller's logs appear with a failing spec's output.
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	// kube-controller-manager for garbage collection of insights whose Node
	// goes, and nothing else: these Nodes have no kubelet, and nodelifecycle
	// would mark them unreachable.
	cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{ControllerManager: true, Controllers: []string{"garbagecollector"}}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env
}, NodeTimeout(3*time.Minute))
