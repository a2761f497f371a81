package alerts

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestReadsKeepsAGoodReadForFreshAndAFailedOneForFailed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	var reads int
	fail := false
	read := func(context.Context) (int, error) {
		reads++
		if fail {
			return reads, errors.New("alertmanager is starting")
		}
		return reads, nil
	}
	var r Reads[int]
	get := func(key any) (int, error) { return r.Get(context.Background(), clk, key, read) }
	start := clk.Now()

	for _, at := range []time.Duration{0, time.Second, FreshRead - time.Millisecond} {
		clk.SetTime(start.Add(at))
		if v, err := get(nil); v != 1 || err != nil {
			t.Fatalf("at +%v: read %d (%v), want the first read kept", at, v, err)
		}
	}
	clk.SetTime(start.Add(FreshRead))
	if v, _ := get(nil); v != 2 {
		t.Fatalf("after FreshRead: read %d, want a new read", v)
	}
	if v, _ := get("another configuration"); v != 3 {
		t.Fatalf("for another key: read %d, want a new read", v)
	}

	// A failed read is kept for Recheck (the zero Failed), errors included.
	fail = true
	clk.SetTime(start.Add(2 * FreshRead))
	failedAt := clk.Now()
	if _, err := get(nil); err == nil || reads != 4 {
		t.Fatalf("read %d, err %v: want a failed fourth read", reads, err)
	}
	fail = false
	for _, at := range []time.Duration{FreshRead, Recheck - time.Millisecond} {
		clk.SetTime(failedAt.Add(at))
		if v, err := get(nil); v != 4 || err == nil {
			t.Fatalf("+%v after a failed read: read %d (%v), want the failure kept", at, v, err)
		}
	}
	clk.SetTime(failedAt.Add(Recheck))
	if v, err := get(nil); v != 5 || err != nil {
		t.Fatalf("Recheck after a failed read: read %d (%v), want a new good read", v, err)
	}
}
