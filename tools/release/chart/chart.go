// Package chart stamps a release into the Helm charts: every chart's
// version and appVersion are the release's, so the default image tag of
// each chart (its appVersion) is the tag `upshift-release push` pushes (the
// version the images were built as). The committed Chart.yaml files carry
// placeholders; only the copies packaged by `make charts` are stamped.
package chart

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Version is the chart version of a release version. Helm wants SemVer 2
// without the "v": v1.2.3 is 1.2.3 and v1.2.3-rc.1 is 1.2.3-rc.1; anything
// else (an untagged commit as `git describe` names it, 09800a8-dirty) is a
// pre-release of 0.0.0, 0.0.0-09800a8-dirty, older than any release.
func Version(release string) (string, error) {
	v := strings.TrimPrefix(release, "v")
	if v == "" {
		return "", fmt.Errorf("empty release version")
	}
	if !semverCore.MatchString(v) {
		// A tag that looks like a release but is not a whole one (v1.2)
		// is a mistake, not a commit.
		if looksLikeRelease.MatchString(v) {
			return "", fmt.Errorf("release version %q: want vMAJOR.MINOR.PATCH", release)
		}
		v = "0.0.0-" + v
	}
	if !semver.IsValid("v"+v) || !semverCore.MatchString(v) {
		return "", fmt.Errorf("release version %q gives chart version %q, which is not SemVer 2", release, v)
	}
	return v, nil
}

// semverCore: major.minor.patch, all three, as Helm requires of a chart.
var semverCore = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+]|$)`)

var looksLikeRelease = regexp.MustCompile(`^[0-9]+\.[0-9]+`)

var (
	versionLine    = regexp.MustCompile(`(?m)^version:.*$`)
	appVersionLine = regexp.MustCompile(`(?m)^appVersion:.*$`)
)

// Stamp returns Chart.yaml with its top-level version and appVersion set,
// every other line (comments included) unchanged.
func Stamp(chartYAML []byte, version, appVersion string) ([]byte, error) {
	for _, l := range []*regexp.Regexp{versionLine, appVersionLine} {
		if n := len(l.FindAll(chartYAML, -1)); n != 1 {
			return nil, fmt.Errorf("%d lines of Chart.yaml match %s, want 1", n, l)
		}
	}
	out := versionLine.ReplaceAllLiteral(chartYAML, []byte("version: "+version))
	// Quoted: a version such as 1.10 must stay a string.
	out = appVersionLine.ReplaceAllLiteral(out, []byte("appVersion: "+strconv.Quote(appVersion)))
	return out, nil
}

// StampDir stamps every <dir>/*/Chart.yaml with release: chart version
// Version(release), appVersion release. It returns the charts stamped.
func StampDir(dir, release string) ([]string, error) {
	version, err := Version(release)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no chart under %s", dir)
	}
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out, err := Stamp(raw, version, release)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if !bytes.Equal(raw, out) {
			if err := os.WriteFile(f, out, 0o644); err != nil {
				return nil, err
			}
		}
		names = append(names, filepath.Base(filepath.Dir(f)))
	}
	return names, nil
}
