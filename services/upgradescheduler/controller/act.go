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

// act performs the planner's side effect. For a notification it returns the
// delivery's outcome, for plan.Executed to record ("" when nothing settled:
// the policy was gone and the step stays blocked).
func (r *Reconciler) act(ctx context.Context, uc *upgradev1alpha1.UpgradeConfig, a *plan.Action, cfg *config.Config, cv *configv1.ClusterVersion) (string, error) {
	if a.Kind == plan.Notify {
		return r.notify(ctx, uc, cfg, cv, a.Notification)
	}
	return "", r.change(ctx, uc, a, cfg)
}

// change creates, patches or deletes the object the action names, and
// records what the cache must show before the next plan (r.expect).
func (r *Reconciler) change(ctx context.Context, uc *upgradev1alpha1.UpgradeConfig, a *plan.Action, cfg *config.Config) error {
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
		// The next plan waits until the cache shows the patch (or a later
		// version: the CVO may write again in between).
		r.expect.Updated(cv, r.Clock.Now())
		return nil
	case plan.CreateMachineSet:
		ms := a.MachineSet.DeepCopy()
		err := r.Client.Create(ctx, ms)
		switch {
		case apierrors.IsAlreadyExists(err):
			// Any version of the namesake meets it.
			r.expect.Created(&machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name}}, r.Clock.Now())
			return nil
		case err != nil:
			return err
		}
		r.expect.Created(ms, r.Clock.Now())
		return nil
	case plan.DeleteMachineSet:
		ms := a.MachineSet.DeepCopy()
		if err := r.Client.Delete(ctx, ms); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		r.expect.Deleted(ms, r.Clock.Now())
		return nil
	case plan.RemoveFinalizer:
		patch := client.MergeFrom(uc.DeepCopy())
		controllerutil.RemoveFinalizer(uc, plan.Finalizer)
		return client.IgnoreNotFound(r.Client.Patch(ctx, uc, patch))
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

// notify delivers n to OCM and returns the outcome to record.
func (r *Reconciler) notify(ctx context.Context, uc *upgradev1alpha1.UpgradeConfig, cfg *config.Config, cv *configv1.ClusterVersion, n *plan.Notification) (string, error) {
	if r.OCM == nil {
		return "", fmt.Errorf("no OCM connection configured")
	}
	outcome, err := r.OCM.deliver(ctx, uc, cfg, cv, n)
	if err != nil {
		r.Metrics.ObserveNotification(uc.Name, n.Event, "failed")
		return "", err
	}
	r.Metrics.ObserveNotification(uc.Name, n.Event, notificationResult(outcome))
	if outcome == ocm.PolicyGone && plan.PolicyGoneBlocks(n.Event) {
		// Not recorded: the step stays blocked. A sync now turns the
		// removal into a cancellation (or the new policy into a
		// reschedule) without waiting for the next watchInterval.
		return "", r.policyGone(ctx, n.Event)
	}
	// The step moves on only in the plan that reads the record.
	return string(outcome), nil
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
