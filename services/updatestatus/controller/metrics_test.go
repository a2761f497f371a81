package controller

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/metricstest"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// samples gathers the series of the named metric in reg as
// "label=value,..." -> value.
func samples(t *testing.T, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	out, err := metricstest.Series(reg, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func resultWith(cp updatev1alpha1.ControlPlaneAssessment, pools map[string]updatev1alpha1.PoolAssessment, nodes map[string][]string) *assess.Result {
	r := &assess.Result{Status: status(cp != updatev1alpha1.ControlPlaneAssessmentCompleted, cp)}
	r.Status.ControlPlane.Pool = &updatev1alpha1.MachineConfigPoolStatusInsight{Name: "master", Assessment: updatev1alpha1.PoolCompleted, Completion: 100}
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r.Status.WorkerPools = append(r.Status.WorkerPools, updatev1alpha1.Pool{Name: name,
			Pool: updatev1alpha1.MachineConfigPoolStatusInsight{Name: name, Assessment: pools[name], Completion: 25}})
	}
	for pool, phases := range nodes {
		for i, ph := range phases {
			in := nodeInsight(fmt.Sprintf("%s-%d", pool, i), pool, ph, false)
			r.Nodes = append(r.Nodes, in)
		}
	}
	return r
}

func TestMetricsFollowTheStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.observe(resultWith(updatev1alpha1.ControlPlaneAssessmentSlow,
		map[string]updatev1alpha1.PoolAssessment{"worker": "Progressing", "infra": "Degraded"},
		map[string][]string{"worker": {"Draining", "Completed", "Completed", "Pending"}, "infra": {"Updating"}, "master": {"Completed"}}))

	cp := samples(t, reg, "upshift_update_status_control_plane_assessment")
	if len(cp) != 6 || cp["assessment=Progressing - Slow"] != 1 || cp["assessment=Progressing"] != 0 || cp["assessment=Stalled"] != 0 {
		t.Errorf("control plane assessment state set = %v", cp)
	}
	if u := samples(t, reg, "upshift_update_status_updating"); u[""] != 1 {
		t.Errorf("updating = %v, want 1", u)
	}
	pa := samples(t, reg, "upshift_update_status_pool_assessment")
	if pa["assessment=Degraded,pool=infra"] != 1 || pa["assessment=Progressing,pool=infra"] != 0 ||
		pa["assessment=Progressing,pool=worker"] != 1 || pa["assessment=Completed,pool=master"] != 1 || len(pa) != 15 {
		t.Errorf("pool assessment state sets = %v", pa)
	}
	pn := samples(t, reg, "upshift_update_status_pool_nodes")
	for k, want := range map[string]float64{
		"phase=Draining,pool=worker": 1, "phase=Completed,pool=worker": 2, "phase=Pending,pool=worker": 1,
		"phase=Rebooting,pool=worker": 0, "phase=Updating,pool=infra": 1, "phase=Completed,pool=master": 1,
	} {
		if pn[k] != want {
			t.Errorf("pool_nodes{%s} = %v, want %v", k, pn[k], want)
		}
	}
	if pc := samples(t, reg, "upshift_update_status_pool_completion_percent"); pc["pool=worker"] != 25 || pc["pool=master"] != 100 {
		t.Errorf("pool completion = %v", pc)
	}

	// The update ends and pool infra goes away: its series go with it.
	m.observe(resultWith(updatev1alpha1.ControlPlaneAssessmentCompleted,
		map[string]updatev1alpha1.PoolAssessment{"worker": "Completed"},
		map[string][]string{"worker": {"Completed"}}))
	cp = samples(t, reg, "upshift_update_status_control_plane_assessment")
	if cp["assessment=Completed"] != 1 || cp["assessment=Progressing - Slow"] != 0 {
		t.Errorf("control plane assessment state set = %v", cp)
	}
	if u := samples(t, reg, "upshift_update_status_updating"); u[""] != 0 {
		t.Errorf("updating = %v, want 0", u)
	}
	for _, name := range []string{"upshift_update_status_pool_assessment", "upshift_update_status_pool_nodes", "upshift_update_status_pool_completion_percent"} {
		for k := range samples(t, reg, name) {
			if strings.Contains(k, "pool=infra") {
				t.Errorf("%s{%s} outlived its pool", name, k)
			}
		}
	}
	if pn := samples(t, reg, "upshift_update_status_pool_nodes"); pn["phase=Completed,pool=worker"] != 1 || pn["phase=Pending,pool=worker"] != 0 {
		t.Errorf("pool_nodes = %v", pn)
	}
}

func TestLastSuccessIsATimestampOnlyOnceThereIsOne(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	if s := samples(t, reg, "upshift_update_status_last_success_timestamp_seconds"); len(s) != 0 {
		t.Fatalf("last success = %v before any success, want no series", s)
	}
	m.markSuccess(time.Unix(1.7e9, 0))
	if s := samples(t, reg, "upshift_update_status_last_success_timestamp_seconds"); s[""] != 1.7e9 {
		t.Errorf("last success = %v, want 1.7e9", s)
	}
	// A recomputation that read the cluster earlier and finished later does
	// not move it back.
	m.markSuccess(time.Unix(1.6e9, 0))
	if s := samples(t, reg, "upshift_update_status_last_success_timestamp_seconds"); s[""] != 1.7e9 {
		t.Errorf("last success = %v after an older read, want 1.7e9", s)
	}
	m.markSuccess(time.Unix(1.8e9, 0))
	if s := samples(t, reg, "upshift_update_status_last_success_timestamp_seconds"); s[""] != 1.8e9 {
		t.Errorf("last success = %v, want 1.8e9", s)
	}
}
