package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

func TestStalenessWarning(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	updating := func(heartbeatAgo *time.Duration) *updatev1alpha1.UpgradeStatus {
		us := &updatev1alpha1.UpgradeStatus{}
		us.Status.ControlPlane = &updatev1alpha1.ControlPlane{Conditions: []metav1.Condition{{Type: updatev1alpha1.ConditionUpdating, Status: metav1.ConditionTrue}}}
		if heartbeatAgo != nil {
			us.Status.Conditions = []metav1.Condition{{Type: "Heartbeat", Status: metav1.ConditionTrue, Reason: "Updating",
				LastTransitionTime: metav1.NewTime(now.Add(-*heartbeatAgo))}}
		}
		return us
	}
	d := func(x time.Duration) *time.Duration { return &x }
	idle := updating(nil)
	idle.Status.ControlPlane.Conditions[0].Status = metav1.ConditionFalse
	for _, tc := range []struct {
		name string
		us   *updatev1alpha1.UpgradeStatus
		want string
	}{
		{"idle: no heartbeat is expected", idle, ""},
		{"fresh", updating(d(2 * time.Minute)), ""},
		{"exactly three minutes", updating(d(3 * time.Minute)), ""},
		{"stale", updating(d(5*time.Minute + 30*time.Second)),
			"Warning: the update status was last refreshed 5m30s ago (2026-01-02T11:54:30Z); the update-status-controller may not be running.\n"},
		{"no heartbeat while updating", updating(nil),
			"Warning: the update status has never been refreshed during this update (no Heartbeat condition); the update-status-controller may not be running.\n"},
	} {
		if got := stalenessWarning(tc.us, now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if at := staleAt(updating(d(time.Minute)), now); !at.Equal(now.Add(2*time.Minute + time.Second)) {
		t.Errorf("staleAt = %v", at)
	}
}

// -o json|yaml in offline mode prints the objects the controller would
// publish for the assessed snapshot.
func TestMockObjectsOutput(t *testing.T) {
	cvFile := filepath.Join("testdata", "stalled-cv.yaml") // no alerts file: a notice, but not on stdout
	loaded, err := snapshot.Load(cvFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := assess.AssessForDisplay(loaded.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := RunStatus(context.Background(), StatusOptions{MockClusterVersion: cvFile, Output: format, Out: &out, ErrOut: &errOut}); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(errOut.String(), "Unable to fetch alerts") {
				t.Errorf("stderr %q, want the alerts notice", errOut.String())
			}
			data := out.Bytes()
			if format == "yaml" {
				if data, err = yaml.YAMLToJSON(data); err != nil {
					t.Fatalf("not YAML: %v", err)
				}
			} else if !json.Valid(data) {
				t.Fatalf("not JSON:\n%s", out.String())
			}
			var list struct {
				Kind  string            `json:"kind"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(data, &list); err != nil || list.Kind != "List" || len(list.Items) != 1+len(want.Nodes) {
				t.Fatalf("list kind %q with %d items (err %v), want List with %d", list.Kind, len(list.Items), err, 1+len(want.Nodes))
			}
			var us updatev1alpha1.UpgradeStatus
			if err := json.Unmarshal(list.Items[0], &us); err != nil || us.Kind != "UpgradeStatus" || us.APIVersion != "update.upshift.io/v1alpha1" || us.Name != "cluster" {
				t.Fatalf("first item %s (err %v)", list.Items[0], err)
			}
			// Times lose their sub-second part in the encoding, as in the API.
			if len(us.Status.Health) != len(want.Status.Health) || us.Status.ControlPlane.ClusterVersion.Assessment != want.Status.ControlPlane.ClusterVersion.Assessment ||
				!equality.Semantic.DeepEqual(us.Status.WorkerPools[0].Pool.Summaries, want.Status.WorkerPools[0].Pool.Summaries) {
				t.Errorf("status differs from the assessment")
			}
			for i, raw := range list.Items[1:] {
				var n updatev1alpha1.NodeProgressInsight
				if err := json.Unmarshal(raw, &n); err != nil || n.Kind != "NodeProgressInsight" || n.Name != want.Nodes[i].Name || n.Status.Name != want.Nodes[i].Name {
					t.Errorf("item %d: %s (err %v)", i+1, raw, err)
				}
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	cvFile := filepath.Join("testdata", "pdb-drain-cv.yaml")
	for _, tc := range []struct {
		o    StatusOptions
		want string
	}{
		{StatusOptions{MockClusterVersion: cvFile, Output: "table"}, `invalid --output value "table": must be one of json, yaml`},
		{StatusOptions{MockClusterVersion: cvFile, Watch: true}, "--watch needs a cluster"},
	} {
		var out bytes.Buffer
		tc.o.Out = &out
		if err := RunStatus(context.Background(), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestClearScreen: on a terminal, a watch starts each report on a cleared
// screen; a one-time report clears nothing.
func TestClearScreen(t *testing.T) {
	loaded, result := loadAssessed(t, "pdb-drain")
	st := clusterState{status: &updatev1alpha1.UpgradeStatus{Status: result.Status}}
	now := func() time.Time { return loaded.Snapshot.Now }
	for _, tc := range []struct {
		name   string
		watch  bool
		frames int
		want   int // clear-screen sequences written
	}{
		{"one-time report", false, 1, 0},
		{"watch, first report", true, 1, 1},
		{"watch, three reports", true, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			p := printer{o: StatusOptions{Out: &out, ClearScreen: true, Watch: tc.watch, Now: now}}
			for range tc.frames {
				if err := p.print(st); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Count(out.String(), clearScreen); got != tc.want {
				t.Fatalf("%d clear-screen sequences, want %d; output starts %q", got, tc.want, out.String()[:min(40, out.Len())])
			}
			if !strings.Contains(out.String(), "= Control Plane =") {
				t.Fatalf("no report printed: %q", out.String())
			}
		})
	}
}
