package plan

import (
	"testing"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

func TestDerivePhase(t *testing.T) {
	const (
		idle        = nodegatev1alpha1.RunIdle
		blocked     = nodegatev1alpha1.RunBlocked
		waiting     = nodegatev1alpha1.RunWaiting
		progressing = nodegatev1alpha1.RunProgressing
		paused      = nodegatev1alpha1.RunPaused
		restoring   = nodegatev1alpha1.RunRestoring
		completed   = nodegatev1alpha1.RunCompleted
		aborted     = nodegatev1alpha1.RunAborted
	)
	round := facts{armed: true, roundOpen: true}
	with := func(f facts, change func(*facts)) facts { change(&f); return f }
	cases := []struct {
		name     string
		prev     nodegatev1alpha1.RunPhase
		hadRound bool
		f        facts
		want     nodegatev1alpha1.RunPhase
	}{
		{"deleted, whatever else holds", progressing, true, facts{deleting: true, blocked: true, aborted: true}, restoring},
		{"blocked before anything else", progressing, true, facts{blocked: true, aborted: true, armed: true}, blocked},
		{"aborted and unchanged", aborted, true, facts{aborted: true}, aborted},
		{"aborted in this pass", progressing, true, with(round, func(f *facts) { f.aborted, f.paused = true, true }), aborted},
		{"nothing in play, restore unfinished", progressing, true, facts{}, restoring},
		{"nothing in play after the round's restore", restoring, true, facts{restored: true}, completed},
		{"restored without a round is idle", restoring, false, facts{restored: true}, idle},
		{"completed stays completed", completed, true, facts{restored: true}, completed},
		{"unblocked with nothing in play", blocked, true, facts{restored: true}, idle},
		{"resumed abort with nothing in play", aborted, true, facts{restored: true}, idle},
		{"held for the control plane", idle, false, facts{armed: true, controlPlane: true}, waiting},
		{"passed while the control plane updates", progressing, true, facts{armed: true, controlPlane: true, restored: true}, waiting},
		{"newer content during the round", progressing, true, facts{armed: true, newRound: true}, progressing},
		{"round done and restored", progressing, true, facts{armed: true, restored: true}, completed},
		{"round done, restoring", progressing, true, facts{armed: true}, restoring},
		{"paused over waiting", progressing, true, with(round, func(f *facts) { f.paused, f.waiting = true, true }), paused},
		{"waiting with nothing in flight", progressing, true, with(round, func(f *facts) { f.waiting = true }), waiting},
		{"progressing", waiting, true, round, progressing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := derivePhase(c.prev, c.hadRound, c.f); got != c.want {
				t.Errorf("derivePhase(%q, %v, %+v) = %q, want %q", c.prev, c.hadRound, c.f, got, c.want)
			}
		})
	}
}
