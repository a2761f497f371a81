package cvo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GraphRelease is one release (node) of the simulated update service's graph.
type GraphRelease struct {
	// Version is the release's x.y.z version.
	Version string `json:"version"`
	// Channels are the update channels the release is in (stable-4.16,
	// fast-4.16, candidate-4.17, ...). Empty means every channel, which is
	// what a plain list of versions (Topology.Graph) gives.
	Channels []string `json:"channels,omitempty"`
	// Risks make every update to this release conditional: the CVO lists it
	// in status.conditionalUpdates with these risks, and also in
	// availableUpdates only when none of them applies to the cluster.
	Risks []Risk `json:"risks,omitempty"`
}

// Risk is a known issue of updating to a release, as the update service
// declares it on a conditional edge.
type Risk struct {
	// Name is the CamelCase risk name (it becomes the Recommended reason).
	Name string `json:"name"`
	// Message and URL describe the risk to people.
	Message string `json:"message"`
	URL     string `json:"url"`
	// PromQL is the risk's matching rule; empty means the rule type Always
	// (the risk applies to every cluster).
	PromQL string `json:"promql,omitempty"`
	// PromQLResult is what the simulated cluster monitoring answers for
	// PromQL: Match (the default), NoMatch, or Error (the query returns no
	// series, which the CVO cannot evaluate).
	PromQLResult PromQLResult `json:"promqlResult,omitempty"`
}

// PromQLResult is a simulated evaluation outcome of a PromQL matching rule.
type PromQLResult string

// PromQL evaluation outcomes.
const (
	PromQLMatch   PromQLResult = "Match"
	PromQLNoMatch PromQLResult = "NoMatch"
	PromQLError   PromQLResult = "Error"
)

// Graph is the simulated update service: every release it knows.
type Graph []GraphRelease

// PlainGraph is a graph of versions without channel information or risks.
func PlainGraph(versions []string) Graph {
	g := make(Graph, 0, len(versions))
	for _, v := range versions {
		g = append(g, GraphRelease{Version: v})
	}
	return g
}

// Lookup finds a release by version.
func (g Graph) Lookup(version string) (GraphRelease, bool) {
	for _, r := range g {
		if r.Version == version {
			return r, true
		}
	}
	return GraphRelease{}, false
}

// ByImage finds the release a pull spec names: its digest (ReleaseImage) or
// its tag (ReleaseTagImage).
func (g Graph) ByImage(image string) (GraphRelease, bool) {
	for _, r := range g {
		if image == ReleaseImage(r.Version) || image == ReleaseTagImage(r.Version) {
			return r, true
		}
	}
	return GraphRelease{}, false
}

// InChannel reports whether the release is in channel ch.
func (r GraphRelease) InChannel(ch string) bool {
	return len(r.Channels) == 0 || slices.Contains(r.Channels, ch)
}

// release is the Release the CVO publishes for r: the update service's
// image (by digest), errata URL and channels.
func (r GraphRelease) release() configv1.Release {
	rel := configv1.Release{Version: r.Version, Image: ReleaseImage(r.Version), URL: configv1.URL("https://access.redhat.com/errata/RHBA-" + r.Version)}
	if len(r.Channels) > 0 {
		rel.Channels = sortedCopy(r.Channels)
	}
	return rel
}

// Validate reports the first problem with the graph.
func (g Graph) Validate() error {
	seen := map[string]bool{}
	for _, r := range g {
		if _, ok := parseVersion(r.Version); !ok {
			return fmt.Errorf("graph release %q: want x.y.z", r.Version)
		}
		if seen[r.Version] {
			return fmt.Errorf("graph release %s is listed twice", r.Version)
		}
		seen[r.Version] = true
		names := map[string]bool{}
		for _, k := range r.Risks {
			if k.Name == "" || k.Message == "" || k.URL == "" {
				return fmt.Errorf("graph release %s: a risk needs a name, a message and a url", r.Version)
			}
			if names[k.Name] {
				return fmt.Errorf("graph release %s: risk %s is listed twice", r.Version, k.Name)
			}
			names[k.Name] = true
			switch k.PromQLResult {
			case "", PromQLMatch, PromQLNoMatch, PromQLError:
			default:
				return fmt.Errorf("graph release %s: risk %s: promqlResult %q: want Match, NoMatch or Error", r.Version, k.Name, k.PromQLResult)
			}
			if k.PromQLResult != "" && k.PromQL == "" {
				return fmt.Errorf("graph release %s: risk %s: promqlResult needs promql", r.Version, k.Name)
			}
		}
	}
	return nil
}

// ReleaseImage is the pull spec the simulated update service gives a
// release: by digest, as the real one does (the digest is derived from the
// version, so it is stable and distinct per release).
func ReleaseImage(version string) string {
	sum := sha256.Sum256([]byte("ocp-release\x00" + version))
	return "quay.io/openshift-release-dev/ocp-release@sha256:" + hex.EncodeToString(sum[:])
}

// ReleaseTagImage is the release's tagged pull spec
// (quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64).
func ReleaseTagImage(version string) string {
	return "quay.io/openshift-release-dev/ocp-release:" + version + "-x86_64"
}

// Updates is what the CVO publishes from the update service for the
// release it reconciles.
type Updates struct {
	Available   []configv1.Release
	Conditional []configv1.ConditionalUpdate
	// Retrieved is the RetrievedUpdates condition: status, reason, message.
	Retrieved struct {
		Status          configv1.ConditionStatus
		Reason, Message string
	}
	// Channels are the channels of the reconciled release (status.desired.channels).
	Channels []string
}

// ComputeUpdates is the CVO's view of the graph for a cluster reconciling
// version current on channel: the newer releases of the channel, the
// conditional ones with their risks evaluated (a recommended conditional
// update is in both lists, as the CVO does). prev carries the previous
// conditionalUpdates so that condition transition times stay put.
func ComputeUpdates(g Graph, channel, current string, prev []configv1.ConditionalUpdate, now metav1.Time) Updates {
	var u Updates
	u.Available = []configv1.Release{}
	cur, known := g.Lookup(current)
	switch {
	case known && len(cur.Channels) > 0:
		u.Channels = sortedCopy(cur.Channels)
	case known && channel != "":
		u.Channels = []string{channel} // in every channel: at least in this one
	}
	switch {
	case channel == "":
		u.Retrieved.Status, u.Retrieved.Reason, u.Retrieved.Message = configv1.ConditionFalse, "NoChannel", "The update channel has not been configured."
		return u
	case !known || !cur.InChannel(channel):
		u.Retrieved.Status, u.Retrieved.Reason = configv1.ConditionFalse, "VersionNotFound"
		u.Retrieved.Message = fmt.Sprintf("Unable to retrieve available updates: currently reconciling cluster version %s not found in the %q channel", current, channel)
		return u
	}
	u.Retrieved.Status = configv1.ConditionTrue
	var targets []GraphRelease
	for _, r := range g {
		if Less(current, r.Version) && r.InChannel(channel) {
			targets = append(targets, r)
		}
	}
	sort.Slice(targets, func(i, j int) bool { return Less(targets[j].Version, targets[i].Version) })
	for _, r := range targets {
		if len(r.Risks) == 0 {
			u.Available = append(u.Available, r.release())
			continue
		}
		rec := EvaluateRisks(r.Risks)
		rec.LastTransitionTime = now
		for _, p := range prev {
			if p.Release.Version != r.Version {
				continue
			}
			for _, c := range p.Conditions {
				if c.Type == rec.Type && c.Status == rec.Status {
					rec.LastTransitionTime = c.LastTransitionTime
				}
			}
		}
		cu := configv1.ConditionalUpdate{Release: r.release(), Conditions: []metav1.Condition{rec}}
		for _, k := range r.Risks {
			cu.Risks = append(cu.Risks, k.apiRisk())
		}
		u.Conditional = append(u.Conditional, cu)
		if rec.Status == metav1.ConditionTrue {
			u.Available = append(u.Available, r.release())
		}
	}
	return u
}

func (k Risk) apiRisk() configv1.ConditionalUpdateRisk {
	rule := configv1.ClusterCondition{Type: "Always"}
	if k.PromQL != "" {
		rule = configv1.ClusterCondition{Type: "PromQL", PromQL: &configv1.PromQLClusterCondition{PromQL: k.PromQL}}
	}
	return configv1.ConditionalUpdateRisk{Name: k.Name, Message: k.Message, URL: k.URL, MatchingRules: []configv1.ClusterCondition{rule}}
}

// match evaluates the risk's matching rule as the simulated cluster would.
func (k Risk) match() (bool, error) {
	if k.PromQL == "" {
		return true, nil
	}
	switch k.PromQLResult {
	case PromQLNoMatch:
		return false, nil
	case PromQLError:
		// What the CVO's PromQL condition reports for a query without series.
		return false, fmt.Errorf("invalid PromQL result length must be one, but is 0")
	}
	return true, nil
}

// Recommended is the condition type of a conditional update.
const Recommended = "Recommended"

// Recommended reasons the CVO uses besides a risk's own name.
const (
	RecommendedNotExposed       = "NotExposedToRisks"
	RecommendedEvaluationFailed = "EvaluationFailed"
	RecommendedMultiple         = "MultipleReasons"
	RecommendedExposed          = "ExposedToRisks"
)

// conditionReason is the pattern of a metav1.Condition reason; a risk name
// that does not fit is reported as ExposedToRisks.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// EvaluateRisks is the CVO's Recommended condition for an update with these
// risks: True (NotExposedToRisks) when none applies; False with the risk's
// name as reason when one applies (MultipleReasons for several different
// ones), its message and URL as message; Unknown (EvaluationFailed) when a
// rule cannot be evaluated and none applies.
func EvaluateRisks(risks []Risk) metav1.Condition {
	c := metav1.Condition{Type: Recommended, Status: metav1.ConditionTrue, Reason: RecommendedNotExposed,
		Message: "The update is recommended, because none of the conditional update risks apply to this cluster."}
	var msgs []string
	for _, k := range risks {
		match, err := k.match()
		switch {
		case err != nil:
			c.Status = recommendedStatus(c.Status, metav1.ConditionUnknown)
			c.Reason = recommendedReason(c.Reason, RecommendedEvaluationFailed)
			msgs = append(msgs, fmt.Sprintf("Could not evaluate exposure to update risk %s (%v)\n  %s description: %s\n  %s URL: %s", k.Name, err, k.Name, k.Message, k.Name, k.URL))
		case match:
			c.Status = recommendedStatus(c.Status, metav1.ConditionFalse)
			want := RecommendedExposed
			if conditionReason.MatchString(k.Name) {
				want = k.Name
			}
			c.Reason = recommendedReason(c.Reason, want)
			msgs = append(msgs, k.Message+" "+k.URL)
		}
	}
	if len(msgs) > 0 {
		c.Message = strings.Join(msgs, "\n\n")
	}
	return c
}

func recommendedStatus(now, want metav1.ConditionStatus) metav1.ConditionStatus {
	switch {
	case now == metav1.ConditionFalse || want == metav1.ConditionFalse:
		return metav1.ConditionFalse
	case now == metav1.ConditionUnknown || want == metav1.ConditionUnknown:
		return metav1.ConditionUnknown
	}
	return want
}

func recommendedReason(now, want string) string {
	if now == RecommendedNotExposed || now == want || (now == RecommendedExposed && want != RecommendedNotExposed) {
		return want
	}
	return RecommendedMultiple
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// The seeded graph lives in a ConfigMap, so that `ocpsim seed` and a later
// `ocpsim run` (or ocpsim.New in a test) agree on it without passing it twice.
const (
	GraphNamespace = "openshift-cluster-version"
	GraphConfigMap = "ocpsim-update-graph"
	GraphKey       = "graph.json"
)

// EncodeGraph is the GraphConfigMap's GraphKey value for g.
func EncodeGraph(g Graph) (string, error) {
	b, err := json.Marshal(g)
	return string(b), err
}

// DecodeGraph reads a GraphKey value.
func DecodeGraph(s string) (Graph, error) {
	var g Graph
	if err := json.Unmarshal([]byte(s), &g); err != nil {
		return nil, fmt.Errorf("%s/%s %s: %w", GraphNamespace, GraphConfigMap, GraphKey, err)
	}
	return g, g.Validate()
}

// GraphFromStatus rebuilds a graph from what a ClusterVersion lists (its
// updates, conditional updates and history), for clusters seeded without a
// GraphConfigMap. A conditional update's risks are taken to evaluate as they
// did: all applying when it was not recommended, none when it was.
func GraphFromStatus(st *configv1.ClusterVersionStatus) Graph {
	var g Graph
	add := func(r GraphRelease) {
		if _, ok := g.Lookup(r.Version); !ok && r.Version != "" {
			g = append(g, r)
		}
	}
	for _, cu := range st.ConditionalUpdates {
		r := GraphRelease{Version: cu.Release.Version, Channels: cu.Release.Channels}
		result := PromQLMatch
		for _, c := range cu.Conditions {
			if c.Type == Recommended && c.Status == metav1.ConditionTrue {
				result = PromQLNoMatch
			}
		}
		for _, k := range cu.Risks {
			risk := Risk{Name: k.Name, Message: k.Message, URL: k.URL}
			if len(k.MatchingRules) > 0 && k.MatchingRules[0].PromQL != nil {
				risk.PromQL, risk.PromQLResult = k.MatchingRules[0].PromQL.PromQL, result
			}
			r.Risks = append(r.Risks, risk)
		}
		add(r)
	}
	for _, u := range st.AvailableUpdates {
		add(GraphRelease{Version: u.Version, Channels: u.Channels})
	}
	if st.Desired.Version != "" {
		add(GraphRelease{Version: st.Desired.Version})
	}
	for _, h := range st.History {
		add(GraphRelease{Version: h.Version})
	}
	return g
}
