package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/upshift-io/upshift/libs/testenv"
)

// Permission is one verb on one resource that a chart grants, where
// (Namespace "" for a ClusterRole) and optionally for some names only.
type Permission struct {
	// Role grants it: "ClusterRole/<name>" or "Role/<namespace>/<name>".
	Role          string
	Namespace     string
	APIGroup      string
	Resource      string // with "/subresource" when it is one
	Verb          string
	ResourceNames []string
	// NonResourceURL is set, and the resource fields empty, for a rule on a
	// URL such as /metrics.
	NonResourceURL string
}

func (p Permission) String() string {
	if p.NonResourceURL != "" {
		return fmt.Sprintf("%s %s (%s)", p.Verb, p.NonResourceURL, p.Role)
	}
	s := fmt.Sprintf("%s %s", p.Verb, p.Resource)
	if p.APIGroup != "" {
		s = fmt.Sprintf("%s %s.%s", p.Verb, p.Resource, p.APIGroup)
	}
	if p.Namespace != "" {
		s += " in " + p.Namespace
	}
	if len(p.ResourceNames) > 0 {
		s += " named " + strings.Join(p.ResourceNames, ",")
	}
	return s
}

// RoleKey names a chart's Role or ClusterRole as Permission.Role does.
func RoleKey(kind, namespace, name string) string {
	if kind == "Role" {
		return "Role/" + namespace + "/" + name
	}
	return "ClusterRole/" + name
}

// Permissions lists every verb on every resource or non-resource URL that
// the chart's Roles and ClusterRoles grant, one Permission each.
func (c *Chart) Permissions() ([]Permission, error) {
	var out []Permission
	for _, o := range c.Kinds("ClusterRole", "Role") {
		role := &rbacv1.Role{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			return nil, err
		}
		ns := ""
		if o.GetKind() == "Role" {
			ns = o.GetNamespace()
		}
		key := RoleKey(o.GetKind(), o.GetNamespace(), o.GetName())
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, Permission{Role: key, Namespace: ns, APIGroup: g, Resource: res, Verb: v, ResourceNames: r.ResourceNames})
					}
				}
			}
			for _, u := range r.NonResourceURLs {
				for _, v := range r.Verbs {
					out = append(out, Permission{Role: key, NonResourceURL: u, Verb: v})
				}
			}
		}
	}
	return out, nil
}

// BoundRoles returns the keys of the chart's roles that its RoleBindings and
// ClusterRoleBindings grant to ServiceAccount namespace/name.
func (c *Chart) BoundRoles(namespace, name string) ([]string, error) {
	var out []string
	for _, o := range c.Kinds("ClusterRoleBinding", "RoleBinding") {
		b := &rbacv1.RoleBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
			return nil, err
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Name != name || s.Namespace != namespace {
				continue
			}
			if o.GetKind() == "RoleBinding" && b.RoleRef.Kind == "ClusterRole" {
				// Would grant the ClusterRole's rules in one namespace:
				// Permissions does not model that, so refuse it here.
				return nil, fmt.Errorf("RoleBinding %s/%s binds ClusterRole %s: not supported by the audit check",
					o.GetNamespace(), o.GetName(), b.RoleRef.Name)
			}
			key := RoleKey(b.RoleRef.Kind, o.GetNamespace(), b.RoleRef.Name)
			if !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
	}
	return out, nil
}

// RolesWith returns the keys of the chart's roles that grant any of perms.
func RolesWith(perms []Permission) []string {
	var out []string
	for _, p := range perms {
		if !slices.Contains(out, p.Role) {
			out = append(out, p.Role)
		}
	}
	return out
}

// OfRoles keeps the permissions granted by the given roles.
func OfRoles(perms []Permission, roles ...string) []Permission {
	var out []Permission
	for _, p := range perms {
		if slices.Contains(roles, p.Role) {
			out = append(out, p)
		}
	}
	return out
}

// usedBy reports whether an audit event exercised the permission. Verbs map
// one to one, except that a streaming list (a watch with
// sendInitialEvents=true, what client-go's informers send to a recent
// apiserver) is a list as well as a watch: an older apiserver gets a plain
// LIST from the same informer, so the list permission is needed all the same.
func (p Permission) usedBy(e testenv.AuditEvent) bool {
	if p.NonResourceURL != "" {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		return e.ObjectRef == nil && e.Verb == p.Verb && (path == p.NonResourceURL ||
			strings.HasSuffix(p.NonResourceURL, "*") && strings.HasPrefix(path, strings.TrimSuffix(p.NonResourceURL, "*")))
	}
	ref := e.ObjectRef
	if ref == nil || ref.APIGroup != p.APIGroup {
		return false
	}
	streamingList := e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true")
	// A server-side apply of a missing object is a patch request that the
	// apiserver also authorizes as create; it answers 201 Created.
	appliedCreate := e.Verb == "patch" && e.ResponseStatus != nil && e.ResponseStatus.Code == 201
	if e.Verb != p.Verb && !(p.Verb == "list" && streamingList) && !(p.Verb == "create" && appliedCreate) {
		return false
	}
	res := ref.Resource
	if ref.Subresource != "" {
		res += "/" + ref.Subresource
	}
	if res != p.Resource || (p.Namespace != "" && ref.Namespace != p.Namespace) {
		return false
	}
	return len(p.ResourceNames) == 0 || slices.Contains(p.ResourceNames, ref.Name) ||
		// list and watch by name are field-selected requests without a name.
		(ref.Name == "" && (p.Verb == "list" || p.Verb == "watch"))
}

// Unused returns the permissions that no event exercised.
func Unused(perms []Permission, events []testenv.AuditEvent) []Permission {
	var out []Permission
	for _, p := range perms {
		if !slices.ContainsFunc(events, p.usedBy) {
			out = append(out, p)
		}
	}
	return out
}

// Refused returns the requests the apiserver answered with 401 or 403.
func Refused(events []testenv.AuditEvent) []string {
	var out []string
	for _, e := range events {
		if e.ResponseStatus != nil && (e.ResponseStatus.Code == 401 || e.ResponseStatus.Code == 403) {
			out = append(out, fmt.Sprintf("%d %s %s", e.ResponseStatus.Code, e.Verb, e.RequestURI))
		}
	}
	return out
}

// ServiceAccountUser is the username a ServiceAccount authenticates as.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Delegated returns, from a component's audit events, the authorization
// decisions it asked the apiserver for on behalf of others (its
// SubjectAccessReviews, logged with their bodies by libs/testenv's audit
// policy), as events of the identity asked about: the user, the verb and
// path or resource asked for, and 200 when allowed or 403 when denied.
// Unused and Refused read them like the identity's own requests, which is how
// a suite proves that a scraper used its metrics-reader role and was never
// refused.
func Delegated(events []testenv.AuditEvent) ([]testenv.AuditEvent, error) {
	var out []testenv.AuditEvent
	for _, e := range events {
		if e.Verb != "create" || e.ObjectRef == nil || e.ObjectRef.APIGroup != "authorization.k8s.io" ||
			e.ObjectRef.Resource != "subjectaccessreviews" || e.ResponseStatus == nil ||
			e.ResponseStatus.Code < 200 || e.ResponseStatus.Code > 299 {
			continue
		}
		var req authorizationv1.SubjectAccessReview
		var resp authorizationv1.SubjectAccessReview
		if err := json.Unmarshal(e.RequestObject, &req); err != nil {
			return nil, fmt.Errorf("SubjectAccessReview request in the audit log (is the body logged?): %w", err)
		}
		if err := json.Unmarshal(e.ResponseObject, &resp); err != nil {
			return nil, fmt.Errorf("SubjectAccessReview response in the audit log: %w", err)
		}
		d := testenv.AuditEvent{}
		d.User.Username = req.Spec.User
		code := http.StatusForbidden
		if resp.Status.Allowed {
			code = http.StatusOK
		}
		d.ResponseStatus = &testenv.AuditStatus{Code: code}
		switch {
		case req.Spec.NonResourceAttributes != nil:
			d.Verb, d.RequestURI = req.Spec.NonResourceAttributes.Verb, req.Spec.NonResourceAttributes.Path
		case req.Spec.ResourceAttributes != nil:
			a := req.Spec.ResourceAttributes
			d.Verb = a.Verb
			d.ObjectRef = &testenv.AuditObjectRef{Resource: a.Resource, Subresource: a.Subresource, APIGroup: a.Group, Namespace: a.Namespace, Name: a.Name}
		default:
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// ByUser keeps the events of one user.
func ByUser(events []testenv.AuditEvent, user string) []testenv.AuditEvent {
	var out []testenv.AuditEvent
	for _, e := range events {
		if e.User.Username == user {
			out = append(out, e)
		}
	}
	return out
}
