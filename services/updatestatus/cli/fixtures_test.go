package cli

import (
	"path/filepath"

	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

// fatalHelper is what loadAssessed needs of a test: *testing.T or, in a
// Ginkgo spec, GinkgoT().
type fatalHelper interface {
	Helper()
	Fatal(args ...any)
}

// loadAssessed loads the fixture snapshot testdata/<name>-cv.yaml and assesses
// it as oc would (no previous insights).
func loadAssessed(t fatalHelper, name string) (*snapshot.Loaded, assess.Result) {
	t.Helper()
	loaded, err := snapshot.Load(filepath.Join("testdata", name+"-cv.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := assess.Assess(loaded.Snapshot, nil)
	if err != nil {
		t.Fatal(err)
	}
	return loaded, result
}
