package testenv_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/upshift-io/upshift/libs/testenv"
)

// The self-test proves the whole stack works: it fails, rather than skips,
// when any piece is missing.
func TestTestenv(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "testenv")
}

var env *testenv.Env

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	start := time.Now()
	env, err = testenv.Start(ctx, testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true, Alertmanager: true})
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("testenv start (etcd, kube-apiserver, CRDs, kube-controller-manager, kube-scheduler, kwok, alertmanager)",
		time.Since(start).Round(time.Millisecond).String())
	DeferCleanup(env.Stop)
}, NodeTimeout(3*time.Minute))
