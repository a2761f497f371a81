package drain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

// MUO's classes: pods no PDB selects are forced after Timeout, the ones a
// PDB selects after PDBTimeout; with SkipGraceful the first step is the
// delete with grace period 0, as MUO's strategies delete.
func TestPolicyClassesAndFirstStep(t *testing.T) {
	n := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	db := pod("db", "db-0", map[string]string{"app": "db"})
	web := pod("web", "web-0", nil)
	muo := func(now time.Time, prev *commonv1alpha1.DrainRecord, pods ...corev1.Pod) Input {
		i := in(now, n, prev, pods...)
		i.Policy = Policy{Timeout: 45 * time.Minute, PDBTimeout: 68 * time.Minute, StepTimeout: time.Minute, SkipGraceful: true,
			Expected: 8 * time.Minute, Owner: "upgrade-scheduler", EventAction: "Upgrade"}
		return i
	}
	r := Decide(muo(t0, nil, db, web))
	if len(r.Actions) != 0 || r.Blocked || r.TimedOut || r.RequeueAfter != 45*time.Minute {
		t.Fatalf("at the start: %+v", r)
	}
	r = Decide(muo(t0.Add(45*time.Minute), r.Record, db, web))
	if len(r.Actions) != 1 || r.Actions[0].Name != "web-0" || r.Actions[0].Step != commonv1alpha1.DrainStepForceDelete ||
		r.Actions[0].GracePeriod == nil || *r.Actions[0].GracePeriod != 0 || !r.Blocked || r.TimedOut {
		t.Fatalf("at the timeout only the pod without a PDB, deleted with grace 0: %+v", r)
	}
	if len(r.Events) != 1 || r.Events[0].Reason != "DrainBlocked" || r.Events[0].Action != "Upgrade" {
		t.Fatalf("events %+v", r.Events)
	}
	// web-0 is gone. The PDB class still waits: the drain has not timed out, whatever
	// the expected drain time says.
	r = Decide(muo(t0.Add(60*time.Minute), r.Record, db))
	if r.TimedOut || len(r.Actions) != 0 {
		t.Fatalf("the PDB pod waits for its own timeout: %+v", r)
	}
	r = Decide(muo(t0.Add(68*time.Minute), r.Record, db))
	if len(r.Actions) != 1 || r.Actions[0].Name != "db-0" || r.Actions[0].Step != commonv1alpha1.DrainStepForceDelete || len(r.Events) != 0 {
		t.Fatalf("at the PDB timeout: %+v", r)
	}
	// db-0 stays (terminating, say, on a kubelet that is gone): timed out
	// the expected drain time after the last timeout.
	terminating := db.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: t0.Add(68 * time.Minute)}
	if r = Decide(muo(t0.Add(75*time.Minute), r.Record, *terminating)); r.TimedOut {
		t.Fatalf("timed out before 68+8 minutes")
	}
	if r = Decide(muo(t0.Add(76*time.Minute), r.Record, *terminating)); !r.TimedOut {
		t.Fatalf("not timed out at 68+8 minutes: %+v", r)
	}
}

// MUO's failed drain without a PDB pod: Timeout plus the expected time; with
// the strategies disabled, Timeout alone, and nothing is forced.
func TestTimedOut(t *testing.T) {
	n := drainingNode("drain-rendered-x", "uncordon-rendered-old")
	web := pod("web", "web-0", nil)
	start := &commonv1alpha1.DrainRecord{Request: "drain-rendered-x", StartTime: metav1.NewTime(t0)}
	for _, c := range []struct {
		name    string
		observe bool
		at      time.Duration
		want    bool
	}{
		{"before the timeout", false, 44 * time.Minute, false},
		{"forced, within the expected time", false, 52 * time.Minute, false},
		{"forced, past the expected time", false, 53 * time.Minute, true},
		{"observing, before the timeout", true, 44 * time.Minute, false},
		{"observing, at the timeout", true, 45 * time.Minute, true},
	} {
		i := in(t0.Add(c.at), n, start, web)
		i.Policy = Policy{Timeout: 45 * time.Minute, PDBTimeout: 68 * time.Minute, StepTimeout: time.Minute, SkipGraceful: true,
			Expected: 8 * time.Minute, ObserveOnly: c.observe}
		r := Decide(i)
		if r.TimedOut != c.want {
			t.Errorf("%s: timed out %v, want %v", c.name, r.TimedOut, c.want)
		}
		if c.observe && len(r.Actions) != 0 {
			t.Errorf("%s: forced %+v", c.name, r.Actions)
		}
		if !r.TimedOut && r.RequeueAfter <= 0 {
			t.Errorf("%s: no wake-up for the time out", c.name)
		}
	}
}
