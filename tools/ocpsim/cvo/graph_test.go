package cvo

import (
	"reflect"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvaluateRisks(t *testing.T) {
	always := Risk{Name: "ARisk", Message: "A is broken.", URL: "https://example.com/a"}
	always2 := Risk{Name: "BRisk", Message: "B is broken.", URL: "https://example.com/b"}
	noMatch := Risk{Name: "CRisk", Message: "C is broken.", URL: "https://example.com/c", PromQL: "group(cluster_version)", PromQLResult: PromQLNoMatch}
	promMatch := Risk{Name: "DRisk", Message: "D is broken.", URL: "https://example.com/d", PromQL: "group(cluster_version)"}
	evalErr := Risk{Name: "ERisk", Message: "E is broken.", URL: "https://example.com/e", PromQL: "absent(x)", PromQLResult: PromQLError}
	badName := Risk{Name: "has spaces", Message: "F is broken.", URL: "https://example.com/f"}
	const recommended = "The update is recommended, because none of the conditional update risks apply to this cluster."
	const unknownE = "Could not evaluate exposure to update risk ERisk (invalid PromQL result length must be one, but is 0)\n  ERisk description: E is broken.\n  ERisk URL: https://example.com/e"
	cases := []struct {
		name   string
		risks  []Risk
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{"Always applies: the risk name is the reason", []Risk{always}, metav1.ConditionFalse, "ARisk", "A is broken. https://example.com/a"},
		{"two risks apply", []Risk{always, always2}, metav1.ConditionFalse, "MultipleReasons", "A is broken. https://example.com/a\n\nB is broken. https://example.com/b"},
		{"PromQL does not match", []Risk{noMatch}, metav1.ConditionTrue, "NotExposedToRisks", recommended},
		{"PromQL matches", []Risk{noMatch, promMatch}, metav1.ConditionFalse, "DRisk", "D is broken. https://example.com/d"},
		{"evaluation fails", []Risk{evalErr}, metav1.ConditionUnknown, "EvaluationFailed", unknownE},
		{"evaluation fails and a risk applies", []Risk{evalErr, always}, metav1.ConditionFalse, "MultipleReasons", unknownE + "\n\nA is broken. https://example.com/a"},
		{"a name that is no condition reason", []Risk{badName}, metav1.ConditionFalse, "ExposedToRisks", "F is broken. https://example.com/f"},
	}
	for _, c := range cases {
		got := EvaluateRisks(c.risks)
		if got.Type != "Recommended" || got.Status != c.status || got.Reason != c.reason || got.Message != c.msg {
			t.Errorf("%s: got %s=%s %s %q; want %s %s %q", c.name, got.Type, got.Status, got.Reason, got.Message, c.status, c.reason, c.msg)
		}
	}
}

func versions(rs []configv1.Release) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Version)
	}
	return out
}

func TestComputeUpdates(t *testing.T) {
	risk := Risk{Name: "ARisk", Message: "A is broken.", URL: "https://example.com/a"}
	harmless := Risk{Name: "CRisk", Message: "C", URL: "https://example.com/c", PromQL: "q", PromQLResult: PromQLNoMatch}
	g := Graph{
		{Version: "4.16.1", Channels: []string{"stable-4.16", "fast-4.16", "candidate-4.16"}},
		{Version: "4.16.2", Channels: []string{"stable-4.16", "fast-4.16", "candidate-4.16"}},
		{Version: "4.16.3", Channels: []string{"fast-4.16", "candidate-4.16"}},
		{Version: "4.16.4", Channels: []string{"fast-4.16", "candidate-4.16"}, Risks: []Risk{risk}},
		{Version: "4.16.5", Channels: []string{"fast-4.16", "candidate-4.16"}, Risks: []Risk{harmless}},
		{Version: "4.17.0", Channels: []string{"candidate-4.17"}},
		{Version: "4.16.0"}, // every channel
	}
	now := metav1.NewTime(time.Unix(1700000000, 0))
	cases := []struct {
		channel, current   string
		available, cond    []string
		channels           []string
		retrieved          configv1.ConditionStatus
		reason, retrievMsg string
	}{
		{"stable-4.16", "4.16.1", []string{"4.16.2"}, nil, []string{"candidate-4.16", "fast-4.16", "stable-4.16"}, configv1.ConditionTrue, "", ""},
		{"fast-4.16", "4.16.1", []string{"4.16.5", "4.16.3", "4.16.2"}, []string{"4.16.5", "4.16.4"}, []string{"candidate-4.16", "fast-4.16", "stable-4.16"}, configv1.ConditionTrue, "", ""},
		{"fast-4.16", "4.16.3", []string{"4.16.5"}, []string{"4.16.5", "4.16.4"}, []string{"candidate-4.16", "fast-4.16"}, configv1.ConditionTrue, "", ""},
		{"candidate-4.17", "4.16.0", []string{"4.17.0"}, nil, []string{"candidate-4.17"}, configv1.ConditionTrue, "", ""},
		{"candidate-4.17", "4.16.1", nil, nil, []string{"candidate-4.16", "fast-4.16", "stable-4.16"}, configv1.ConditionFalse, "VersionNotFound",
			`Unable to retrieve available updates: currently reconciling cluster version 4.16.1 not found in the "candidate-4.17" channel`},
		{"fast-4.16", "4.18.0", nil, nil, nil, configv1.ConditionFalse, "VersionNotFound",
			`Unable to retrieve available updates: currently reconciling cluster version 4.18.0 not found in the "fast-4.16" channel`},
		{"", "4.16.1", nil, nil, []string{"candidate-4.16", "fast-4.16", "stable-4.16"}, configv1.ConditionFalse, "NoChannel", "The update channel has not been configured."},
	}
	for _, c := range cases {
		u := ComputeUpdates(g, c.channel, c.current, nil, now)
		var cond []string
		for _, cu := range u.Conditional {
			cond = append(cond, cu.Release.Version)
		}
		if !reflect.DeepEqual(versions(u.Available), c.available) || !reflect.DeepEqual(cond, c.cond) || !reflect.DeepEqual(u.Channels, c.channels) ||
			u.Retrieved.Status != c.retrieved || u.Retrieved.Reason != c.reason || u.Retrieved.Message != c.retrievMsg {
			t.Errorf("%s from %s: available %v conditional %v channels %v retrieved %+v; want %v %v %v %s %s %q",
				c.channel, c.current, versions(u.Available), cond, u.Channels, u.Retrieved, c.available, c.cond, c.channels, c.retrieved, c.reason, c.retrievMsg)
		}
	}

	u := ComputeUpdates(g, "fast-4.16", "4.16.1", nil, now)
	cu := u.Conditional[1]
	want := configv1.ConditionalUpdate{
		Release:    configv1.Release{Version: "4.16.4", Image: ReleaseImage("4.16.4"), URL: "https://access.redhat.com/errata/RHBA-4.16.4", Channels: []string{"candidate-4.16", "fast-4.16"}},
		Risks:      []configv1.ConditionalUpdateRisk{{Name: "ARisk", Message: "A is broken.", URL: "https://example.com/a", MatchingRules: []configv1.ClusterCondition{{Type: "Always"}}}},
		Conditions: []metav1.Condition{{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "ARisk", Message: "A is broken. https://example.com/a", LastTransitionTime: now}},
	}
	if !reflect.DeepEqual(cu, want) {
		t.Errorf("conditional update = %+v\nwant %+v", cu, want)
	}
	if r := u.Conditional[0].Risks[0]; r.MatchingRules[0].Type != "PromQL" || r.MatchingRules[0].PromQL.PromQL != "q" {
		t.Errorf("PromQL rule = %+v", r.MatchingRules)
	}
	later := metav1.NewTime(now.Add(time.Hour))
	if again := ComputeUpdates(g, "fast-4.16", "4.16.1", u.Conditional, later); !again.Conditional[1].Conditions[0].LastTransitionTime.Equal(&now) {
		t.Errorf("an unchanged Recommended condition moved its transition time to %v", again.Conditional[1].Conditions[0].LastTransitionTime)
	}

	if got := versions(ComputeUpdates(PlainGraph([]string{"4.16.1", "4.16.2", "4.17.0"}), "anything", "4.16.1", nil, now).Available); !reflect.DeepEqual(got, []string{"4.17.0", "4.16.2"}) {
		t.Errorf("a plain graph is in every channel: %v", got)
	}
}

func TestGraphEncoding(t *testing.T) {
	g := Graph{{Version: "4.16.1", Channels: []string{"stable-4.16"}}, {Version: "4.16.2", Risks: []Risk{{Name: "R", Message: "m", URL: "https://x", PromQL: "q", PromQLResult: PromQLError}}}}
	s, err := EncodeGraph(g)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeGraph(s)
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	for _, bad := range []Graph{
		{{Version: "4.16"}},
		{{Version: "4.16.1"}, {Version: "4.16.1"}},
		{{Version: "4.16.1", Risks: []Risk{{Name: "R"}}}},
		{{Version: "4.16.1", Risks: []Risk{{Name: "R", Message: "m", URL: "u", PromQLResult: PromQLNoMatch}}}},
		{{Version: "4.16.1", Risks: []Risk{{Name: "R", Message: "m", URL: "u", PromQL: "q", PromQLResult: "Maybe"}}}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", bad)
		}
	}
	if _, ok := g.ByImage(ReleaseImage("4.16.2")); !ok {
		t.Error("ByImage digest")
	}
	if ReleaseImage("4.16.1") == ReleaseImage("4.16.2") || !digestRE.MatchString(ReleaseImage("4.16.1")) {
		t.Errorf("ReleaseImage = %s", ReleaseImage("4.16.1"))
	}
}

func TestGraphFromStatus(t *testing.T) {
	g := Graph{{Version: "4.16.1"}, {Version: "4.16.2", Channels: []string{"fast-4.16"}},
		{Version: "4.16.3", Risks: []Risk{{Name: "R", Message: "m", URL: "https://x"}}},
		{Version: "4.16.4", Risks: []Risk{{Name: "S", Message: "m", URL: "https://x", PromQL: "q", PromQLResult: PromQLNoMatch}}}}
	now := metav1.Now()
	u := ComputeUpdates(g, "fast-4.16", "4.16.1", nil, now)
	st := &configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.16.1"}, AvailableUpdates: u.Available, ConditionalUpdates: u.Conditional}
	again := ComputeUpdates(GraphFromStatus(st), "fast-4.16", "4.16.1", u.Conditional, now)
	if !reflect.DeepEqual(again.Available, u.Available) || !reflect.DeepEqual(again.Conditional, u.Conditional) {
		t.Errorf("the graph rebuilt from status publishes something else:\n%+v\n%+v", again, u)
	}
}
