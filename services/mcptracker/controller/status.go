package controller

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// ownStatus is the part of an UpgradeConfig's status the tracker owns, in
// the shape it is applied: nothing else is sent, so the server-side apply
// neither touches nor takes over the upgrade-scheduler's fields.
type ownStatus struct {
	Pools      []upgradev1alpha1.PoolUpdate `json:"pools,omitempty"`
	Conditions []metav1.Condition           `json:"conditions,omitempty"`
	History    []workerTimes                `json:"history,omitempty"`
}

// workerTimes is one history entry (keyed by version) with only MUO's two
// worker fields.
type workerTimes struct {
	Version            string       `json:"version"`
	WorkerStartTime    *metav1.Time `json:"workerStartTime,omitempty"`
	WorkerCompleteTime *metav1.Time `json:"workerCompleteTime,omitempty"`
}

// liveStatus is ownStatus as read from the object.
func liveStatus(uc *upgradev1alpha1.UpgradeConfig) ownStatus {
	var s ownStatus
	for _, p := range uc.Status.Pools {
		s.Pools = append(s.Pools, *p.DeepCopy())
	}
	slices.SortFunc(s.Pools, func(a, b upgradev1alpha1.PoolUpdate) int { return strings.Compare(a.Name, b.Name) })
	if c := meta.FindStatusCondition(uc.Status.Conditions, upgradev1alpha1.WorkersUpgradedCondition); c != nil {
		s.Conditions = []metav1.Condition{*c}
	}
	for _, h := range uc.Status.History {
		if h.WorkerStartTime != nil || h.WorkerCompleteTime != nil {
			s.History = append(s.History, workerTimes{Version: h.Version, WorkerStartTime: h.WorkerStartTime, WorkerCompleteTime: h.WorkerCompleteTime})
		}
	}
	return s
}

// desiredStatus is what the tracker's fields should be. Worker times already
// in history entries are restated (so that the tracker keeps owning them and
// an apply that left them out would not remove them); the current entry,
// history[0], gets the worker pool's times once they belong to it.
func desiredStatus(uc *upgradev1alpha1.UpgradeConfig, pools []track.PoolStatus, now time.Time) ownStatus {
	s := ownStatus{}
	for _, p := range pools {
		s.Pools = append(s.Pools, p.PoolUpdate)
	}
	if len(s.Pools) > maxPools {
		// The API holds maxPools entries: deleted pools go first.
		slices.SortStableFunc(s.Pools, func(a, b upgradev1alpha1.PoolUpdate) int {
			return cmpBool(a.RemovedTime != nil, b.RemovedTime != nil)
		})
		s.Pools = s.Pools[:maxPools]
		slices.SortFunc(s.Pools, func(a, b upgradev1alpha1.PoolUpdate) int { return strings.Compare(a.Name, b.Name) })
	}
	st, reason, msg := track.WorkersUpgraded(pools)
	cond := metav1.Condition{
		Type: upgradev1alpha1.WorkersUpgradedCondition, Status: st, Reason: reason, Message: truncate(msg, 32768),
		ObservedGeneration: uc.Generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	}
	if old := meta.FindStatusCondition(uc.Status.Conditions, cond.Type); old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	s.Conditions = []metav1.Condition{cond}
	for i, h := range uc.Status.History {
		w := workerTimes{Version: h.Version, WorkerStartTime: h.WorkerStartTime, WorkerCompleteTime: h.WorkerCompleteTime}
		if i == 0 {
			start, complete := track.WorkerTimes(h, pools)
			if w.WorkerStartTime == nil {
				w.WorkerStartTime = start
			}
			if w.WorkerCompleteTime == nil && start != nil && w.WorkerStartTime.Equal(start) {
				w.WorkerCompleteTime = complete
			}
		}
		if w.WorkerStartTime != nil || w.WorkerCompleteTime != nil {
			s.History = append(s.History, w)
		}
	}
	return s
}

// apply writes the tracker's fields with server-side apply, forcing
// ownership: the upgrade-scheduler's full status updates co-own whatever
// they carried along, and these fields are the tracker's alone.
func (r *Reconciler) apply(ctx context.Context, uc *upgradev1alpha1.UpgradeConfig, s ownStatus) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	status := map[string]any{}
	if err := json.Unmarshal(raw, &status); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": upgradev1alpha1.GroupVersion.String(),
		"kind":       "UpgradeConfig",
		"metadata":   map[string]any{"name": uc.Name, "namespace": uc.Namespace},
		"status":     status,
	}}
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
}

// maxPools is status.pools' MaxItems.
const maxPools = 64

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
