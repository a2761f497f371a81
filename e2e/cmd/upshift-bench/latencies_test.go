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

	// In order: Working, then the insight shows it; Rebooting folded into
	// the Done write.
	l.nodeChanged("a", "Working", at(0))
	l.insightChanged("a", true, at(300))
	l.nodeChanged("a", "Rebooting", at(1000))
	l.nodeChanged("a", "Done", at(2000))
	l.insightChanged("a", false, at(2500))
	// Out of order: b's insight shows Done before the bench sees Done.
	l.nodeChanged("b", "Working", at(0))
	l.insightChanged("b", true, at(100))
	l.insightChanged("b", false, at(900))
	l.nodeChanged("b", "Done", at(1000))
	// An insight update that shows nothing new for c's pending change.
	l.nodeChanged("c", "Working", at(0))
	l.insightChanged("c", false, at(50))

	if got := l.transitions(); got != 6 {
		t.Errorf("transitions = %d, want 6", got)
	}
	if got := l.count(); got != 4 {
		t.Errorf("samples = %d, want 4 (a's three and b's Working)", got)
	}
	if got := l.earlyCount(); got != 1 {
		t.Errorf("early = %d, want 1 (b's Done)", got)
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
