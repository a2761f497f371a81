package ownwrite

import (
	"context"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	x := Expectations{Timeout: time.Minute}
	x.Created(cm("a", "u1", "10", false), now)
	ctx := context.Background()
	if wait, err := x.Wait(ctx, cacheView{}, now.Add(10*time.Second)); err != nil || wait != 50*time.Second {
		t.Fatalf("unmet: wait %v, err %v; want the time left to the deadline", wait, err)
	}
	if wait, err := x.Wait(ctx, cacheView{"a": cm("a", "u1", "10", false)}, now.Add(20*time.Second)); err != nil || wait != 0 {
		t.Fatalf("met: wait %v, err %v", wait, err)
	}
	x.Created(cm("b", "u2", "11", false), now)
	if wait, err := x.Wait(ctx, cacheView{}, now.Add(time.Minute)); err != nil || wait != 0 {
		t.Fatalf("expired: wait %v, err %v; planning goes ahead", wait, err)
	}
}
