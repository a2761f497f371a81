package pace

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

// beginsAfter checks that the next pass begins exactly d from now.
func beginsAfter(t *testing.T, clk *clocktesting.FakeClock, p *Pacer, d time.Duration) {
	t.Helper()
	began := make(chan bool, 1)
	go func() { began <- p.Begin(context.Background()) }()
	waitForTimer(t, clk)
	clk.Step(d - time.Millisecond)
	if !clk.HasWaiters() {
		t.Fatalf("the next pass began before %v", d)
	}
	clk.Step(time.Millisecond)
	if !<-began {
		t.Fatal("begin reported a shutdown")
	}
}

func TestPacerWaitsAsLongAsTheLastPassTook(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(clk, 0)
	ctx := context.Background()

	if !p.Begin(ctx) {
		t.Fatal("the first pass did not begin")
	}
	if clk.HasWaiters() {
		t.Fatal("the first pass waited")
	}
	clk.Step(300 * time.Millisecond) // it takes 300 ms
	p.End()
	beginsAfter(t, clk, p, 300*time.Millisecond)

	// One that ends as it begins holds the next back for nothing, and one
	// that begins long after the last ended does not wait either.
	p.End()
	if !p.Begin(ctx) || clk.HasWaiters() {
		t.Fatal("a pass waited after one that took no time")
	}
	clk.Step(time.Second)
	p.End()
	clk.Step(time.Hour)
	if !p.Begin(ctx) || clk.HasWaiters() {
		t.Fatal("a pass waited long after the last one")
	}
}

func TestPacerStopsWaitingAtShutdown(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(clk, 0)
	p.Begin(context.Background())
	clk.Step(time.Minute)
	p.End()

	ctx, cancel := context.WithCancel(context.Background())
	began := make(chan bool, 1)
	go func() { began <- p.Begin(ctx) }()
	waitForTimer(t, clk)
	cancel()
	if <-began {
		t.Fatal("begin reported a start after its context ended")
	}
}

func TestPacerKeepsPassesMinApart(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(clk, 500*time.Millisecond)

	// A pass of 10 ms: the next waits for the floor, not for 10 ms.
	p.Begin(context.Background())
	clk.Step(10 * time.Millisecond)
	p.End()
	beginsAfter(t, clk, p, 490*time.Millisecond)

	// A pass longer than the floor: the next waits as long as it took.
	clk.Step(800 * time.Millisecond)
	p.End()
	beginsAfter(t, clk, p, 800*time.Millisecond)

	// A pass that begins after the floor has passed does not wait.
	clk.Step(10 * time.Millisecond)
	p.End()
	clk.Step(time.Second)
	if !p.Begin(context.Background()) || clk.HasWaiters() {
		t.Fatal("a pass waited a second after the last one")
	}
}
