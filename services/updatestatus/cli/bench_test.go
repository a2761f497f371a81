package cli

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/render"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

// largeSnapshot is a cluster of 3 masters and `workers` workers whose
// control plane has updated to 4.18.1 and whose workers update 10 % at a time.
func largeSnapshot(workers int) assess.Snapshot {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	cv.Status.Desired.Version = "4.18.1"
	done := ago(30 * time.Minute)
	cv.Status.History = []configv1.UpdateHistory{
		{State: configv1.CompletedUpdate, Version: "4.18.1", StartedTime: ago(2 * time.Hour), CompletionTime: &done},
		{State: configv1.CompletedUpdate, Version: "4.18.0", StartedTime: ago(100 * time.Hour), CompletionTime: &done},
	}
	cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, LastTransitionTime: done},
		{Type: "Failing", Status: configv1.ConditionFalse, LastTransitionTime: done},
	}
	s := assess.Snapshot{ClusterVersion: cv, Now: now}
	for i := 0; i < 33; i++ {
		co := configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("co-%02d", i),
			Annotations: map[string]string{"include.release.openshift.io/self-managed-high-availability": "true"}}}
		co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: "4.18.1"}}
		co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, LastTransitionTime: ago(time.Hour)},
			{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, LastTransitionTime: ago(time.Hour)},
			{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, LastTransitionTime: ago(time.Hour)},
		}
		s.ClusterOperators = append(s.ClusterOperators, co)
	}
	for _, p := range []struct{ name, config string }{{"master", "m-new"}, {"worker", "w-new"}} {
		pool := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
		pool.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + p.name: ""}}
		pool.Spec.Configuration.Name = p.config
		s.MachineConfigPools = append(s.MachineConfigPools, pool)
	}
	for name, v := range map[string]string{"m-old": "4.18.0", "m-new": "4.18.1", "w-old": "4.18.0", "w-new": "4.18.1"} {
		s.MachineConfigs = append(s.MachineConfigs, mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"machineconfiguration.openshift.io/release-image-version": v}}})
	}
	node := func(name, role, current, desired, state string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/" + role: ""},
			Annotations: map[string]string{"machineconfiguration.openshift.io/currentConfig": current,
				"machineconfiguration.openshift.io/desiredConfig": desired, "machineconfiguration.openshift.io/state": state}}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(10 * time.Hour)}}
		return n
	}
	for i := 0; i < 3; i++ {
		s.Nodes = append(s.Nodes, node(fmt.Sprintf("master-%d", i), "master", "m-new", "m-new", "Done"))
	}
	for i := 0; i < workers; i++ {
		name := fmt.Sprintf("ip-10-0-%d-%d.us-east-2.compute.internal", i/250, i%250)
		switch i % 10 {
		case 0, 1, 2, 3:
			s.Nodes = append(s.Nodes, node(name, "worker", "w-new", "w-new", "Done"))
		case 4:
			n := node(name, "worker", "w-old", "w-new", "Working")
			n.Spec.Unschedulable = true
			s.Nodes = append(s.Nodes, n)
		default:
			s.Nodes = append(s.Nodes, node(name, "worker", "w-old", "w-old", "Done"))
		}
	}
	return s
}

// BenchmarkOfflineStatus5000Nodes is `kubectl upshift status` in offline
// mode on a 5,000-worker cluster without reading files: assess, then render.
func BenchmarkOfflineStatus5000Nodes(b *testing.B) {
	s := largeSnapshot(5000)
	b.ReportAllocs()
	for b.Loop() {
		r, err := assess.AssessForDisplay(s)
		if err != nil {
			b.Fatal(err)
		}
		if err := render.Render(io.Discard, render.Input{Status: r.Status, Nodes: r.Nodes}, render.Options{Details: render.DetailsNone, Now: s.Now}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClusterStatus5000Nodes is `kubectl upshift status` in cluster
// mode against a real kube-apiserver holding the insights of the 5,000-worker
// cluster, labelled as the controller labels them. "tables": the
// UpgradeStatus carries the report's node tables, as the controller
// publishes it, and is all the report reads. "insight-table": it carries
// none, as an older controller published it, and the report also lists the
// insights as the API server's table and renders from its rows.
// It needs the test control plane (UPSHIFT_TESTBIN); it is a benchmark, so
// plain `go test` does not run it.
func BenchmarkClusterStatus5000Nodes(b *testing.B) {
	ctx := context.Background()
	cluster, err := simcluster.Start(ctx, simcluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Stop()
	env := cluster.Env
	s := largeSnapshot(5000)
	r, err := assess.Assess(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}}
	if err := env.Client.Create(ctx, us); err != nil {
		b.Fatal(err)
	}
	// Publish the node insights with a few writers, as the controller does.
	var g errgroup.Group
	g.SetLimit(8)
	for _, n := range r.Nodes {
		g.Go(func() error {
			return env.Client.Create(ctx, &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: updatev1alpha1.NodeInsightLabels(&n)}, Status: n})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	for _, tables := range []bool{true, false} {
		us.Status = r.Status
		if tables {
			us.Status.ReportedNodes = render.Reported(r.Status, r.Nodes)
		}
		if err := env.Client.Status().Update(ctx, us); err != nil {
			b.Fatal(err)
		}
		name := map[bool]string{true: "tables", false: "insight-table"}[tables]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := RunStatus(ctx, StatusOptions{Out: io.Discard, ErrOut: io.Discard,
					RESTConfig: func() (*rest.Config, error) { return env.Config, nil }}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
