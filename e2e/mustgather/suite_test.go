// Package mustgather is the end-to-end suite of Upshift's must-gather: a real
// kube-apiserver with Upshift's CRDs and OpenShift's, a cluster seeded by
// ocpsim (ClusterVersion, ClusterOperators, pools, Nodes, Machines,
// MachineSets, the ControlPlaneMachineSet), ARO's Cluster, one object of
// every Upshift kind, a component pod with a restarted container, and
// Secrets holding sentinel values (the pull secret in openshift-config among
// them). The gatherer runs once as cluster-admin and once as a
// ServiceAccount that may read Upshift's objects only; the specs read the
// archives.
//
// No kubelet runs: a small HTTPS server plays the component's node for the
// apiserver (container logs, current and previous, as a kubelet serves
// them), and an HTTP server plays the component's metrics endpoint, at an
// address of this machine the apiserver's pod proxy accepts. Everything
// else is the apiserver's: the log and proxy subresources, RBAC, discovery.
//
// It costs one control plane without kube-controller-manager, scheduler or
// kwok, seeded once: about 10 s.
package mustgather

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMustGather(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	RunSpecs(t, "must-gather e2e")
}
