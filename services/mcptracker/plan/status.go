package plan

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	upgradeac "github.com/upshift-io/upshift/api/upgrade/v1alpha1/applyconfiguration/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/truncate"
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
		Type: upgradev1alpha1.WorkersUpgradedCondition, Status: st, Reason: reason, Message: truncate.String(msg, conditionMessageLimit),
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
			// The completion of the worker update recorded as the start,
			// or of a later one (the pool's target changed again during
			// the upgrade): never of one that began before it.
			if w.WorkerCompleteTime == nil && start != nil && !start.Before(w.WorkerStartTime) {
				w.WorkerCompleteTime = complete
			}
		}
		if w.WorkerStartTime != nil || w.WorkerCompleteTime != nil {
			s.History = append(s.History, w)
		}
	}
	return s
}

// applyConfiguration is the apply configuration of uc holding the
// tracker's fields s and nothing else, so that the server-side apply
// neither touches nor takes over the upgrade-scheduler's fields. Fields
// are set as their JSON would carry them: a zero value the API type leaves
// out (omitempty) is left out here too.
func applyConfiguration(uc *upgradev1alpha1.UpgradeConfig, s ownStatus) *upgradeac.UpgradeConfigApplyConfiguration {
	st := upgradeac.UpgradeConfigStatus()
	for _, p := range s.Pools {
		st.WithPools(poolApplyConfiguration(p))
	}
	for _, c := range s.Conditions {
		ac := metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message).
			WithLastTransitionTime(c.LastTransitionTime)
		if c.ObservedGeneration != 0 {
			ac.WithObservedGeneration(c.ObservedGeneration)
		}
		st.WithConditions(ac)
	}
	for _, h := range s.History {
		ac := upgradeac.UpgradeHistory().WithVersion(h.Version)
		if h.WorkerStartTime != nil {
			ac.WithWorkerStartTime(*h.WorkerStartTime)
		}
		if h.WorkerCompleteTime != nil {
			ac.WithWorkerCompleteTime(*h.WorkerCompleteTime)
		}
		st.WithHistory(ac)
	}
	return upgradeac.UpgradeConfig(uc.Name, uc.Namespace).WithStatus(st)
}

func poolApplyConfiguration(p upgradev1alpha1.PoolUpdate) *upgradeac.PoolUpdateApplyConfiguration {
	ac := upgradeac.PoolUpdate().WithName(p.Name)
	if p.TargetConfig != "" {
		ac.WithTargetConfig(p.TargetConfig)
	}
	if p.StartTime != nil {
		ac.WithStartTime(*p.StartTime)
	}
	if p.CompleteTime != nil {
		ac.WithCompleteTime(*p.CompleteTime)
	}
	if p.RemovedTime != nil {
		ac.WithRemovedTime(*p.RemovedTime)
	}
	if p.MachineCount != 0 {
		ac.WithMachineCount(p.MachineCount)
	}
	ac.WithNodes(nodeCountsApplyConfiguration(p.Nodes))
	if p.StuckNodes != 0 {
		ac.WithStuckNodes(p.StuckNodes)
	}
	if p.LastUpdateDurationSeconds != 0 {
		ac.WithLastUpdateDurationSeconds(p.LastUpdateDurationSeconds)
	}
	if sn := p.SlowestNode; sn != nil {
		sac := upgradeac.SlowestNode().WithName(sn.Name).WithState(sn.State).WithSince(sn.Since)
		if sn.Reason != "" {
			sac.WithReason(sn.Reason)
		}
		ac.WithSlowestNode(sac)
	}
	return ac
}

// nodeCountsApplyConfiguration sets the counts that are not zero (the API
// type leaves zero counts out).
func nodeCountsApplyConfiguration(c upgradev1alpha1.PoolNodeCounts) *upgradeac.PoolNodeCountsApplyConfiguration {
	ac := upgradeac.PoolNodeCounts()
	set := func(n int32, with func(int32) *upgradeac.PoolNodeCountsApplyConfiguration) {
		if n != 0 {
			with(n)
		}
	}
	set(c.Pending, ac.WithPending)
	set(c.Draining, ac.WithDraining)
	set(c.Updating, ac.WithUpdating)
	set(c.Rebooting, ac.WithRebooting)
	set(c.Done, ac.WithDone)
	set(c.Degraded, ac.WithDegraded)
	return ac
}

// maxPools is status.pools' MaxItems.
const maxPools = 64

// conditionMessageLimit is a condition message's MaxLength.
const conditionMessageLimit = 32768

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
