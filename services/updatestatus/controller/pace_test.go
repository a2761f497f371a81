package controller

import (
	"context"
	"runtime"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// waitForTimer returns once the pacer waits on clk, failing t after a while.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the pacer never waited")
		}
		runtime.Gosched()
	}
}

func TestPacerWaitsAsLongAsTheLastRecomputationTook(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := &pacer{clock: clk}
	ctx := context.Background()

	if !p.begin(ctx) {
		t.Fatal("the first recomputation did not begin")
	}
	if clk.HasWaiters() {
		t.Fatal("the first recomputation waited")
	}
	clk.Step(300 * time.Millisecond) // it takes 300 ms
	p.end()

	began := make(chan bool, 1)
	go func() { began <- p.begin(ctx) }()
	waitForTimer(t, clk)
	clk.Step(299 * time.Millisecond)
	if !clk.HasWaiters() {
		t.Fatal("the next recomputation began 299 ms after one of 300 ms")
	}
	clk.Step(time.Millisecond)
	if !<-began {
		t.Fatal("begin reported a shutdown")
	}

	// One that ends as it begins holds the next back for nothing, and one
	// that begins long after the last ended does not wait either.
	p.end()
	if !p.begin(ctx) || clk.HasWaiters() {
		t.Fatal("a recomputation waited after one that took no time")
	}
	clk.Step(time.Second)
	p.end()
	clk.Step(time.Hour)
	if !p.begin(ctx) || clk.HasWaiters() {
		t.Fatal("a recomputation waited long after the last one")
	}
}

func TestPacerStopsWaitingAtShutdown(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := &pacer{clock: clk}
	p.begin(context.Background())
	clk.Step(time.Minute)
	p.end()

	ctx, cancel := context.WithCancel(context.Background())
	began := make(chan bool, 1)
	go func() { began <- p.begin(ctx) }()
	waitForTimer(t, clk)
	cancel()
	if <-began {
		t.Fatal("begin reported a start after its context ended")
	}
}
