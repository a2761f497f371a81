package framework

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/libs/testenv"
)

// A chart like the update-status-controller's: a role bound to the
// controller, and a metrics-reader role bound to nobody.
const rbacChart = `
kind: ClusterRole
metadata: {name: c}
rules:
- {apiGroups: [authorization.k8s.io], resources: [subjectaccessreviews], verbs: [create]}
---
kind: ClusterRoleBinding
metadata: {name: c}
roleRef: {kind: ClusterRole, name: c}
subjects: [{kind: ServiceAccount, name: sa, namespace: ns}]
---
kind: ClusterRole
metadata: {name: c-metrics-reader}
rules:
- {nonResourceURLs: [/metrics], verbs: [get]}
`

func chartFrom(t *testing.T, docs ...string) *Chart {
	t.Helper()
	c := &Chart{}
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetAPIVersion("rbac.authorization.k8s.io/v1")
		c.Objects = append(c.Objects, u)
	}
	return c
}

// sar is the audit event of a SubjectAccessReview the controller created.
func sar(t *testing.T, user, verb, path string, allowed bool) testenv.AuditEvent {
	t.Helper()
	e := testenv.AuditEvent{Verb: "create",
		ObjectRef:      &testenv.AuditObjectRef{APIGroup: "authorization.k8s.io", Resource: "subjectaccessreviews"},
		ResponseStatus: &testenv.AuditStatus{Code: 201}}
	e.User.Username = "system:serviceaccount:ns:sa"
	var err error
	e.RequestObject, err = json.Marshal(map[string]any{"spec": map[string]any{"user": user,
		"nonResourceAttributes": map[string]any{"verb": verb, "path": path}}})
	if err != nil {
		t.Fatal(err)
	}
	e.ResponseObject, _ = json.Marshal(map[string]any{"status": map[string]any{"allowed": allowed}})
	return e
}

func TestMetricsReaderAuditCheck(t *testing.T) {
	c := chartFrom(t, splitDocs(rbacChart)...)
	perms, err := c.Permissions()
	if err != nil {
		t.Fatal(err)
	}
	bound, err := c.BoundRoles("ns", "sa")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(bound, []string{"ClusterRole/c"}) {
		t.Errorf("bound roles %v", bound)
	}
	reader, err := c.MetricsReaderRole()
	if err != nil || reader != "c-metrics-reader" {
		t.Fatalf("metrics-reader role %q, %v", reader, err)
	}
	readerPerms := OfRoles(perms, RoleKey("ClusterRole", "", reader))
	if want := []Permission{{Role: "ClusterRole/c-metrics-reader", NonResourceURL: "/metrics", Verb: "get"}}; !reflect.DeepEqual(readerPerms, want) {
		t.Fatalf("reader permissions %+v", readerPerms)
	}

	const scraper = "system:serviceaccount:mon:prom"
	controller := []testenv.AuditEvent{
		sar(t, "system:serviceaccount:mon:other", "get", "/metrics", false),
		sar(t, scraper, "get", "/healthz", true),
	}
	delegated, err := Delegated(controller)
	if err != nil {
		t.Fatal(err)
	}
	// Not used yet: the scraper asked for another path, and the allowed
	// /metrics request was someone else's.
	if got := Unused(readerPerms, ByUser(delegated, scraper)); len(got) != 1 {
		t.Errorf("want the reader permission unused, got %v", got)
	}
	if got := Refused(delegated); len(got) != 1 {
		t.Errorf("want the other identity's denial reported, got %v", got)
	}
	controller = append(controller, sar(t, scraper, "get", "/metrics", true))
	if delegated, err = Delegated(controller); err != nil {
		t.Fatal(err)
	}
	if got := Unused(readerPerms, ByUser(delegated, scraper)); len(got) != 0 {
		t.Errorf("the scraper's allowed get /metrics should use the permission, unused: %v", got)
	}
	if got := Refused(ByUser(delegated, scraper)); len(got) != 0 {
		t.Errorf("refused %v", got)
	}
	// The controller's own create on subjectaccessreviews is used too.
	if got := Unused(OfRoles(perms, bound...), controller); len(got) != 0 {
		t.Errorf("unused %v", got)
	}
	// A SubjectAccessReview logged without its body cannot be read.
	bare := controller[0]
	bare.RequestObject = nil
	if _, err := Delegated([]testenv.AuditEvent{bare}); err == nil {
		t.Error("want an error for a SubjectAccessReview without a body")
	}
}

func splitDocs(s string) []string {
	var out []string
	for _, d := range regexpDocSep.Split(s, -1) {
		if len(d) > 0 {
			out = append(out, d)
		}
	}
	return out
}

var regexpDocSep = regexp.MustCompile(`(?m)^---$`)

func TestAnApplyThatCreatesUsesCreate(t *testing.T) {
	perms := []Permission{{APIGroup: "update.upshift.io", Resource: "nodeprogressinsights", Verb: "create"}}
	apply := func(code int) testenv.AuditEvent {
		return testenv.AuditEvent{Verb: "patch", ResponseStatus: &testenv.AuditStatus{Code: code},
			ObjectRef: &testenv.AuditObjectRef{APIGroup: "update.upshift.io", Resource: "nodeprogressinsights", Name: "n"}}
	}
	if got := Unused(perms, []testenv.AuditEvent{apply(200)}); len(got) != 1 {
		t.Errorf("an apply that updated used create: unused %v", got)
	}
	if got := Unused(perms, []testenv.AuditEvent{apply(201)}); len(got) != 0 {
		t.Errorf("an apply that created left create unused: %v", got)
	}
}
