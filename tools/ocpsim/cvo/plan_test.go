package cvo

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	g := Graph{{Version: "4.16.1"}, {Version: "4.16.2"}, {Version: "4.17.0"},
		{Version: "4.16.4", Risks: []Risk{{Name: "R", Message: "m", URL: "https://example.com/r"}}},
		{Version: "4.18.1", Channels: []string{"candidate-4.18"}}}
	st := &configv1.ClusterVersionStatus{History: []configv1.UpdateHistory{{Version: "4.16.1", Image: ReleaseImage("4.16.1"), State: configv1.CompletedUpdate, Verified: true}}}
	u := ComputeUpdates(g, "stable-4.16", "4.16.1", nil, metav1.Now())
	st.AvailableUpdates, st.ConditionalUpdates = u.Available, u.Conditional
	unknown := "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("e", 64)
	cases := []struct {
		name string
		du   *configv1.Update
		want Target
		err  string // substring; "invalid:" or "retrieve:" prefix names the error type
	}{
		{"version in available updates", &configv1.Update{Version: "4.16.2"}, Target{Version: "4.16.2", Image: ReleaseImage("4.16.2"), Verified: true}, ""},
		{"image in available updates", &configv1.Update{Image: ReleaseImage("4.17.0")}, Target{Version: "4.17.0", Image: ReleaseImage("4.17.0"), Verified: true}, ""},
		{"version not available", &configv1.Update{Version: "4.18.0"}, Target{}, "invalid:when image is empty the update must be a previous version or an available update"},
		{"conditional version without its image", &configv1.Update{Version: "4.16.4"}, Target{}, "invalid:when image is empty"},
		{"conditional version with its image", &configv1.Update{Version: "4.16.4", Image: ReleaseImage("4.16.4")}, Target{Version: "4.16.4", Image: ReleaseImage("4.16.4"), Verified: true}, ""},
		{"digest of a graph release in another channel, no version", &configv1.Update{Image: ReleaseImage("4.18.1")}, Target{Version: "4.18.1", Image: ReleaseImage("4.18.1"), Verified: true}, ""},
		{"tag of a graph release", &configv1.Update{Image: ReleaseTagImage("4.18.1")}, Target{Version: "4.18.1", Image: ReleaseTagImage("4.18.1"), Verified: true}, ""},
		{"previous version", &configv1.Update{Version: "4.16.1"}, Target{Version: "4.16.1", Image: ReleaseImage("4.16.1"), Verified: true}, ""},
		{"unknown digest without force", &configv1.Update{Image: unknown}, Target{}, "retrieve:The update cannot be verified: unable to verify sha256:" + strings.Repeat("e", 64) + " against keyrings: verifier-public-key-redhat"},
		{"unknown tag without force", &configv1.Update{Image: "example.com/r:4.18.0-x86_64"}, Target{}, "retrieve:cannot be verified"},
		{"unknown image with force", &configv1.Update{Image: "example.com/r:4.18.0-x86_64", Force: true}, Target{Version: "4.18.0", Image: "example.com/r:4.18.0-x86_64",
			AcceptedRisks: `Target release version="" image="example.com/r:4.18.0-x86_64" cannot be verified, but continuing anyway because the update was forced: release image example.com/r:4.18.0-x86_64 is not in the available updates and force is not set`}, ""},
		{"version and image disagree", &configv1.Update{Version: "4.16.2", Image: ReleaseImage("4.17.0")}, Target{}, "invalid:does not match"},
		{"empty", &configv1.Update{}, Target{}, "invalid:must specify version or image"},
		{"nil", nil, Target{}, "invalid:must specify version or image"},
	}
	for _, c := range cases {
		got, err := Validate(c.du, st, g)
		if c.err != "" {
			var inv *InvalidError
			var ret *RetrieveError
			kind, sub, _ := strings.Cut(c.err, ":")
			typed := (kind == "invalid" && errors.As(err, &inv)) || (kind == "retrieve" && errors.As(err, &ret))
			if !typed || !strings.Contains(err.Error(), sub) {
				t.Errorf("%s: err = %T %v, want %s error with %q", c.name, err, err, kind, sub)
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
	ups := ComputeUpdates(PlainGraph([]string{"4.16.0", "4.16.1", "4.16.10", "4.16.2"}), "stable-4.16", "4.16.1", nil, metav1.Now()).Available
	if len(ups) != 2 || ups[0].Version != "4.16.10" || ups[1].Version != "4.16.2" {
		t.Errorf("ComputeUpdates = %+v", ups)
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

var digestRE = regexp.MustCompile(`^[a-z0-9.-]+/[a-z0-9._/-]+@sha256:[a-f0-9]{64}$`)
