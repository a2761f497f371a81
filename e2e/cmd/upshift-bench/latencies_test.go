package main

import (
	"testing"
	"time"
)

// TestLatencies pairs node changes with the insight updates that show them,
// in both orders the bench's two watches can deliver them.
func TestLatencies(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := newLatencies()

	for _, n := range []string{"a", "b", "c", "d"} {
		l.insightSeen(n, false)
	}
	// In order: Working, then the insight shows it; Rebooting folded into
	// the Done write.
	l.nodeChanged("a", "Done", "Working", at(0))
	l.insightChanged("a", true, at(300))
	l.nodeChanged("a", "Working", "Rebooting", at(1000))
	l.nodeChanged("a", "Rebooting", "Done", at(2000))
	l.insightChanged("a", false, at(2500))
	// Out of order: b's insight shows Done before the bench sees Done.
	l.nodeChanged("b", "Done", "Working", at(0))
	l.insightChanged("b", true, at(100))
	l.insightChanged("b", false, at(900))
	l.nodeChanged("b", "Working", "Done", at(1000))
	// An insight update that shows nothing new for c's pending change.
	l.nodeChanged("c", "Done", "Working", at(0))
	l.insightChanged("c", false, at(50))
	// d's insight shows it updating (Draining: its desired config changed
	// while its MCD still said Done) before its first change, to Working:
	// early, not paired with the insight's next update (the drain's end).
	l.insightChanged("d", true, at(0))
	l.nodeChanged("d", "Done", "Working", at(200))
	l.insightChanged("d", true, at(3000))
	// e's insight already showed it updating when the bench's watch
	// listed it.
	l.insightSeen("e", true)
	l.nodeChanged("e", "Done", "Working", at(0))

	if got := l.transitions(); got != 8 {
		t.Errorf("transitions = %d, want 8", got)
	}
	if got := l.count(); got != 4 {
		t.Errorf("samples = %d, want 4 (a's three and b's Working)", got)
	}
	if got := l.earlyCount(); got != 3 {
		t.Errorf("early = %d, want 3 (b's Done, d's and e's Working)", got)
	}
	if got := l.pendingCount(); got != 1 {
		t.Errorf("pending = %d, want 1 (c's Working)", got)
	}
	var want = map[time.Duration]bool{300 * time.Millisecond: true, 1500 * time.Millisecond: true,
		500 * time.Millisecond: true, 100 * time.Millisecond: true}
	for _, s := range l.samples {
		if !want[s.d] {
			t.Errorf("unexpected latency %s of the change at %s", s.d, s.at.Sub(t0))
		}
	}
}
