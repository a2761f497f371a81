package framework

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/upshift-io/upshift/libs/testenv"
)

// Permission is one verb on one resource that a chart grants, where
// (Namespace "" for a ClusterRole) and optionally for some names only.
type Permission struct {
	Namespace     string
	APIGroup      string
	Resource      string // with "/subresource" when it is one
	Verb          string
	ResourceNames []string
}

func (p Permission) String() string {
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

// Permissions lists every verb on every resource that the chart's Roles and
// ClusterRoles grant, one Permission each.
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
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, Permission{Namespace: ns, APIGroup: g, Resource: res, Verb: v, ResourceNames: r.ResourceNames})
					}
				}
			}
		}
	}
	return out, nil
}

// usedBy reports whether an audit event exercised the permission. Verbs map
// one to one, except that a streaming list (a watch with
// sendInitialEvents=true, what client-go's informers send to a recent
// apiserver) is a list as well as a watch: an older apiserver gets a plain
// LIST from the same informer, so the list permission is needed all the same.
func (p Permission) usedBy(e testenv.AuditEvent) bool {
	ref := e.ObjectRef
	if ref == nil || ref.APIGroup != p.APIGroup {
		return false
	}
	streamingList := e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true")
	if e.Verb != p.Verb && !(p.Verb == "list" && streamingList) {
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
