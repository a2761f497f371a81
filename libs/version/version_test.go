package version

import (
	"testing"

	"github.com/blang/semver/v4"
)

func TestParse(t *testing.T) {
	for _, ok := range []string{"4.14.15", "4.16.0-rc.1", "4.16.0-ec.2", "4.14.15+build.1"} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "4.14", "v4.14.15", "4.14.x", "04.14.15", "latest"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		current, target string
		want            Stream
	}{
		{"4.14.1", "4.14.2", ZStream},
		{"4.14.9", "4.14.10", ZStream}, // numeric, not lexical
		{"4.14.10", "4.14.9", NotAnUpdate},
		{"4.14.2", "4.14.2", NotAnUpdate},
		{"4.14.2+a", "4.14.2+b", NotAnUpdate}, // build metadata does not order
		{"4.14.15", "4.15.0", YStream},
		{"4.9.0", "4.10.0", YStream}, // 10 > 9 numerically
		{"4.15.0", "4.14.20", NotAnUpdate},
		{"4.16.0-rc.1", "4.16.0", ZStream},
		{"4.16.0", "4.16.0-rc.1", NotAnUpdate},
		{"4.18.3", "5.0.0", YStream},
	} {
		c, t2 := mustParse(t, tc.current), mustParse(t, tc.target)
		if got := Classify(c, t2); got != tc.want {
			t.Errorf("Classify(%s, %s) = %s, want %s", tc.current, tc.target, got, tc.want)
		}
		if got := StrictlyGreater(c, t2); got != (tc.want != NotAnUpdate) {
			t.Errorf("StrictlyGreater(%s, %s) = %v", tc.current, tc.target, got)
		}
	}
}

func TestChannels(t *testing.T) {
	for _, tc := range []struct {
		group, version, want string
	}{
		{"stable", "4.14.15", "stable-4.14"},
		{"", "4.14.15", "stable-4.14"}, // ARO clusters report no group
		{"fast", "4.15.2", "fast-4.15"},
		{"eus", "4.14.3", "eus-4.14"},
		{"eus", "4.15.3", "eus-4.16"}, // odd minor rounds up
		{"candidate", "4.17.0-rc.2", "candidate-4.17"},
	} {
		if got := ChannelFor(tc.group, mustParse(t, tc.version)).String(); got != tc.want {
			t.Errorf("ChannelFor(%q, %s) = %s, want %s", tc.group, tc.version, got, tc.want)
		}
	}
	ch, err := ParseChannel("fast-4.14")
	if err != nil || ch != (Channel{Group: "fast", Major: 4, Minor: 14}) {
		t.Fatalf("ParseChannel = %+v, %v", ch, err)
	}
	ch, err = ParseChannel("stable-scos-4.14")
	if err != nil || ch.Group != "stable-scos" {
		t.Fatalf("ParseChannel(stable-scos-4.14) = %+v, %v", ch, err)
	}
	for _, bad := range []string{"stable", "stable-4", "stable-4.x", "-4.14", "stable-4.14.1"} {
		if _, err := ParseChannel(bad); err == nil {
			t.Errorf("ParseChannel(%q) accepted", bad)
		}
	}
	eus := Channel{Group: "eus", Major: 4, Minor: 16}
	if !eus.Admits(mustParse(t, "4.15.9")) || !eus.Admits(mustParse(t, "4.16.1")) || eus.Admits(mustParse(t, "4.17.0")) {
		t.Error("eus-4.16 must admit 4.15.z and 4.16.z only")
	}
	stable := Channel{Group: "stable", Major: 4, Minor: 16}
	if stable.Admits(mustParse(t, "4.15.9")) || !stable.Admits(mustParse(t, "4.16.3")) {
		t.Error("stable-4.16 must admit 4.16.z only")
	}
}

func mustParse(t *testing.T, s string) semver.Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
