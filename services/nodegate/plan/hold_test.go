package plan

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// updatingWorld: an update to 4.16.0 is requested, the control plane is
// still updating (ClusterVersion Partial), and the MCO has rendered the
// worker pool's and (once node-gate created it) the gate pool's target for
// release.
func updatingWorld(t *testing.T, hold nodegatev1alpha1.HoldUntil, release string) *world {
	w := newWorld(t, 3)
	w.run.Spec.HoldUntil = hold
	w.startUpdate("4.16.0")
	w.reconcile()
	w.renderRelease(release)
	w.reconcile() // the round starts and the gate pool is created
	w.render()
	return w
}

// With holdUntil Rendered (the default) gated nodes start as soon as every
// gated pool and its gate pool target the requested release, while the
// control plane is still updating, as the MCO would update them ungated.
// With ControlPlaneUpdated nothing starts until ClusterVersion completed.
func TestHoldUntil(t *testing.T) {
	t.Run("Rendered releases during the control-plane update", func(t *testing.T) {
		w := updatingWorld(t, "", "4.16.0")
		r := w.reconcile()
		if len(actionsOf(r, CreateJob)) == 0 && len(w.jobs) == 0 {
			t.Fatalf("no pre-update hook started although the pools rendered 4.16.0: %+v, progressing %+v", r.Actions, w.cond(CondProgressing))
		}
		for i := 0; i < 10 && w.rec("w00").Phase != nodegatev1alpha1.NodeReleased; i++ {
			w.completeAll()
			w.reconcile()
		}
		if w.rec("w00").Phase != nodegatev1alpha1.NodeReleased || !w.released("w00") || w.pools["worker"].Spec.Paused {
			t.Fatalf("w00 %s, released %v, worker paused %v: want released into the running worker pool before the control plane finished",
				w.rec("w00").Phase, w.released("w00"), w.pools["worker"].Spec.Paused)
		}
		w.mco()
		w.mco()
		if got := w.nodes["w00"].Annotations[mcostate.CurrentConfig]; got != rendered("worker", "4.16.0") {
			t.Fatalf("w00 runs %s", got)
		}
		// Every node passes before the control plane completes: the pools
		// stay paused (it may still render) until it does.
		for i := 0; i < 100 && w.run.Status.Summary.Succeeded < 3; i++ {
			w.completeAll()
			w.mco()
			w.now = w.now.Add(time.Minute)
			w.reconcile()
		}
		if w.run.Status.Summary.Succeeded != 3 {
			t.Fatalf("not every node passed: %+v", w.run.Status.Summary)
		}
		w.reconcile()
		if w.run.Status.Phase != nodegatev1alpha1.RunWaiting || !w.pools["worker"].Spec.Paused {
			t.Fatalf("phase %s, worker paused %v: want Waiting with the pool paused until the control plane completes", w.run.Status.Phase, w.pools["worker"].Spec.Paused)
		}
		w.finishControlPlane()
		w.driveToEnd()
		if w.pools["worker"].Spec.Paused {
			t.Fatal("worker pool left paused")
		}
	})
	t.Run("ControlPlaneUpdated holds until ClusterVersion completed", func(t *testing.T) {
		w := updatingWorld(t, nodegatev1alpha1.HoldUntilControlPlaneUpdated, "4.16.0")
		for i := 0; i < 5; i++ {
			r := w.reconcile()
			if len(actionsOf(r, CreateJob)) != 0 || len(releaseActions(r)) != 0 {
				t.Fatalf("pass %d started a node while the control plane updates: %+v", i, r.Actions)
			}
			w.mco()
		}
		if c := w.cond(CondProgressing); c == nil || c.Reason != ReasonControlPlane {
			t.Fatalf("progressing %+v, want %s", c, ReasonControlPlane)
		}
		if !w.pools["worker"].Spec.Paused || !w.pools["worker-gate"].Spec.Paused {
			t.Fatal("worker or gate pool unpaused while the control plane updates")
		}
		w.finishControlPlane()
		if r := w.reconcile(); len(actionsOf(r, CreateJob)) == 0 {
			t.Fatalf("nothing started once the control plane completed: %+v", r.Actions)
		}
	})
	for _, tc := range []struct{ name, release, want string }{
		// A render for the release the cluster leaves (the MCO re-rendering
		// before its templates moved on) is not the requested one.
		{"a render for another release holds", "4.15.9", `rendered for 4.15.9, not yet for 4.16.0`},
		// A target without a known release holds until the control plane
		// completes: node-gate cannot tell it is the final one.
		{"a render of no known release holds", "", `rendered for no known release, not yet for 4.16.0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := updatingWorld(t, "", tc.release)
			if tc.release == "" {
				// rendered-worker- names no release in the harness.
				for _, p := range []string{"worker", "worker-gate"} {
					w.pools[p].Spec.Configuration.Name = "rendered-" + p + "-"
				}
			}
			r := w.reconcile()
			if len(actionsOf(r, CreateJob)) != 0 {
				t.Fatalf("a node started: %+v", r.Actions)
			}
			c := w.cond(CondProgressing)
			if c == nil || c.Reason != ReasonControlPlane || !strings.Contains(c.Message, tc.want) {
				t.Fatalf("progressing %+v, want %s saying %q", c, ReasonControlPlane, tc.want)
			}
			w.finishControlPlane()
			r = w.reconcile()
			if tc.release == "" {
				// Outside an update an unknown release holds nothing.
				if len(actionsOf(r, CreateJob)) == 0 {
					t.Fatalf("nothing started once the control plane completed: %+v", r.Actions)
				}
				return
			}
			// The cluster runs 4.16.0, the pools target 4.15.9: a view
			// behind the render (or a render the MCO has not done) holds.
			if c := w.cond(CondProgressing); len(actionsOf(r, CreateJob)) != 0 || c.Reason != ReasonNotRendered {
				t.Fatalf("started on pools rendered for another release: %+v, progressing %+v", r.Actions, c)
			}
			w.renderRelease("4.16.0")
			if r := w.reconcile(); len(actionsOf(r, CreateJob)) == 0 {
				t.Fatalf("nothing started once the pools rendered 4.16.0: %+v", r.Actions)
			}
		})
	}
}

// A re-render while a node's pre-update hooks ran, or after it was released
// and before the MCO started it, takes it back: held again, its pre-update
// hooks run again for the new target (a new attempt, a new Job), and only
// then is it released; the source pool is paused until it is held.
func TestRerenderReholdsAdmittedNodes(t *testing.T) {
	const next = "4.16.0-mc2"
	t.Run("released, not started by the MCO", func(t *testing.T) {
		w := readyRound(t, 2, nil)
		for i := 0; i < 20 && w.rec("w00").Phase != nodegatev1alpha1.NodeReleased; i++ {
			w.completeAll()
			w.reconcile()
		}
		if !w.released("w00") {
			t.Fatalf("setup: w00 %s still held", w.rec("w00").Phase)
		}
		before := w.rec("w00").Hooks[0].Attempts
		w.renderRelease(next)
		r := w.reconcile()
		rec := w.rec("w00")
		if rec.Phase != nodegatev1alpha1.NodePreHooks || rec.HooksTarget != rendered("worker", next) || rec.ReleasedTime != nil {
			t.Fatalf("w00 %+v, want back in PreHooks for %s", rec, rendered("worker", next))
		}
		if w.released("w00") || !hasEvent(r, "GateRetargeted") {
			t.Fatalf("want w00 held again and a GateRetargeted event: %+v %+v", r.Actions, r.Events)
		}
		jobs := actionsOf(r, CreateJob)
		if len(jobs) != 1 || rec.Hooks[0].Attempts != before+1 {
			t.Fatalf("want one new attempt of the first hook (attempts %d → %d): %+v", before, rec.Hooks[0].Attempts, jobs)
		}
		if !w.pools["worker"].Spec.Paused {
			t.Fatal("worker pool running while node-gate holds w00 again")
		}
		if w.mco(); w.nodes["w00"].Annotations[mcostate.DesiredConfig] != rendered("worker", "4.15.0") {
			t.Fatalf("w00 given %s", w.nodes["w00"].Annotations[mcostate.DesiredConfig])
		}
		w.driveToEnd()
	})
	t.Run("pre-update hooks running", func(t *testing.T) {
		w := readyRound(t, 2, nil)
		if w.rec("w00").Phase != nodegatev1alpha1.NodePreHooks || len(w.runningJobs()) != 1 {
			t.Fatalf("setup: w00 %s, jobs %v", w.rec("w00").Phase, w.runningJobs())
		}
		w.renderRelease(next)
		// The running hook is not doubled: it finishes first.
		if r := w.reconcile(); len(actionsOf(r, CreateJob)) != 0 {
			t.Fatalf("a second Job while the first runs: %+v", r.Actions)
		}
		var started []string
		for i := 0; i < 20 && w.rec("w00").Phase == nodegatev1alpha1.NodePreHooks; i++ {
			w.completeAll()
			r := w.reconcile()
			for _, a := range actionsOf(r, CreateJob) {
				started = append(started, a.Job.Labels[HookLabel])
			}
		}
		// job ran on for the old target (started before the render); no
		// fence for it: job and fence for the new one only.
		if strings.Join(started, ",") != "job,fence" {
			t.Fatalf("hooks started %v, want job,fence", started)
		}
		if rec := w.rec("w00"); rec.Phase != nodegatev1alpha1.NodeReleased || rec.HooksTarget != rendered("worker", next) {
			t.Fatalf("w00 %+v", rec)
		}
	})
}

// A pre-update hook that fails after its pool rendered new content ran
// for content the node will not get: it neither pauses the run nor is
// tried again for it; every hook runs again for the new content.
func TestStaleHookFailureRunsTheHooksAgain(t *testing.T) {
	const next = "4.16.0-mc2"
	w := readyRound(t, 2, nil)
	running := w.runningJobs()
	if w.rec("w00").Phase != nodegatev1alpha1.NodePreHooks || len(running) != 1 {
		t.Fatalf("setup: w00 %s, jobs %v", w.rec("w00").Phase, running)
	}
	w.renderRelease(next)
	w.setJob(running[0], batchv1.JobFailed)
	r := w.reconcile()
	if w.run.Status.PausedGeneration != 0 || hasEvent(r, ReasonHookFailed) || hasEvent(r, "HookRetried") {
		t.Fatalf("a stale hook's failure paused or retried: paused generation %d, events %+v", w.run.Status.PausedGeneration, r.Events)
	}
	rec := w.rec("w00")
	jobs := actionsOf(r, CreateJob)
	if rec.Phase != nodegatev1alpha1.NodePreHooks || rec.HooksTarget != rendered("worker", next) || !hasEvent(r, "GateRetargeted") ||
		len(jobs) != 1 || jobs[0].Job.Labels[HookLabel] != "job" || envOf(jobs[0].Job, EnvTargetConfig) != rendered("worker", next) {
		t.Fatalf("want w00's first hook again for %s: %+v, actions %+v", rendered("worker", next), rec, r.Actions)
	}
	w.driveToEnd()
}

// An older status (no hooksTarget) is never taken as retargeted.
func TestNoHooksTargetIsCurrent(t *testing.T) {
	w := readyRound(t, 2, nil)
	w.setRec("w00", func(r *nodegatev1alpha1.NodeRecord) { r.HooksTarget = "" })
	w.renderRelease("4.16.0-mc2")
	w.now = w.now.Add(time.Minute)
	if r := w.reconcile(); hasEvent(r, "GateRetargeted") {
		t.Fatalf("retargeted without a recorded target: %+v", r.Events)
	}
}
