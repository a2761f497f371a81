package chartmetrics

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/upshift-io/upshift/e2e/framework"
)

// What OpenShift's monitoring expects, as its documentation and the
// cluster-monitoring-operator set it up.
const (
	platformCAFile     = "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
	platformSA         = "prometheus-k8s"
	platformNamespace  = "openshift-monitoring"
	servingCertAnn     = "service.beta.openshift.io/serving-cert-secret-name"
	injectCABundleAnn  = "service.beta.openshift.io/inject-cabundle"
	clusterMonitoring  = "openshift.io/cluster-monitoring"
	releaseNamespace   = "upshift"
	serviceAccountKind = "ServiceAccount"
)

// TestOpenShiftPlatformMonitoring renders every component chart for the
// platform Prometheus with the service CA: its ServiceAccount may get
// /metrics and discover the targets, every metrics Service asks the service
// CA for a certificate that the Deployments serve /metrics with, and every
// ServiceMonitor endpoint verifies it against the service CA's bundle and
// the Service's name.
func TestOpenShiftPlatformMonitoring(t *testing.T) {
	forEachComponentChart(t, func(t *testing.T, name string) {
		chart := render(t, name, "monitoring.openshift.platform=true", "monitoring.openshift.serviceCA=true")
		reader, err := chart.MetricsReaderRole()
		if err != nil {
			t.Fatal(err)
		}
		if !bound(chart, "ClusterRoleBinding", "ClusterRole", reader, platformNamespace, platformSA) {
			t.Errorf("ClusterRole %s is not bound to %s/%s: the platform Prometheus would get 403", reader, platformNamespace, platformSA)
		}
		var discovery string
		for _, r := range chart.Kinds("Role") {
			if r.GetNamespace() == releaseNamespace && grants(r, "", "endpoints", "list", "watch") &&
				grants(r, "", "services", "list", "watch") && grants(r, "", "pods", "list", "watch") {
				discovery = r.GetName()
			}
		}
		if discovery == "" || !bound(chart, "RoleBinding", "Role", discovery, platformNamespace, platformSA) {
			t.Errorf("no Role bound to %s/%s lists and watches the Services, Endpoints and Pods of %s", platformNamespace, platformSA, releaseNamespace)
		}
		if len(chart.Kinds("Namespace")) > countWithout(t, name) {
			t.Errorf("the release namespace is rendered without monitoring.openshift.createNamespace")
		}
		checkServingCerts(t, chart)
		for _, ep := range endpointsByService(t, chart) {
			if ep.fields["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
				t.Errorf("ServiceMonitor endpoint of %s: the platform Prometheus sends its own token (bearerTokenFile), got %v", ep.service, ep.fields)
			}
			tls, _ := ep.fields["tlsConfig"].(map[string]any)
			if tls["caFile"] != platformCAFile || tls["serverName"] != ep.serverName || tls["insecureSkipVerify"] != nil {
				t.Errorf("ServiceMonitor endpoint of %s: want the service CA file and serverName %s, verified; got %v", ep.service, ep.serverName, tls)
			}
		}
	})
}

// TestOpenShiftPlatformMonitoringCreatesTheLabelledNamespace: with
// createNamespace the chart renders its namespace, labelled for the
// platform Prometheus.
func TestOpenShiftPlatformMonitoringCreatesTheLabelledNamespace(t *testing.T) {
	forEachComponentChart(t, func(t *testing.T, name string) {
		chart := render(t, name, "monitoring.openshift.platform=true", "monitoring.openshift.serviceCA=true", "monitoring.openshift.createNamespace=true")
		found := false
		for _, ns := range chart.Kinds("Namespace") {
			if ns.GetName() == releaseNamespace {
				found = ns.GetLabels()[clusterMonitoring] == "true" && ns.GetAnnotations()["helm.sh/resource-policy"] == "keep"
			}
		}
		if !found {
			t.Errorf("no Namespace %s labelled %s=true and kept on uninstall", releaseNamespace, clusterMonitoring)
		}
	})
}

// TestOpenShiftUserWorkloadMonitoring renders every component chart for
// user-workload monitoring with the service CA: no ServiceMonitor names a
// file (user-workload monitoring refuses them); each sends the token of a
// ServiceAccount the chart creates, from its token Secret, and only that
// ServiceAccount is bound to read /metrics; the CA comes from a ConfigMap
// the service CA injects its bundle into.
func TestOpenShiftUserWorkloadMonitoring(t *testing.T) {
	forEachComponentChart(t, func(t *testing.T, name string) {
		chart := render(t, name, "monitoring.openshift.userWorkload=true", "monitoring.openshift.serviceCA=true")
		reader, err := chart.MetricsReaderRole()
		if err != nil {
			t.Fatal(err)
		}
		checkServingCerts(t, chart)
		for _, ep := range endpointsByService(t, chart) {
			for _, field := range []string{"bearerTokenFile", "bearerTokenSecret"} {
				if ep.fields[field] != nil {
					t.Errorf("ServiceMonitor endpoint of %s has %s, which user-workload monitoring refuses", ep.service, field)
				}
			}
			secretName, _, _ := unstructured.NestedString(ep.fields, "authorization", "credentials", "name")
			key, _, _ := unstructured.NestedString(ep.fields, "authorization", "credentials", "key")
			secret := object(chart, "Secret", secretName)
			if secret == nil || key != "token" || secret.Object["type"] != "kubernetes.io/service-account-token" {
				t.Errorf("ServiceMonitor endpoint of %s: want the token of a service-account-token Secret of the chart, got %s/%s", ep.service, secretName, key)
				continue
			}
			sa := secret.GetAnnotations()["kubernetes.io/service-account.name"]
			if object(chart, serviceAccountKind, sa) == nil || !bound(chart, "ClusterRoleBinding", "ClusterRole", reader, releaseNamespace, sa) {
				t.Errorf("the token Secret's ServiceAccount %q is not the chart's, bound to %s", sa, reader)
			}
			tls, _ := ep.fields["tlsConfig"].(map[string]any)
			cmName, _, _ := unstructured.NestedString(tls, "ca", "configMap", "name")
			cmKey, _, _ := unstructured.NestedString(tls, "ca", "configMap", "key")
			cm := object(chart, "ConfigMap", cmName)
			if cm == nil || cm.GetAnnotations()[injectCABundleAnn] != "true" || cmKey != "service-ca.crt" ||
				tls["serverName"] != ep.serverName || tls["insecureSkipVerify"] != nil || tls["caFile"] != nil {
				t.Errorf("ServiceMonitor endpoint of %s: want the CA from a ConfigMap with %s and serverName %s, verified; got %v", ep.service, injectCABundleAnn, ep.serverName, tls)
			}
			if cm != nil && cm.Object["data"] != nil {
				t.Errorf("ConfigMap %s has data: an upgrade would overwrite the injected bundle", cmName)
			}
		}
		if bound(chart, "ClusterRoleBinding", "ClusterRole", reader, platformNamespace, platformSA) {
			t.Errorf("user-workload monitoring binds the platform Prometheus too")
		}
	})
}

// TestOpenShiftMonitoringRefusesToScrapeUnverified: the OpenShift switches
// never render a ServiceMonitor that skips verification or cannot work.
func TestOpenShiftMonitoringRefusesToScrapeUnverified(t *testing.T) {
	forEachComponentChart(t, func(t *testing.T, name string) {
		for _, c := range []struct {
			set  []string
			want string
		}{
			{[]string{"monitoring.openshift.platform=true"}, "verify the metrics certificate"},
			{[]string{"monitoring.openshift.userWorkload=true"}, "verify the metrics certificate"},
			{[]string{"monitoring.openshift.platform=true", "monitoring.openshift.serviceCA=true", "metrics.secure=false"}, "metrics.secure=true"},
			{[]string{"monitoring.openshift.serviceCA=true", "metrics.certSecret=mine"}, "set one"},
			{[]string{"monitoring.openshift.platform=true", "monitoring.openshift.userWorkload=true", "monitoring.openshift.serviceCA=true"}, "platform"},
		} {
			_, err := framework.RenderChart(name, "r", releaseNamespace, c.set...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: want an error containing %q, got %v", c.set, c.want, err)
			}
		}
		// Off by default: nothing for OpenShift's monitoring.
		chart := render(t, name)
		if len(chart.Kinds("ServiceMonitor")) != 0 || bound(chart, "RoleBinding", "Role", "", platformNamespace, platformSA) {
			t.Errorf("the default values render a ServiceMonitor or bind the platform Prometheus")
		}
	})
}

func forEachComponentChart(t *testing.T, f func(t *testing.T, name string)) {
	components, _, err := framework.ChartDirs()
	if err != nil {
		t.Fatal(err)
	}
	if len(components) < 6 {
		t.Fatalf("found %d component charts", len(components))
	}
	for _, name := range components {
		t.Run(name, func(t *testing.T) { f(t, name) })
	}
}

func render(t *testing.T, name string, set ...string) *framework.Chart {
	t.Helper()
	chart, err := framework.RenderChart(name, "r", releaseNamespace, set...)
	if err != nil {
		t.Fatal(err)
	}
	return chart
}

// countWithout is the number of Namespaces the chart renders by default
// (aro-monitor's worker Lease namespace).
func countWithout(t *testing.T, name string) int {
	return len(render(t, name).Kinds("Namespace"))
}

func object(chart *framework.Chart, kind, name string) *unstructured.Unstructured {
	for _, o := range chart.Kinds(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// bound: a binding of that kind grants role (any, when empty) to
// ServiceAccount namespace/name.
func bound(chart *framework.Chart, bindingKind, roleKind, role, namespace, name string) bool {
	for _, b := range chart.Kinds(bindingKind) {
		ref, _, _ := unstructured.NestedStringMap(b.Object, "roleRef")
		if ref["kind"] != roleKind || (role != "" && ref["name"] != role) {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			if sub, _ := s.(map[string]any); sub["kind"] == serviceAccountKind && sub["name"] == name && sub["namespace"] == namespace {
				return true
			}
		}
	}
	return false
}

// grants: a rule of the Role allows every verb on the resource of group.
func grants(role *unstructured.Unstructured, group, resource string, verbs ...string) bool {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		has := func(field, v string) bool {
			list, _, _ := unstructured.NestedStringSlice(rule, field)
			for _, x := range list {
				if x == v {
					return true
				}
			}
			return false
		}
		ok := has("apiGroups", group) && has("resources", resource)
		for _, v := range verbs {
			ok = ok && has("verbs", v)
		}
		if ok {
			return true
		}
	}
	return false
}

// checkServingCerts: every metrics Service asks the service CA for a
// certificate Secret, and every Deployment whose pods it selects mounts
// that Secret where its --metrics-cert-dir points.
func checkServingCerts(t *testing.T, chart *framework.Chart) {
	t.Helper()
	for _, svc := range metricsServices(chart) {
		secret := svc.GetAnnotations()[servingCertAnn]
		if secret == "" {
			t.Errorf("Service %s has no %s annotation", svc.GetName(), servingCertAnn)
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		served := 0
		for _, d := range chart.Kinds("Deployment") {
			podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
			if !labels.SelectorFromSet(sel).Matches(labels.Set(podLabels)) {
				continue
			}
			if err := mountsSecretAtCertDir(d, secret); err != nil {
				t.Errorf("Service %s: %v", svc.GetName(), err)
			}
			served++
		}
		if served == 0 {
			t.Errorf("Service %s selects no Deployment's pods", svc.GetName())
		}
	}
}

func mountsSecretAtCertDir(d *unstructured.Unstructured, secret string) error {
	mounts := framework.CertDirMounts(d)
	if len(mounts) == 0 {
		return fmt.Errorf("deployment %s serves /metrics without --metrics-cert-dir", d.GetName())
	}
	if m := mounts[0]; m.Secret != secret {
		return fmt.Errorf("deployment %s: Secret %s is not mounted at --metrics-cert-dir=%s", d.GetName(), secret, m.Dir)
	}
	return nil
}

func metricsServices(chart *framework.Chart) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, svc := range chart.Kinds("Service") {
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range ports {
			if port, _ := p.(map[string]any); port["name"] == "metrics" {
				out = append(out, svc)
			}
		}
	}
	return out
}

// endpoint is a ServiceMonitor endpoint, the metrics Service it selects,
// and the name that Service's certificate is issued for.
type endpoint struct {
	service, serverName string
	fields              map[string]any
}

// endpointsByService returns every ServiceMonitor endpoint; every metrics
// Service must be selected by exactly one ServiceMonitor.
func endpointsByService(t *testing.T, chart *framework.Chart) []endpoint {
	t.Helper()
	var out []endpoint
	services := metricsServices(chart)
	for _, sm := range chart.Kinds("ServiceMonitor") {
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		var selected []string
		for _, svc := range services {
			if labels.SelectorFromSet(sel).Matches(labels.Set(svc.GetLabels())) {
				selected = append(selected, svc.GetName())
			}
		}
		if len(selected) != 1 {
			t.Errorf("ServiceMonitor %s selects metrics Services %v, want one", sm.GetName(), selected)
			continue
		}
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		for _, e := range eps {
			fields, _ := e.(map[string]any)
			out = append(out, endpoint{service: selected[0], serverName: selected[0] + "." + releaseNamespace + ".svc", fields: fields})
		}
	}
	if len(out) != len(services) || len(out) == 0 {
		t.Errorf("%d ServiceMonitor endpoints for %d metrics Services", len(out), len(services))
	}
	return out
}
