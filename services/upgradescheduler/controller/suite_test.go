package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "upgrade-scheduler: UpgradeConfig API and controller")
}

var env *testenv.Env

// registry is where every scheduler the suite starts keeps its metrics (one
// at a time runs, as one runs in a cluster), and what the metrics specs
// scrape.
var (
	registry         = prometheus.NewRegistry()
	schedulerMetrics = metrics.New(registry)
)

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	cluster, err := simcluster.Start(ctx, simcluster.Options{ControlPlane: testenv.Options{AuditLog: true, Alertmanager: true}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	env = cluster.Env
}, NodeTimeout(2*time.Minute))
