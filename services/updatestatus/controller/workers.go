package controller

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// runWorkers is the body of both publishers' Start: n workers call work
// until it returns false (their queue shut down), and when ctx ends the
// queue is shut down, the workers are waited for, and the pending-writes
// gauge is zeroed, since writes still pending are dropped (the next leader
// plans from what the API server has).
func runWorkers(ctx context.Context, queue interface{ ShutDown() }, n int, pending prometheus.Gauge, work func(context.Context) bool) error {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for work(ctx) {
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	pending.Set(0)
	return nil
}
