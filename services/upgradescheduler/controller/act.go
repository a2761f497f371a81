package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/ocm"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// notificationResult is the result label of a delivery's outcome.
func notificationResult(o ocm.Outcome) string {
	switch o {
	case ocm.Sent:
		return "sent"
	case ocm.AlreadySent:
		return "already_sent"
	case ocm.TransitionNotAllowed:
		return "not_allowed"
	case ocm.PolicyGone:
		return "policy_gone"
	}
	return strings.ToLower(string(o))
}

// The FedRAMP FileIntegrity object MUO re-initialises after an upgrade.
var (
	fileIntegrityGVK    = schema.GroupVersionKind{Group: "fileintegrity.openshift.io", Version: "v1alpha1", Kind: "FileIntegrity"}
	fileIntegrityKey    = client.ObjectKey{Namespace: "openshift-file-integrity", Name: "osd-fileintegrity"}
	fileIntegrityReinit = "file-integrity.openshift.io/re-init"
)

// cacheWait bounds how long a side effect waits for the cache to show it, so
// that the next plan decides from a view that includes it.
const cacheWait = 10 * time.Second

// act performs the planner's side effect. Results that live in the status
// (the external checks, the record of a delivered notification) are written
// into status.
func (r *Reconciler) act(ctx context.Context, uc *upgradev1alpha1.UpgradeConfig, a *plan.Action, cfg *config.Config, cv *configv1.ClusterVersion, status *upgradev1alpha1.UpgradeConfigStatus) error {
	switch a.Kind {
	case plan.PatchClusterVersion:
		if a.ClusterVersion.DesiredUpdate != nil && r.OCM != nil && ocmSource(cfg) && uc.Name == ocm.UpgradeConfigName {
			if err := r.recheckPolicy(ctx); err != nil {
				return err
			}
		}
		cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
		if err := r.Client.Patch(ctx, cv, client.RawPatch(types.MergePatchType, a.ClusterVersion.MergePatch())); err != nil {
			return err
		}
		// Wait for the cache to show what was patched (not for this exact
		// resourceVersion: the CVO may write again in between).
		return r.waitFor(ctx, &configv1.ClusterVersion{}, client.ObjectKey{Name: "version"}, func(o client.Object) bool {
			got := o.(*configv1.ClusterVersion)
			p := a.ClusterVersion
			if p.Channel != nil && got.Spec.Channel != *p.Channel {
				return false
			}
			if d := p.DesiredUpdate; d != nil {
				return got.Spec.DesiredUpdate != nil && got.Spec.DesiredUpdate.Version == d.Version && got.Spec.DesiredUpdate.Image == d.Image
			}
			return true
		})
	case plan.CreateMachineSet:
		ms := a.MachineSet.DeepCopy()
		if err := r.Client.Create(ctx, ms); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return r.waitFor(ctx, &machinev1beta1.MachineSet{}, client.ObjectKeyFromObject(a.MachineSet), func(client.Object) bool { return true })
	case plan.DeleteMachineSet:
		if err := r.Client.Delete(ctx, a.MachineSet.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return r.waitGone(ctx, &machinev1beta1.MachineSet{}, client.ObjectKeyFromObject(a.MachineSet))
	case plan.RemoveFinalizer:
		patch := client.MergeFrom(uc.DeepCopy())
		controllerutil.RemoveFinalizer(uc, plan.Finalizer)
		return client.IgnoreNotFound(r.Client.Patch(ctx, uc, patch))
	case plan.CheckExternalDependencies:
		ok, details := r.CheckURLs(ctx, cfg.HTTPCheckURLs, cfg.HTTPCheckTimeout)
		now := metav1.NewTime(r.Clock.Now())
		res := upgradev1alpha1.PreflightCheck{Check: plan.CheckExternalDeps, Passed: ok, Details: details, LastRun: &now}
		for i := range status.Preflight {
			if status.Preflight[i].Check == res.Check {
				status.Preflight[i] = res
				return nil
			}
		}
		status.Preflight = append(status.Preflight, res)
		return nil
	case plan.Notify:
		n := a.Notification
		if r.OCM == nil {
			return fmt.Errorf("no OCM connection configured")
		}
		outcome, err := r.OCM.deliver(ctx, uc, cfg, cv, n)
		if err != nil {
			r.Metrics.ObserveNotification(uc.Name, n.Event, "failed")
			return err
		}
		if outcome == ocm.PolicyGone && plan.PolicyGoneBlocks(n.Event) {
			// Not recorded: the step stays blocked. A sync now turns the
			// removal into a cancellation (or the new policy into a
			// reschedule) without waiting for the next watchInterval.
			r.Metrics.ObserveNotification(uc.Name, n.Event, notificationResult(outcome))
			return r.policyGone(ctx, n.Event)
		}
		r.Metrics.ObserveNotification(uc.Name, n.Event, notificationResult(outcome))
		// The record goes into the status written next; the step moves on
		// only in the plan that reads it.
		*status = plan.RecordNotification(*status, n, string(outcome), r.Clock.Now())
		return nil
	case plan.ReinitFileIntegrity:
		fi := &unstructured.Unstructured{}
		fi.SetGroupVersionKind(fileIntegrityGVK)
		fi.SetNamespace(fileIntegrityKey.Namespace)
		fi.SetName(fileIntegrityKey.Name)
		// A merge patch adds the annotation and keeps the others (MUO
		// replaces all of them).
		return r.Client.Patch(ctx, fi, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+fileIntegrityReinit+`":""}}}`)))
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

func (r *Reconciler) waitFor(ctx context.Context, obj client.Object, key client.ObjectKey, ok func(client.Object) bool) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, cacheWait, true, func(ctx context.Context) (bool, error) {
		if err := r.Client.Get(ctx, key, obj); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return ok(obj), nil
	})
}

func (r *Reconciler) waitGone(ctx context.Context, obj client.Object, key client.ObjectKey) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, cacheWait, true, func(ctx context.Context) (bool, error) {
		err := r.Client.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && obj.GetDeletionTimestamp() != nil, err
	})
}

// checkURLs is MUO's external dependency check: every URL answers below 400.
func checkURLs(ctx context.Context, urls []string, timeout time.Duration) (bool, string) {
	hc := &http.Client{Timeout: timeout}
	var failed []string
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		resp, err := hc.Do(req)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 400 {
			failed = append(failed, fmt.Sprintf("%s: HTTP %d", u, resp.StatusCode))
		}
	}
	if len(failed) > 0 {
		return false, strings.Join(failed, "; ")
	}
	return true, fmt.Sprintf("%d URLs available", len(urls))
}
