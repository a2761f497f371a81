package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/upshift-io/upshift/tools/release/image"
)

func TestVersion(t *testing.T) {
	for release, want := range map[string]string{
		"v1.2.3":                 "1.2.3",
		"v1.2.3-rc.1":            "1.2.3-rc.1",
		"1.2.3":                  "1.2.3",
		"v1.2.3-4-g09800a8":      "1.2.3-4-g09800a8", // commits after a tag
		"09800a8":                "0.0.0-09800a8",    // git describe --always, no tag yet
		"09800a8-dirty":          "0.0.0-09800a8-dirty",
		"dev":                    "0.0.0-dev",
		"v10.20.30+build.7":      "10.20.30+build.7",
		"v1.2.3-rc.1+sha.abcdef": "1.2.3-rc.1+sha.abcdef",
	} {
		got, err := Version(release)
		if err != nil || got != want {
			t.Errorf("Version(%q) = %q, %v; want %q", release, got, err, want)
		}
	}
	// Helm refuses these as chart versions: so must we, before packaging.
	for _, bad := range []string{"", "v", "v1.2", "v01.2.3", "feature/x", "1.2.3-", "0.0.0-a..b"} {
		if got, err := Version(bad); err == nil {
			t.Errorf("Version(%q) = %q, want an error", bad, got)
		}
	}
}

func TestStampKeepsEverythingElse(t *testing.T) {
	in := []byte(`apiVersion: v2
name: demo
# version and appVersion are placeholders.
version: 0.1.0
appVersion: "0.1.0"
kubeVersion: ">=1.29.0-0"
dependencies:
  - name: sub
    version: ">=0.0.0-0"
`)
	want := strings.Replace(strings.Replace(string(in), "version: 0.1.0\n", "version: 1.10.0\n", 1),
		`appVersion: "0.1.0"`, `appVersion: "v1.10.0"`, 1)
	got, err := Stamp(in, "1.10.0", "v1.10.0")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("stamped:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Stamp([]byte("name: x\nversion: 1.0.0\n"), "1.0.0", "v1"); err == nil {
		t.Error("a Chart.yaml without appVersion was stamped")
	}
}

// The repository's charts, stamped as `make charts` stamps them, name by
// default exactly the images `make push` pushes for the same release: to
// ghcr.io/upshift-io by default, and to any REGISTRY through
// global.imageRegistry. helm renders them (UPSHIFT_HELM, set by the
// Makefile).
func TestStampedChartsNameThePushedImages(t *testing.T) {
	helm := os.Getenv("UPSHIFT_HELM")
	if helm == "" {
		t.Fatal("UPSHIFT_HELM is not set: run through make test, or set it to bin/tools/helm-<version>")
	}
	const release = "v1.4.2"
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "charts"))); err != nil {
		t.Fatal(err)
	}
	names, err := StampDir(dir, release)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 {
		t.Fatalf("stamped %v", names)
	}
	imageLine := regexp.MustCompile(`(?m)^\s+image: "([^"]+)"$`)
	components := 0
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(dir, n, "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"\nversion: 1.4.2\n", "\nappVersion: \"v1.4.2\"\n"} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("%s/Chart.yaml lacks %q", n, strings.TrimSpace(want))
			}
		}
		if strings.Contains(string(raw), "\ndependencies:") {
			continue // the umbrella: its images are its components'
		}
		components++
		// The chart's image is a binary `make images` builds.
		if _, err := os.Stat(filepath.Join(root, "cmd", n, "main.go")); err != nil {
			t.Errorf("chart %s has no cmd/%s/main.go, so no image of that name is built", n, n)
		}
		for registry, set := range map[string][]string{
			"ghcr.io/upshift-io":             nil,
			"registry.example.com:5000/up/x": {"--set", "global.imageRegistry=registry.example.com:5000/up/x"},
		} {
			// 1.30: the newest minimum among the charts (node-gate's).
			args := append([]string{"template", "rel", filepath.Join(dir, n), "--kube-version", "v1.30.0"}, set...)
			out, err := exec.Command(helm, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			ref, err := image.Reference(registry, n, release)
			if err != nil {
				t.Fatal(err)
			}
			images := imageLine.FindAllStringSubmatch(string(out), -1)
			if len(images) == 0 {
				t.Errorf("%s renders no image", n)
			}
			for _, m := range images {
				if m[1] != ref.String() {
					t.Errorf("%s renders image %s; make push %s pushes %s", n, m[1], registry, ref)
				}
			}
		}
	}
	if components == 0 {
		t.Error("no component chart stamped")
	}
}
