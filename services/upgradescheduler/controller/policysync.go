package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/services/upgradescheduler/ocm"
)

// PolicySyncer is MUO's config manager for source OCM: every watchInterval
// it reads the cluster's upgrade policies and creates or updates the managed
// UpgradeConfig (managed-upgrade-config) to match, in place: the status and
// its history are kept, and a change is recorded as a PolicyChanged Event.
// A policy removed before the upgrade commenced cancels it (spec.cancel);
// removed after, it is recorded and the upgrade runs to its end. Nothing is
// ever deleted. With source LOCAL it only records the sync
// (upgradeoperator_upgradeconfig_sync_timestamp, as MUO does); with none it
// does nothing and sends nothing.
//
// It runs on the leader only (a manager Runnable that needs election).
type PolicySyncer struct {
	R *Reconciler
	// Interval overrides configManager.watchInterval when set.
	Interval time.Duration
}

// NeedLeaderElection: only the leader writes.
func (s *PolicySyncer) NeedLeaderElection() bool { return true }

// Start syncs until ctx ends. OCM has no watch: polling is the protocol.
// A failed sync is retried with MUO's exponential backoff (from a minute,
// or the interval when that is shorter, doubling up to an hour), so that
// an OCM outage is not polled every minute for as long as it lasts.
func (s *PolicySyncer) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("policy-sync")
	failures := 0
	for {
		interval, err := s.SyncOnce(ctx)
		if err != nil {
			failures++
			interval = ocm.SyncRetryAfter(failures, min(interval, time.Minute))
			logger.Info("OCM policy sync failed", "error", err.Error(), "failures", failures, "retryIn", interval.String())
		} else {
			failures = 0
		}
		// MUO's ±10% jitter, so that a fleet does not sync in step.
		wait := time.Duration(float64(interval) * (0.9 + 0.2*rand.Float64()))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// SyncOnce syncs once and returns the interval until the next sync.
func (s *PolicySyncer) SyncOnce(ctx context.Context) (time.Duration, error) {
	interval, _, err := s.sync(ctx)
	return interval, err
}

// sync syncs once and returns the interval until the next sync and the
// action it carried out (None when OCM is not the source).
func (s *PolicySyncer) sync(ctx context.Context) (time.Duration, ocm.SyncAction, error) {
	r := s.R
	cfg, _ := r.config(ctx, r.Namespace)
	interval := s.Interval
	if interval == 0 {
		interval = time.Minute
		if cfg != nil {
			interval = cfg.WatchInterval
		}
	}
	if localSource(cfg) {
		// MUO's LOCAL provider has nothing to fetch (the UpgradeConfig is
		// the user's own, read by the reconciler from its cache), and MUO
		// records each such sync: SRE's sync alert fires on the
		// timestamp's absence, on LOCAL clusters too.
		r.Metrics.ObserveSync(ocm.UpgradeConfigName, r.Clock.Now())
		return interval, ocm.SyncNone, nil
	}
	if r.OCM == nil || !ocmSource(cfg) {
		return interval, ocm.SyncNone, nil
	}
	cv := &configv1.ClusterVersion{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return interval, "", err
	}
	c, cl, err := r.OCM.client(ctx, cfg, cv, true)
	if err != nil {
		return interval, "", err
	}
	policies, err := c.Policies(ctx, cl.ID)
	if err != nil {
		return interval, "", err
	}
	in := ocm.SyncInput{Policies: policies}
	key := client.ObjectKey{Namespace: r.Namespace, Name: ocm.UpgradeConfigName}
	existing := &upgradev1alpha1.UpgradeConfig{}
	switch err := r.Client.Get(ctx, key, existing); {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return interval, "", err
	default:
		in.Existing = existing
		if d := cv.Spec.DesiredUpdate; d != nil {
			in.Commenced = (existing.Spec.Desired.Version != "" && d.Version == existing.Spec.Desired.Version) ||
				(existing.Spec.Desired.Image != "" && d.Image == existing.Spec.Desired.Image)
		}
	}
	current := ""
	if existing != nil {
		current = existing.Annotations[ocm.PolicyAnnotation]
	}
	if p, ok := ocm.Pick(policies, current); ok {
		spec, err := ocm.Spec(cl, p, cfg.UpgradeType)
		if err != nil {
			return interval, "", err
		}
		in.Picked, in.Spec = &p, &spec
	}
	d := ocm.DecideSync(in)
	if err := s.apply(ctx, key, existing, d); err != nil {
		return interval, "", err
	}
	r.Metrics.ObserveSync(ocm.UpgradeConfigName, r.Clock.Now())
	return interval, d.Action, nil
}

// apply carries the decision out. Updates are patches with the object's
// resourceVersion: a concurrent status write makes them conflict and the
// next sync decides again.
func (s *PolicySyncer) apply(ctx context.Context, key client.ObjectKey, existing *upgradev1alpha1.UpgradeConfig, d ocm.SyncDecision) error {
	r := s.R
	switch d.Action {
	case ocm.SyncCreate:
		uc := &upgradev1alpha1.UpgradeConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: map[string]string{ocm.PolicyAnnotation: d.PolicyID}},
			Spec:       d.Spec,
		}
		if err := r.Client.Create(ctx, uc); err != nil {
			return err
		}
		s.event(uc, corev1.EventTypeNormal, "PolicySynced", "created from OCM: %s (upgrade to %s at %s)", d.Reason, d.Spec.Desired.Version, d.Spec.UpgradeAt)
	case ocm.SyncUpdate:
		uc := existing.DeepCopy()
		patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
		old := existing.Spec
		uc.Spec = d.Spec
		if uc.Annotations == nil {
			uc.Annotations = map[string]string{}
		}
		uc.Annotations[ocm.PolicyAnnotation] = d.PolicyID
		delete(uc.Annotations, ocm.PolicyRemovedAnnotation)
		if !uc.Spec.Cancel {
			delete(uc.Annotations, ocm.CancelledBySyncAnnotation)
		}
		if err := r.Client.Patch(ctx, uc, patch); err != nil {
			return err
		}
		s.event(uc, corev1.EventTypeNormal, "PolicyChanged", "%s: upgrade to %s at %s (was %s at %s)", d.Reason,
			d.Spec.Desired.Version, d.Spec.UpgradeAt, old.Desired.Version, old.UpgradeAt)
	case ocm.SyncCancel:
		uc := existing.DeepCopy()
		patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
		uc.Spec.Cancel = true
		if uc.Annotations == nil {
			uc.Annotations = map[string]string{}
		}
		// Marked as the syncer's own, so that it alone withdraws it.
		uc.Annotations[ocm.CancelledBySyncAnnotation] = r.Clock.Now().UTC().Format(time.RFC3339)
		if err := r.Client.Patch(ctx, uc, patch); err != nil {
			return err
		}
		s.event(uc, corev1.EventTypeWarning, "PolicyRemoved", "%s: cancelling", d.Reason)
	case ocm.SyncRecordRemoved:
		uc := existing.DeepCopy()
		patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if uc.Annotations == nil {
			uc.Annotations = map[string]string{}
		}
		uc.Annotations[ocm.PolicyRemovedAnnotation] = r.Clock.Now().UTC().Format(time.RFC3339)
		if err := r.Client.Patch(ctx, uc, patch); err != nil {
			return err
		}
		s.event(uc, corev1.EventTypeWarning, "PolicyRemoved", "%s", d.Reason)
	}
	return nil
}

func (s *PolicySyncer) event(uc *upgradev1alpha1.UpgradeConfig, typ, reason, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	if typ == corev1.EventTypeWarning {
		s.R.Recorder.Record(events.Warning(uc, reason, "PolicySync", note))
	} else {
		s.R.Recorder.Record(events.Normal(uc, reason, "PolicySync", note))
	}
}

// recheckPolicy is MUO's refresh when an upgrade leaves Pending, done here
// at the last moment it can matter: right before ClusterVersion is pointed
// at the target. The policy is read once, synchronously, so that a policy
// removed or rescheduled since the last periodic sync (up to watchInterval
// ago) is not missed. It fails closed: when OCM cannot be read, or the sync
// changed the UpgradeConfig, nothing is commenced; the step records why and
// is retried with the controller's backoff, bounded by the start deadline.
func (r *Reconciler) recheckPolicy(ctx context.Context) error {
	_, action, err := (&PolicySyncer{R: r}).sync(ctx)
	if err != nil {
		return fmt.Errorf("the OCM upgrade policy could not be checked before commencing (not commencing): %w", err)
	}
	if action != ocm.SyncNone {
		return fmt.Errorf("the OCM upgrade policy changed right before commencement (%s): not commencing", action)
	}
	return nil
}

// policyGone handles a notice sent before commencement that found the
// upgrade policy gone: the policy is synced at once (the removal becomes
// spec.cancel, a replacement policy a reschedule) and the step reports it.
func (r *Reconciler) policyGone(ctx context.Context, event string) error {
	_, action, err := (&PolicySyncer{R: r}).sync(ctx)
	if err != nil {
		return fmt.Errorf("the OCM upgrade policy is gone (notice %s not delivered) and could not be synced: %w", event, err)
	}
	return fmt.Errorf("the OCM upgrade policy is gone before commencement (notice %s not delivered; policy sync: %s): not going ahead", event, action)
}
