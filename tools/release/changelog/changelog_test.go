package changelog

import (
	"testing"
	"time"
)

func TestSection(t *testing.T) {
	log := "cccccccccc\tMerge branch 'h-x'\n" +
		"bbbbbbbbbb\tAdd the umbrella chart\n" +
		"dddddddddd\tfixup! Add the umbrella chart\n" +
		"aaaaaaaaaa\tBuild images with go-containerregistry\n"
	got := Section("v0.2.0", "v0.1.0", time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC), ParseLog(log))
	want := "## v0.2.0 (2026-11-23)\n\nChanges since v0.1.0:\n\n" +
		"- Build images with go-containerregistry (aaaaaaa)\n" +
		"- Add the umbrella chart (bbbbbbb)\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestSectionFirstReleaseAndEmpty(t *testing.T) {
	got := Section("v0.1.0", "", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), nil)
	want := "## v0.1.0 (2026-01-02)\n\nFirst release.\n\n- No changes.\n"
	if got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}
