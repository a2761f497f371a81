package apitest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/upshift-io/upshift/libs/testenv"
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "UpgradeConfig API")
}

var env *testenv.Env

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = testenv.Start(ctx, testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
}, NodeTimeout(2*time.Minute))
