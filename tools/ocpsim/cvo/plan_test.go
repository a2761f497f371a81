package cvo

import (
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestLevels(t *testing.T) {
	levels := Levels(Operators())
	if levels[0][0].Name != "config-operator" || levels[1][0].Name != "etcd" || levels[2][0].Name != "kube-apiserver" {
		t.Fatalf("wrong start order: %v", levels[:3])
	}
	last := levels[len(levels)-1]
	if len(last) != 1 || last[0].Name != MachineConfig {
		t.Fatalf("machine-config must be the last level, got %v", last)
	}
	seen := 0
	for i, l := range levels {
		for _, op := range l {
			seen++
			if op.RunLevel != l[0].RunLevel {
				t.Errorf("level %d mixes run levels", i)
			}
			if i > 0 && op.RunLevel <= levels[i-1][0].RunLevel {
				t.Errorf("levels not ascending at %d", i)
			}
		}
	}
	if seen != len(Operators()) || seen < 30 {
		t.Errorf("operators lost or too few: %d", seen)
	}
	done := map[string]bool{"config-operator": true, "etcd": true}
	if got := CurrentLevel(levels, func(n string) bool { return done[n] }); got != 2 {
		t.Errorf("CurrentLevel = %d", got)
	}
	if got := CurrentLevel(levels, func(string) bool { return true }); got != len(levels) {
		t.Errorf("CurrentLevel all done = %d", got)
	}
}

func TestValidate(t *testing.T) {
	st := &configv1.ClusterVersionStatus{
		AvailableUpdates: UpdatesFrom([]string{"4.16.1", "4.16.2", "4.17.0"}, "4.16.1"),
		History:          []configv1.UpdateHistory{{Version: "4.16.1", Image: ReleaseImage("4.16.1"), State: configv1.CompletedUpdate, Verified: true}},
	}
	cases := []struct {
		name string
		du   *configv1.Update
		want Target
		err  string
	}{
		{"version in available updates", &configv1.Update{Version: "4.16.2"}, Target{"4.16.2", ReleaseImage("4.16.2"), true}, ""},
		{"image in available updates", &configv1.Update{Image: ReleaseImage("4.17.0")}, Target{"4.17.0", ReleaseImage("4.17.0"), true}, ""},
		{"version not available", &configv1.Update{Version: "4.18.0"}, Target{}, "when image is empty the update must be a previous version or an available update"},
		{"previous version", &configv1.Update{Version: "4.16.1"}, Target{"4.16.1", ReleaseImage("4.16.1"), true}, ""},
		{"unknown image without force", &configv1.Update{Image: "example.com/r:4.18.0-x86_64"}, Target{}, "cannot be verified"},
		{"unknown image with force", &configv1.Update{Image: "example.com/r:4.18.0-x86_64", Force: true}, Target{"4.18.0", "example.com/r:4.18.0-x86_64", false}, ""},
		{"version and image disagree", &configv1.Update{Version: "4.16.2", Image: ReleaseImage("4.17.0")}, Target{}, "does not match"},
		{"empty", &configv1.Update{}, Target{}, "must specify version or image"},
		{"nil", nil, Target{}, "must specify version or image"},
	}
	for _, c := range cases {
		got, err := Validate(c.du, st)
		if c.err != "" {
			var inv *InvalidError
			if !errors.As(err, &inv) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestVersions(t *testing.T) {
	if !Less("4.9.0", "4.10.0") || Less("4.10.0", "4.9.0") || Less("4.16.1", "4.16.1") {
		t.Error("Less")
	}
	ups := UpdatesFrom([]string{"4.16.0", "4.16.1", "4.16.10", "4.16.2"}, "4.16.1")
	if len(ups) != 2 || ups[0].Version != "4.16.10" || ups[1].Version != "4.16.2" {
		t.Errorf("UpdatesFrom = %+v", ups)
	}
	if got := VersionFromImage("quay.io/x/ocp-release:4.16.3-x86_64"); got != "4.16.3" {
		t.Errorf("VersionFromImage = %q", got)
	}
	if got := VersionFromImage("quay.io/x/ocp-release@sha256:abc"); got != "0.0.0-unknown" {
		t.Errorf("VersionFromImage digest = %q", got)
	}
	if got := ProgressMessage("4.16.2", 3, 33, []string{"kube-apiserver", "etcd"}); got != "Working towards 4.16.2: 3 of 33 done (9% complete), waiting on etcd, kube-apiserver" {
		t.Errorf("ProgressMessage = %q", got)
	}
}
