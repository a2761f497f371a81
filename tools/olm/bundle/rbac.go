package bundle

import (
	"fmt"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// rbac is the chart's RBAC as a CSV states it.
type rbac struct {
	// namespaced are the rules of the Roles bound in the install namespace
	// (CSV permissions); cluster those of the ClusterRoles bound to the
	// ServiceAccounts, and of the Roles bound in any other namespace (CSV
	// clusterPermissions). One entry per ServiceAccount.
	namespaced, cluster []v1alpha1.StrategyDeploymentPermissions
	// others are ClusterRoles and ClusterRoleBindings for someone else
	// (the metrics reader's), carried as manifests.
	others []*unstructured.Unstructured
	notes  []string
}

// permissions reads the chart's ServiceAccounts, Roles, ClusterRoles and
// their bindings. OLM creates the ServiceAccounts named in the CSV and binds
// each its rules, so the chart's own bindings are not carried; a binding to
// anyone else is.
//
// A registry+v1 bundle cannot grant a Role in a namespace other than the one
// it is installed in: OLM creates every namespaced object there. Such a Role
// (the charts use them for openshift-machine-api, openshift-config and the
// like) becomes a cluster-wide grant of the same rules, resourceNames kept,
// and a note says so.
func permissions(objs []*unstructured.Unstructured, deployments []*appsv1.Deployment) (rbac, error) {
	var out rbac
	var accounts []string
	isAccount := map[string]bool{}
	roles := map[string]*rbacv1.Role{}
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	var clusterRoleOrder []string
	var bindings []*rbacv1.RoleBinding
	var clusterBindings []*unstructured.Unstructured

	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			if o.GetNamespace() != InstallNamespace {
				return out, fmt.Errorf("ServiceAccount %s in namespace %s: OLM creates ServiceAccounts only where it installs", o.GetName(), o.GetNamespace())
			}
			accounts = append(accounts, o.GetName())
			isAccount[o.GetName()] = true
			if len(o.GetAnnotations()) > 0 {
				out.notes = append(out.notes, fmt.Sprintf("ServiceAccount %s: its annotations are not carried (OLM creates it)", o.GetName()))
			}
		case "Role":
			var r rbacv1.Role
			if err := fromUnstructured(o, &r); err != nil {
				return out, err
			}
			roles[r.Namespace+"/"+r.Name] = &r
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := fromUnstructured(o, &r); err != nil {
				return out, err
			}
			clusterRoles[r.Name] = &r
			clusterRoleOrder = append(clusterRoleOrder, r.Name)
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := fromUnstructured(o, &b); err != nil {
				return out, err
			}
			bindings = append(bindings, &b)
		case "ClusterRoleBinding":
			clusterBindings = append(clusterBindings, o)
		}
	}
	for _, d := range deployments {
		if sa := d.Spec.Template.Spec.ServiceAccountName; !isAccount[sa] {
			return out, fmt.Errorf("the Deployment %s runs as ServiceAccount %q, which the chart does not create", d.Name, sa)
		}
	}

	namespaced := map[string][]rbacv1.PolicyRule{}
	cluster := map[string][]rbacv1.PolicyRule{}
	usedRole := map[string]bool{}
	usedClusterRole := map[string]bool{}

	// ours returns the binding's subjects that are the chart's
	// ServiceAccounts, and fails on a binding that mixes them with others.
	ours := func(kind, name string, subjects []rbacv1.Subject) ([]string, error) {
		var sas []string
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == InstallNamespace && isAccount[s.Name] {
				sas = append(sas, s.Name)
			}
		}
		if len(sas) > 0 && len(sas) != len(subjects) {
			return nil, fmt.Errorf("%s %s binds the chart's ServiceAccounts and others at once", kind, name)
		}
		return sas, nil
	}

	for _, b := range bindings {
		sas, err := ours("RoleBinding", b.Name, b.Subjects)
		if err != nil {
			return out, err
		}
		if len(sas) == 0 {
			return out, fmt.Errorf("RoleBinding %s/%s binds none of the chart's ServiceAccounts; OLM would create it in the install namespace", b.Namespace, b.Name)
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "Role":
			r, ok := roles[b.Namespace+"/"+b.RoleRef.Name]
			if !ok {
				return out, fmt.Errorf("RoleBinding %s/%s refers to Role %s, which the chart does not render", b.Namespace, b.Name, b.RoleRef.Name)
			}
			usedRole[b.Namespace+"/"+b.RoleRef.Name] = true
			rules = r.Rules
		case "ClusterRole":
			r, ok := clusterRoles[b.RoleRef.Name]
			if !ok {
				return out, fmt.Errorf("RoleBinding %s/%s refers to ClusterRole %s, which the chart does not render", b.Namespace, b.Name, b.RoleRef.Name)
			}
			usedClusterRole[b.RoleRef.Name] = true
			rules = r.Rules
		}
		for _, sa := range sas {
			if b.Namespace == InstallNamespace {
				namespaced[sa] = append(namespaced[sa], rules...)
			} else {
				cluster[sa] = append(cluster[sa], rules...)
				out.notes = append(out.notes, fmt.Sprintf("%s %s of namespace %s: granted to %s cluster-wide (resourceNames kept), since OLM creates every namespaced object in the install namespace",
					b.RoleRef.Kind, b.RoleRef.Name, b.Namespace, sa))
			}
		}
	}

	for _, o := range clusterBindings {
		var b rbacv1.ClusterRoleBinding
		if err := fromUnstructured(o, &b); err != nil {
			return out, err
		}
		sas, err := ours("ClusterRoleBinding", b.Name, b.Subjects)
		if err != nil {
			return out, err
		}
		if len(sas) == 0 {
			out.others = append(out.others, o)
			continue
		}
		r, ok := clusterRoles[b.RoleRef.Name]
		if !ok {
			return out, fmt.Errorf("ClusterRoleBinding %s refers to ClusterRole %s, which the chart does not render", b.Name, b.RoleRef.Name)
		}
		usedClusterRole[b.RoleRef.Name] = true
		for _, sa := range sas {
			cluster[sa] = append(cluster[sa], r.Rules...)
		}
	}

	for k := range roles {
		if !usedRole[k] {
			return out, fmt.Errorf("the Role %s is bound to none of the chart's ServiceAccounts", k)
		}
	}
	for _, name := range clusterRoleOrder {
		if usedClusterRole[name] {
			continue
		}
		for _, o := range objs {
			if o.GetKind() == "ClusterRole" && o.GetName() == name {
				out.others = append(out.others, o)
			}
		}
	}
	// OLM creates only the ServiceAccounts the CSV grants something to.
	for _, d := range deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if len(namespaced[sa]) == 0 && len(cluster[sa]) == 0 {
			return out, fmt.Errorf("the Deployment %s runs as ServiceAccount %s, which the chart grants nothing: OLM would not create it", d.Name, sa)
		}
	}
	for _, sa := range accounts {
		if rules := namespaced[sa]; len(rules) > 0 {
			out.namespaced = append(out.namespaced, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules})
		}
		if rules := cluster[sa]; len(rules) > 0 {
			out.cluster = append(out.cluster, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules})
		}
	}
	return out, nil
}
