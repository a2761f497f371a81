package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/upshift-io/upshift/services/updatestatus/overview"
)

func TestOverviewErrors(t *testing.T) {
	_, _, err := run("overview", "-o", "yaml", "--kubeconfig=/nonexistent")
	if err == nil || err.Error() != `invalid --output value "yaml": must be json` {
		t.Errorf("err %v", err)
	}
}

// A verdict exits with its code and prints nothing; every other error
// prints one line and exits 1.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    int
		printed string
	}{
		{overview.ExitStatus{Verdict: overview.VerdictBlocked}, overview.ExitBlocked, ""},
		{fmt.Errorf("wrapped: %w", overview.ExitStatus{Verdict: overview.VerdictUpdating}), overview.ExitUpdating, ""},
		{errors.New("cannot reach the cluster"), 1, "error: cannot reach the cluster\n"},
	} {
		var stderr bytes.Buffer
		if code := exitCode(tc.err, &stderr); code != tc.code || stderr.String() != tc.printed {
			t.Errorf("%v: exit %d printing %q, want %d printing %q", tc.err, code, stderr.String(), tc.code, tc.printed)
		}
	}
}
