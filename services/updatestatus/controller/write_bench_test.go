package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/updatestatus/render"
)

// The write path's own cost, per write, without an API server's: the
// client's encoding of what is applied and its decoding of the answer,
// against a server that answers each apply with the body it was sent. A node
// insight is written per node change (5,000 on a first start), the status
// once per recomputation.
//
//	go test ./controller/ -run '^$' -bench 'Write' -benchmem

// echoClient is a client whose every request is answered with its body.
func echoClient(b *testing.B) client.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(updatev1alpha1.GroupVersion.WithKind("NodeProgressInsight"), meta.RESTScopeRoot)
	mapper.Add(updatev1alpha1.GroupVersion.WithKind("UpgradeStatus"), meta.RESTScopeRoot)
	c, err := client.New(&rest.Config{Host: srv.URL, QPS: 1e6, Burst: 1e6}, client.Options{Scheme: scheme.New(), Mapper: mapper})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// drainingStatus is the status of the insight of a node being drained
// since t.
func drainingStatus(name string, t metav1.Time) updatev1alpha1.NodeStatusInsight {
	return updatev1alpha1.NodeStatusInsight{
		Name:         name,
		Resource:     updatev1alpha1.ResourceRef{Resource: "nodes", Name: name},
		PoolResource: updatev1alpha1.PoolResourceRef{ResourceRef: updatev1alpha1.ResourceRef{Group: "machineconfiguration.openshift.io", Resource: "machineconfigpools", Name: "worker"}},
		ScopeType:    updatev1alpha1.ScopeTypeWorkerPool, Version: "4.18.1",
		EstimatedToComplete: &metav1.Duration{Duration: 5 * time.Minute},
		Message:             "Node is being drained",
		Conditions: []metav1.Condition{
			{Type: updatev1alpha1.ConditionUpdating, Status: metav1.ConditionTrue, Reason: "Draining", Message: "Draining the node", LastTransitionTime: t},
			{Type: updatev1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: t},
			{Type: updatev1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: t},
		},
	}
}

// benchInsight is the insight of a node being drained, as the controller
// writes it.
func benchInsight(name string) *updatev1alpha1.NodeProgressInsight {
	st := drainingStatus(name, metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	w := nodeWrite{name: name, owner: metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: "0b6c1f1e-1111-2222-3333-444455556666"},
		labels: updatev1alpha1.NodeInsightLabels(&st), status: &st}
	return w.insight()
}

func BenchmarkWriteNodeInsight(b *testing.B) {
	c, ctx, m := echoClient(b), context.Background(), NewMetrics(prometheus.NewRegistry())
	in := benchInsight("worker-0042")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := publishNode(ctx, c, m, in.Name, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteStatus writes the status of an update of 5,000 nodes, with
// the report's node tables.
func BenchmarkWriteStatus(b *testing.B) {
	c, ctx, m := echoClient(b), context.Background(), NewMetrics(prometheus.NewRegistry())
	st := withConditions(status(true, updatev1alpha1.ControlPlaneAssessmentProgressing, "worker=Progressing", "infra=Completed"), &t0)
	nodes := make([]updatev1alpha1.NodeStatusInsight, 0, 5000)
	for i := range 5000 {
		phase := "Pending"
		if i%10 == 0 {
			phase = "Draining"
		}
		in := nodeInsight(fmt.Sprintf("worker-%04d", i), "worker", phase, i == 7)
		in.ScopeType = updatev1alpha1.ScopeTypeWorkerPool
		nodes = append(nodes, in)
	}
	st.ReportedNodes = render.Reported(st, nodes)
	us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName, ResourceVersion: "1"}, Status: st}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := applyUpgradeStatus(ctx, c, m, us); err != nil {
			b.Fatal(err)
		}
	}
}
