package track

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// WorkerPool is the pool MUO's workerStartTime and workerCompleteTime
// describe.
const WorkerPool = "worker"

// MasterPool is the control-plane pool; every other pool counts for
// WorkersUpgraded.
const MasterPool = "master"

// Condition reasons of WorkersUpgraded.
const (
	ReasonAllPoolsUpdated = "AllPoolsUpdated"
	ReasonNoWorkerPools   = "NoWorkerPools"
	ReasonPoolsUpdating   = "PoolsUpdating"
	ReasonPoolsDegraded   = "PoolsDegraded"
)

// WorkersUpgraded summarises every pool but master (deleted pools left
// out): True once each has settled on its target, False while one is
// updating, with reason PoolsDegraded when one is degraded.
func WorkersUpgraded(pools []PoolStatus) (metav1.ConditionStatus, string, string) {
	var updating, degraded, settled []string
	for _, p := range pools {
		if p.Name == MasterPool || p.RemovedTime != nil {
			continue
		}
		switch {
		case p.Degraded:
			degraded = append(degraded, fmt.Sprintf("%s (%s)", p.Name, p.DegradedDetail))
		case !p.Settled:
			updating = append(updating, fmt.Sprintf("%s (%d of %d nodes done)", p.Name, p.Nodes.Done, p.MachineCount))
		default:
			settled = append(settled, p.Name)
		}
	}
	switch {
	case len(degraded) > 0:
		return metav1.ConditionFalse, ReasonPoolsDegraded, "degraded: " + strings.Join(degraded, "; ")
	case len(updating) > 0:
		return metav1.ConditionFalse, ReasonPoolsUpdating, "updating: " + strings.Join(updating, ", ")
	case len(settled) == 0:
		return metav1.ConditionTrue, ReasonNoWorkerPools, "there is no pool other than master"
	}
	return metav1.ConditionTrue, ReasonAllPoolsUpdated, "updated: " + strings.Join(settled, ", ")
}

// WorkerTimes are MUO's workerStartTime and workerCompleteTime for a history
// entry: the worker pool's update, when it started at or after the entry's
// startTime (an earlier one belongs to something else, such as a
// MachineConfig change before the upgrade). Nil when unknown.
func WorkerTimes(entry upgradev1alpha1.UpgradeHistory, pools []PoolStatus) (start, complete *metav1.Time) {
	if entry.StartTime == nil {
		return nil, nil
	}
	for _, p := range pools {
		if p.Name != WorkerPool || p.RemovedTime != nil || p.StartTime == nil {
			continue
		}
		if p.StartTime.Before(entry.StartTime) {
			return nil, nil
		}
		return p.StartTime, p.CompleteTime
	}
	return nil, nil
}

// Seed rebuilds the pool records from a status written by an earlier pass
// (after a restart). Node memory is not in the status: nodes' time in state
// counts from when they are seen again, and the nodes already moving then
// get no update duration.
func Seed(pools []upgradev1alpha1.PoolUpdate) State {
	st := State{Pools: map[string]PoolRecord{}, Nodes: map[string]NodeMemory{}}
	for _, p := range pools {
		st.Pools[p.Name] = PoolRecord{
			Name: p.Name, Target: p.TargetConfig,
			Start: timePtr(p.StartTime), Complete: timePtr(p.CompleteTime), Removed: timePtr(p.RemovedTime),
			Settled: p.CompleteTime != nil,
			// Written while not started: the start still to come is real.
			Observed:     p.StartTime == nil && p.CompleteTime == nil && p.RemovedTime == nil,
			Degraded:     p.Nodes.Degraded > 0,
			LastDuration: time.Duration(p.LastUpdateDurationSeconds) * time.Second,
		}
	}
	return st
}

func timePtr(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}
