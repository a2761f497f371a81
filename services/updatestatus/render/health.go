package render

import (
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

var levelRank = map[updatev1alpha1.InsightImpactLevel]int{
	updatev1alpha1.CriticalImpactLevel: 4,
	updatev1alpha1.ErrorImpactLevel:    3,
	updatev1alpha1.WarningImpactLevel:  2,
	updatev1alpha1.InfoImpactLevel:     1,
	updatev1alpha1.UnknownImpactLevel:  0,
}

// sortedHealth drops incomplete insights and orders the rest as oc does:
// newest first with sort.Slice, then most severe first with a stable sort.
// Unknown starts sort last. Ties keep the insights' order up to 12 insights
// (sort.Slice sorts that few by insertion); beyond, they fall as sort.Slice
// leaves them, which is deterministic for a given input order, and the
// assessment produces its insights in oc's order.
func sortedHealth(in []updatev1alpha1.HealthInsight) []updatev1alpha1.HealthInsight {
	var out []updatev1alpha1.HealthInsight
	for _, h := range in {
		if h.Impact.Summary != "" && h.Impact.Description != "" && h.Remediation.Reference != "" {
			out = append(out, h)
		}
	}
	started := func(h updatev1alpha1.HealthInsight) time.Time {
		if h.StartedAt == nil {
			return time.Time{}
		}
		return h.StartedAt.Time
	}
	sort.Slice(out, func(i, j int) bool { return started(out[i]).After(started(out[j])) })
	sort.SliceStable(out, func(i, j int) bool {
		return levelRank[out[i].Impact.Level] > levelRank[out[j].Impact.Level]
	})
	return out
}

func (r *renderer) since(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return ShortDuration(r.opts.Now.Sub(t.Time))
}

func (r *renderer) health() {
	insights := sortedHealth(r.in.Status.Health)
	r.printf("\n= Update Health =\n")
	if len(insights) > 0 && r.opts.show(DetailsHealth) {
		for i, h := range insights {
			if i > 0 {
				r.printf("\n")
			}
			r.healthBlock(h)
		}
		return
	}
	synthetic := len(insights) == 0
	if synthetic {
		// Nothing to report: say so, since the update started.
		started := metav1.NewTime(r.opts.Now.Add(-r.updatingFor()))
		insights = []updatev1alpha1.HealthInsight{{
			StartedAt: &started,
			Impact: updatev1alpha1.InsightImpact{
				Level: updatev1alpha1.InfoImpactLevel, Type: updatev1alpha1.NoneImpactType, Summary: "Update is proceeding well",
			},
		}}
	}
	tw := r.table()
	row(tw, "SINCE", "LEVEL", "IMPACT", "MESSAGE")
	for _, h := range insights {
		row(tw, r.since(h.StartedAt), string(h.Impact.Level), string(h.Impact.Type), h.Impact.Summary)
	}
	r.flush(tw)
	if !synthetic && (len(insights) > 1 || insights[0].Impact.Level != updatev1alpha1.InfoImpactLevel) {
		r.printf("\nRun with --details=health for additional description and links to related online documentation\n")
	}
}

// healthBlock prints one insight in the detailed form.
func (r *renderer) healthBlock(h updatev1alpha1.HealthInsight) {
	r.printf("Message: %s\n", h.Impact.Summary)
	r.printf("  %-13s%s\n", "Since:", r.since(h.StartedAt))
	r.printf("  %-13s%s\n", "Level:", h.Impact.Level)
	r.printf("  %-13s%s\n", "Impact:", h.Impact.Type)
	r.printf("  %-13s%s\n", "Reference:", h.Remediation.Reference)
	kinds, names, width := groupResources(h.Scope.Resources)
	if len(kinds) > 0 {
		r.printf("  Resources:\n")
	}
	for _, k := range kinds {
		r.printf("    %-*s %s\n", width+1, k+":", strings.Join(names[k], ", "))
	}
	// Continuation lines of a description are indented under its first line.
	desc := strings.ReplaceAll(h.Impact.Description, "\n", "\n"+strings.Repeat(" ", 15)+", ")
	r.printf("  %-13s%s\n", "Description:", desc)
}

// groupResources groups resource names by kind text ("nodes",
// "clusteroperators.config.openshift.io"), both sorted; width is the longest kind.
func groupResources(refs []updatev1alpha1.ResourceRef) ([]string, map[string][]string, int) {
	names := map[string][]string{}
	for _, ref := range refs {
		kind := ref.Resource
		if ref.Group != "" {
			kind += "." + ref.Group
		}
		name := ref.Name
		if ref.Namespace != "" {
			name = ref.Namespace + "/" + name
		}
		names[kind] = append(names[kind], name)
	}
	var kinds []string
	width := 0
	for k := range names {
		kinds = append(kinds, k)
		sort.Strings(names[k])
		width = max(width, len(k))
	}
	sort.Strings(kinds)
	return kinds, names, width
}
