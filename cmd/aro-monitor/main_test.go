package main

import (
	"net/url"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestValidateNamesTheFlag(t *testing.T) {
	ok := func() *options {
		return &options{role: "master", credentials: DefaultCredentials}
	}
	if err := ok().validate(); err != nil {
		t.Fatalf("the chart's master flags: %v", err)
	}
	worker := ok()
	worker.role, worker.nodeName = "worker", "w-1"
	if err := worker.validate(); err != nil {
		t.Fatalf("the chart's worker flags: %v", err)
	}
	for _, tc := range []struct {
		mut  func(*options)
		want string
	}{
		{func(o *options) { o.role = "" }, "--role"},
		{func(o *options) { o.role = "infra" }, "--role"},
		{func(o *options) { o.credentials = "azure-credentials" }, "--credentials-secret"},
		{func(o *options) { o.credentials = "kube-system/" }, "--credentials-secret"},
		{func(o *options) { o.armEndpoint = "https://arm.example" }, "--aad-authority-host"},
		{func(o *options) { o.role = "worker" }, "--node-name"},
	} {
		o := ok()
		tc.mut(o)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming it", tc.want, err)
		}
	}
}

func TestCacheOptionsPerRole(t *testing.T) {
	master := cacheOptions(&options{role: "master", credentials: DefaultCredentials})
	worker := cacheOptions(&options{role: "worker", credentials: DefaultCredentials})
	// The worker watches the Cluster and the MonitorConfig only: no
	// Machines, MachineSets, Secrets or Deployments, which its RBAC does
	// not grant.
	if len(worker.ByObject) != 2 || len(master.ByObject) != 9 {
		t.Errorf("informers: worker %d, master %d; want 2 and 9", len(worker.ByObject), len(master.ByObject))
	}
	// ARO operator's Deployments are cached without their pod template:
	// only replicas and readiness decide who owns a check.
	for obj, by := range master.ByObject {
		if _, ok := obj.(*appsv1.Deployment); !ok {
			continue
		}
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "aro-operator"}}}}}}
		out, err := by.Transform(d)
		if err != nil || len(out.(*appsv1.Deployment).Spec.Template.Spec.Containers) != 0 || *out.(*appsv1.Deployment).Spec.Replicas != 1 {
			t.Errorf("the Deployment transform kept %+v (%v)", out, err)
		}
		if len(by.Namespaces) != 1 {
			t.Errorf("Deployments cached in %v, want ARO operator's namespace only", by.Namespaces)
		}
	}
	for obj, by := range master.ByObject {
		if by.Field == nil && by.Namespaces == nil {
			t.Errorf("%T is cached cluster-wide, unfiltered", obj)
		}
	}
}

func TestProbeProxyComesFromTheFlagsOnly(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://env-proxy:3128")
	t.Setenv("NO_PROXY", "")
	if (&options{}).probeProxy() != nil {
		t.Fatal("no --probe-* flag: the probes go direct, whatever the environment says")
	}
	o := &options{probeHTTPSProxy: "http://proxy.corp:3128", probeNoProxy: "internal.corp,10.0.0.0/8"}
	proxy := o.probeProxy()
	for target, want := range map[string]string{
		"https://management.azure.com/":   "http://proxy.corp:3128",
		"https://registry.internal.corp/": "",
		"https://10.1.2.3/":               "",
		"http://plain.example/":           "", // no --probe-http-proxy
	} {
		u, _ := url.Parse(target)
		got, err := proxy(u)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if g := urlString(got); g != want {
			t.Errorf("%s: proxy %q, want %q", target, g, want)
		}
	}
}

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}
