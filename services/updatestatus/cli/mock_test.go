package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ocExamples is the folder of oc's own example snapshots and outputs (see its
// README): the goldens of mock mode. Nothing in this repository writes them.
var ocExamples = filepath.Join("testdata", "oc")

// TestMockGolden runs every oc example (each <name>-cv.yaml and its siblings)
// through the whole mock mode, load, assess and render, and compares the
// report byte for byte with oc's <name>.output (--details=none) and
// <name>.detailed-output (--details=all), the two ways oc's own example test
// runs them. The "now" of each run is the snapshot's, as in oc, so the result
// does not depend on when the test runs.
func TestMockGolden(t *testing.T) {
	cvFiles, err := filepath.Glob(filepath.Join(ocExamples, "*-cv.yaml"))
	if err != nil || len(cvFiles) == 0 {
		t.Fatalf("no oc examples in %s (err %v)", ocExamples, err)
	}
	for _, cvFile := range cvFiles {
		prefix := strings.TrimSuffix(cvFile, "-cv.yaml")
		name := filepath.Base(prefix)
		for _, tc := range []struct{ details, suffix string }{
			{"none", ".output"},
			{"all", ".detailed-output"},
		} {
			t.Run(name+tc.suffix, func(t *testing.T) {
				want, err := os.ReadFile(prefix + tc.suffix)
				if err != nil {
					t.Fatal(err)
				}
				var out, errOut, notices bytes.Buffer
				err = RunStatus(context.Background(), StatusOptions{
					Details: tc.details, MockClusterVersion: cvFile, Out: &out, ErrOut: &errOut, Notices: &notices,
				})
				if err != nil {
					t.Fatalf("RunStatus: %v", err)
				}
				if got := out.String(); got != string(want) {
					t.Errorf("output differs from oc's %s\n--- got ---\n%s\n--- want (oc) ---\n%s", prefix+tc.suffix, got, want)
				}

				// oc prints its alerts notice on the process's standard
				// output, not into the report its examples hold, and only
				// once it knows the cluster is updating.
				wantNotice := ""
				alerts := prefix + "-alerts.json"
				if _, err := os.Stat(alerts); errors.Is(err, fs.ErrNotExist) && string(want) != "The cluster is not updating.\n" {
					wantNotice = "Unable to fetch alerts, ignoring alerts in 'Update Health':  open " + alerts + ": no such file or directory\n"
				}
				if notices.String() != wantNotice {
					t.Errorf("notice %q, want %q", notices.String(), wantNotice)
				}
			})
		}
	}
}

// TestOwnSnapshots covers, with Upshift's own snapshots in testdata, what none
// of oc's examples shows. They have no golden output (nothing may generate
// one from this code); each is checked for the lines oc prints in that case,
// as oc's code words them.
func TestOwnSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name, details string
		want          []string
	}{
		// oc's assessment of a control plane update past its estimate.
		{"slow", "none", []string{"Assessment:      Progressing - Slow\n"}},
		// ... and of one whose ClusterVersion says it fails to proceed.
		{"stalled", "none", []string{"Assessment:      Stalled\n"}},
		// 14 workers, one degraded: oc lists ten of them and counts the rest.
		{"many-nodes", "none", []string{"\nworker-00   Degraded ", "\nOmitted additional 4 Total, "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := RunStatus(context.Background(), StatusOptions{Details: tc.details,
				MockClusterVersion: filepath.Join("testdata", tc.name+"-cv.yaml"), Out: &out, ErrOut: &out, Notices: &bytes.Buffer{}})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
	// A ClusterVersionList file, and oc's one line for a cluster that is not
	// updating.
	var out bytes.Buffer
	if err := RunStatus(context.Background(), StatusOptions{Details: "all",
		MockClusterVersion: filepath.Join("testdata", "not-updating-cv.yaml"), Out: &out, ErrOut: &out, Notices: &out}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "The cluster is not updating.\n" {
		t.Errorf("not-updating: %q", got)
	}
}
