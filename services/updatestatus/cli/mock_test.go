package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run `go test ./cli -run TestMockGolden -update` to rewrite the golden
// outputs after a deliberate change, then read the diff before keeping it.
var update = flag.Bool("update", false, "rewrite the golden outputs in testdata/")

// TestMockGolden runs every snapshot in testdata (each <name>-cv.yaml and its
// siblings) through the whole mock mode — load, assess, render — and compares
// the output byte for byte with <name>.output (--details=none) and
// <name>.detailed-output (--details=all), as oc's own example tests do.
func TestMockGolden(t *testing.T) {
	cvFiles, err := filepath.Glob(filepath.Join("testdata", "*-cv.yaml"))
	if err != nil || len(cvFiles) == 0 {
		t.Fatalf("no snapshots in testdata (err %v)", err)
	}
	for _, cvFile := range cvFiles {
		name := strings.TrimSuffix(filepath.Base(cvFile), "-cv.yaml")
		for _, tc := range []struct{ details, golden string }{
			{"none", name + ".output"},
			{"all", name + ".detailed-output"},
		} {
			t.Run(tc.golden, func(t *testing.T) {
				var out, errOut, notices bytes.Buffer
				err := RunStatus(context.Background(), StatusOptions{
					Details: tc.details, MockClusterVersion: cvFile, Out: &out, ErrOut: &errOut, Notices: &notices,
				})
				if err != nil {
					t.Fatalf("RunStatus: %v", err)
				}
				// Without an alerts file oc prints its notice outside the
				// report, once it knows the cluster is updating: never for a
				// cluster that is not.
				golden := filepath.Join("testdata", tc.golden)
				want, err := os.ReadFile(golden)
				if err != nil && !*update {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				wantNotice := ""
				if _, err := os.Stat(strings.TrimSuffix(cvFile, "-cv.yaml") + "-alerts.json"); err != nil &&
					string(want) != "The cluster is not updating.\n" {
					wantNotice = "Unable to fetch alerts, ignoring alerts in 'Update Health':  open " +
						strings.TrimSuffix(cvFile, "-cv.yaml") + "-alerts.json: no such file or directory\n"
				}
				if notices.String() != wantNotice {
					t.Errorf("notice %q, want %q", notices.String(), wantNotice)
				}
				if *update {
					if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if got := out.String(); got != string(want) {
					t.Errorf("output differs from %s (run with -update to accept it)\n--- got ---\n%s\n--- want ---\n%s", golden, got, want)
				}
			})
		}
	}
}
