package drain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

func reasons(r Result) []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Reason)
	}
	return out
}

// The drain's Events are its transitions: DrainBlocked once per request,
// when forcing starts, and DrainCompleted only after pods were forced.
func TestDrainEvents(t *testing.T) {
	run := &corev1.ConfigMap{}
	n := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	db := pod("db", "db-0", map[string]string{"app": "db"})
	i := in(t0, n, nil, db)
	i.Related = run
	r := Decide(i)
	if len(r.Events) != 0 || r.Recheck != Recheck {
		t.Fatalf("before the timeout: events %v, recheck %v", reasons(r), r.Recheck)
	}

	i = in(t0.Add(time.Hour), n, r.Record, db)
	i.Related = run
	r = Decide(i)
	if len(r.Events) != 1 || r.Events[0].Reason != "DrainBlocked" || !r.Events[0].Warning || r.Events[0].Regarding != n || r.Events[0].Related != run ||
		r.Events[0].Note != "the drain of node w1 has been blocked for 1h0m0s by [db/db-0 (PodDisruptionBudgets [db-pdb])]: forcing its pods off as their timeouts pass" {
		t.Fatalf("at the timeout: %+v", r.Events)
	}
	// Forcing goes on in the next passes: not blocked again.
	i = in(t0.Add(time.Hour+3*time.Minute), n, r.Record, db)
	i.Related = run
	r = Decide(i)
	if !r.Blocked || len(r.Events) != 0 {
		t.Fatalf("escalating: blocked %v, events %v", r.Blocked, reasons(r))
	}

	// The MCO finished the drain (it applied the request): completed, after
	// forcing.
	done := drainingNode("drain-rendered-x", "drain-rendered-x")
	i = in(t0.Add(2*time.Hour), done, r.Record)
	i.Related = run
	r = Decide(i)
	if !r.Completed || len(r.Events) != 1 || r.Events[0].Reason != "DrainCompleted" || r.Events[0].Warning || r.Recheck != 0 ||
		r.Events[0].Note != "the drain of node w1 finished after node-gate forced 1 pods" {
		t.Fatalf("completed: %v %+v recheck %v", r.Completed, r.Events, r.Recheck)
	}
}

// A forced step is told on the pod and on its node, each naming the other.
func TestActionEvents(t *testing.T) {
	evs := ActionEvents("w1", Action{Step: commonv1alpha1.DrainStepForceDelete, Namespace: "db", Name: "db-0", UID: "u", Message: "deleting pod db/db-0 with grace period 0"})
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	pod, node := evs[0], evs[1]
	if pod.Reason != "DrainForceDelete" || node.Reason != pod.Reason || !pod.Warning || pod.Action != "ForceDrain" ||
		pod.Regarding.(*corev1.Pod).Name != "db-0" || pod.Related.(*corev1.Node).Name != "w1" ||
		node.Regarding.(*corev1.Node).Name != "w1" || node.Related.(*corev1.Pod).UID != "u" || node.Note != pod.Note {
		t.Fatalf("events %+v", evs)
	}
}
