package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// TestSeedAndFaultAgainstAPIServer runs the seed, fault and run commands
// against a real apiserver (skipped when the test binaries are not built).
func TestSeedAndFaultAgainstAPIServer(t *testing.T) {
	if dir, err := testenv.TestBinDir(); err != nil {
		t.Skip(err)
	} else if _, err := os.Stat(dir); err != nil {
		t.Skipf("no test binaries in %s (run `make testbin` or set %s)", dir, testenv.EnvTestBin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A bare control plane: the commands under test seed and simulate it.
	cluster, err := simcluster.Start(ctx, simcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	env := cluster.Env
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"seed", "--kubeconfig", env.KubeconfigPath, "--masters", "3", "--workers", "4", "--version", "4.17.2"}, &out, &errb); err != nil {
		t.Fatalf("seed: %v (%s)", err, errb.String())
	}
	if !strings.Contains(out.String(), "seeded OpenShift 4.17.2 (stable-4.17)") || !strings.Contains(out.String(), "7 nodes (3 control plane)") {
		t.Errorf("seed output: %s", out.String())
	}
	var cv configv1.ClusterVersion
	if err := env.Client.Get(ctx, types.NamespacedName{Name: "version"}, &cv); err != nil {
		t.Fatal(err)
	}
	if cv.Status.Desired.Version != "4.17.2" || len(cv.Status.AvailableUpdates) != 2 {
		t.Errorf("cluster version status: %+v", cv.Status)
	}
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes); err != nil || len(nodes.Items) != 7 {
		t.Fatalf("nodes: %d, %v", len(nodes.Items), err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"fault", "--kubeconfig", env.KubeconfigPath, "node/ocp-master-0=NeverReady", "clusteroperator/etcd=Degraded"}, &out, &errb); err != nil {
		t.Fatalf("fault: %v", err)
	}
	var co configv1.ClusterOperator
	if err := env.Client.Get(ctx, types.NamespacedName{Name: "etcd"}, &co); err != nil || !faults.Has(co.Annotations, faults.OperatorDegraded) {
		t.Errorf("fault not on etcd: %v %v", co.Annotations, err)
	}
	if err := run(context.Background(), []string{"fault", "--kubeconfig", env.KubeconfigPath, "node/nope=NeverReady"}, &out, &errb); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("fault on a missing node: %v", err)
	}

	// ocpsim run: the etcd operator reports the injected Degraded fault, and
	// a --fault flag is applied at start; cancelling the context stops it.
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() {
		done <- run(runCtx, []string{"run", "--kubeconfig", env.KubeconfigPath, "--time-scale", "600", "--log-format", "json", "--fault", "clusteroperator/dns=Unavailable"}, &out, &logs)
	}()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		var etcdCO, dns configv1.ClusterOperator
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "etcd"}, &etcdCO)).To(Succeed())
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "dns"}, &dns)).To(Succeed())
		g.Expect(condIs(etcdCO.Status.Conditions, configv1.OperatorDegraded, configv1.ConditionTrue)).To(BeTrue(), "etcd Degraded")
		g.Expect(condIs(dns.Status.Conditions, configv1.OperatorAvailable, configv1.ConditionFalse)).To(BeTrue(), "dns unavailable")
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	stopRun()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ocpsim run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("ocpsim run did not stop after cancellation")
	}
	if !strings.Contains(logs.String(), "simulating cluster-version-operator") {
		t.Errorf("run did not log what it simulates: %.500s", logs.String())
	}
}

func condIs(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType, s configv1.ConditionStatus) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == s
		}
	}
	return false
}
