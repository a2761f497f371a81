package ownwrite

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Wait is Check as a reconciler uses it before it plans. It logs the
// expectations dropped past their deadline (planning then goes ahead) and
// returns, while some are unmet, the requeue that bounds the wait: the watch
// event that shows the write normally wakes the reconciler first. Zero means
// the cache shows every own write and planning may go on.
func (x *Expectations) Wait(ctx context.Context, c client.Reader, now time.Time) (time.Duration, error) {
	p, err := x.Check(ctx, c, now)
	if err != nil {
		return 0, err
	}
	logger := log.FromContext(ctx)
	for _, e := range p.Expired {
		logger.Info("the cache did not show an own write in time; planning anyway", "write", e)
	}
	if p.Met() {
		return 0, nil
	}
	logger.V(1).Info("waiting for the cache to show own writes", "writes", p.Unmet)
	return p.Wait, nil
}
