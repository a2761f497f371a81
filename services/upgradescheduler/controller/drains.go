package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/upshift-io/upshift/libs/drain"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// readDrainPods reads the pods on the named nodes into s.DrainPods.
func (r *Reconciler) readDrainPods(ctx context.Context, s *plan.Snapshot, nodes []string) {
	if s.DrainPods == nil {
		s.DrainPods = map[string][]corev1.Pod{}
	}
	for _, n := range nodes {
		s.DrainPods[n] = r.podsOn(ctx, n)
	}
}

// podsOn lists the pods bound to a worker node from the apiserver: pods are
// not cached (every pod of the cluster for a few draining nodes), and a
// drain's pods are read only once a timeout may have passed. A read that
// fails leaves the node without pods this plan: the drain is recorded and
// nothing is forced, rather than the whole upgrade's plan failing.
func (r *Reconciler) podsOn(ctx context.Context, node string) []corev1.Pod {
	pods, err := drain.PodsOn(ctx, r.APIReader, node)
	if err != nil {
		log.FromContext(ctx).Info("cannot read the pods of a draining node; nothing is forced on it this time", "node", node, "error", err.Error())
		return []corev1.Pod{}
	}
	return pods
}

// force takes the drains' steps and records their Events and the drains'.
func (r *Reconciler) force(ctx context.Context, d plan.Drains) error {
	var errs []error
	for _, a := range d.Actions {
		if err := drain.Force(ctx, r.Client, a.Action); err != nil {
			errs = append(errs, fmt.Errorf("%s pod %s/%s on node %s: %w", a.Step, a.Namespace, a.Name, a.Node, err))
			continue
		}
		r.Metrics.ObserveForced(string(a.Step))
		r.Recorder.Record(drain.ActionEvents(a.Node, a.Action)...)
	}
	r.Recorder.Record(d.Events...)
	return errors.Join(errs...)
}
