package plan

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/services/mcptracker/track"
)

// More pools than the API holds: the deleted ones are dropped first, and
// the list stays sorted.
func TestDesiredStatusCapsPools(t *testing.T) {
	removed := metav1.NewTime(time.Unix(1000, 0))
	var pools []track.PoolStatus
	for i := range maxPools + 5 {
		p := track.PoolStatus{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: fmt.Sprintf("p%03d", i)}, Settled: true}
		if i%10 == 0 {
			p.RemovedTime = &removed
		}
		pools = append(pools, p)
	}
	s := desiredStatus(&upgradev1alpha1.UpgradeConfig{}, pools, time.Unix(2000, 0))
	if len(s.Pools) != maxPools {
		t.Fatalf("%d pools, want %d", len(s.Pools), maxPools)
	}
	removedKept := 0
	for i, p := range s.Pools {
		if i > 0 && s.Pools[i-1].Name >= p.Name {
			t.Fatalf("not sorted at %d", i)
		}
		if p.RemovedTime != nil {
			removedKept++
		}
	}
	// 7 deleted pools, 62 present: every present pool and 2 deleted ones.
	if removedKept != 2 {
		t.Fatalf("kept %d deleted pools, want 2", removedKept)
	}
}

// MUO's worker times: the current entry gets the worker pool's times once
// they belong to it, older entries' times are restated as they are, and the
// status read back compares equal (no write).
func TestDesiredStatusWorkerTimes(t *testing.T) {
	at := func(m int) *metav1.Time {
		v := metav1.NewTime(time.Unix(0, 0).Add(time.Duration(m) * time.Minute))
		return &v
	}
	pools := []track.PoolStatus{{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "worker", StartTime: at(20), CompleteTime: at(50)}, Settled: true}}
	uc := &upgradev1alpha1.UpgradeConfig{Status: upgradev1alpha1.UpgradeConfigStatus{History: []upgradev1alpha1.UpgradeHistory{
		{Version: "4.16.2", Phase: upgradev1alpha1.UpgradePhaseUpgrading, StartTime: at(10)},
		{Version: "4.16.1", Phase: upgradev1alpha1.UpgradePhaseUpgraded, StartTime: at(1), WorkerStartTime: at(2), WorkerCompleteTime: at(3)},
		{Version: "4.15.9", Phase: upgradev1alpha1.UpgradePhaseUpgraded},
	}}}
	s := desiredStatus(uc, pools, time.Unix(3600, 0))
	want := []workerTimes{
		{Version: "4.16.2", WorkerStartTime: at(20), WorkerCompleteTime: at(50)},
		{Version: "4.16.1", WorkerStartTime: at(2), WorkerCompleteTime: at(3)},
	}
	if !equality.Semantic.DeepEqual(s.History, want) {
		t.Fatalf("history %+v, want %+v", s.History, want)
	}
	// Once written, the same inputs want nothing new.
	uc.Status.History[0].WorkerStartTime, uc.Status.History[0].WorkerCompleteTime = at(20), at(50)
	uc.Status.Pools = []upgradev1alpha1.PoolUpdate{pools[0].PoolUpdate}
	uc.Status.Conditions = s.Conditions
	later := desiredStatus(uc, pools, time.Unix(7200, 0))
	if !equality.Semantic.DeepEqual(later, liveStatus(uc)) {
		t.Fatalf("a write would follow:\n%+v\n%+v", later, liveStatus(uc))
	}
	// A worker update that began before this upgrade is not its.
	uc.Status.History[0].WorkerStartTime, uc.Status.History[0].WorkerCompleteTime = nil, nil
	uc.Status.History[0].StartTime = at(30)
	if s := desiredStatus(uc, pools, time.Unix(3600, 0)); len(s.History) != 1 || s.History[0].Version != "4.16.1" {
		t.Fatalf("older worker update attributed: %+v", s.History)
	}
	// The worker pool's target changed again mid-update (a MachineConfig
	// added during the upgrade): the workers are done when the later update
	// is, and their start stays the first one's.
	uc.Status.History[0].StartTime, uc.Status.History[0].WorkerStartTime = at(10), at(20)
	rerendered := []track.PoolStatus{{PoolUpdate: upgradev1alpha1.PoolUpdate{Name: "worker", StartTime: at(35), CompleteTime: at(60)}, Settled: true}}
	s = desiredStatus(uc, rerendered, time.Unix(3600, 0))
	if h := s.History[0]; !h.WorkerStartTime.Equal(at(20)) || !h.WorkerCompleteTime.Equal(at(60)) {
		t.Fatalf("re-rendered: %+v", h)
	}
}
