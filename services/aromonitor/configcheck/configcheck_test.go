package configcheck

import (
	"errors"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
)

func ingress(cert string) *operatorv1.IngressController {
	ic := &operatorv1.IngressController{}
	if cert != "" {
		ic.Spec.DefaultCertificate = &corev1.LocalObjectReference{Name: cert}
	}
	return ic
}

// The expected messages are ARO's checker's, word for word.
func TestIngress(t *testing.T) {
	const id configv1.ClusterID = "6d8f4a8e-1b2c-4c1e-9a43-0f1e2d3c4b5a"
	for _, tc := range []struct {
		name    string
		ic      *operatorv1.IngressController
		domain  string
		err     error
		passed  bool
		reason  string
		message string
	}{
		{"managed domain, the RP's certificate", ingress(string(id) + "-ingress"), "abcd1234.eastus.aroapp.io", nil, true, "CheckDone", "Default ingress certificate is in use"},
		{"US Government managed domain", ingress(string(id) + "-ingress"), "x.usgovvirginia.aroapp.azure.us", nil, true, "CheckDone", "Default ingress certificate is in use"},
		{"managed domain, no certificate", ingress(""), "abcd1234.eastus.aroapp.io", nil, false, "CheckFailed", "missing ingress certificate for cluster with managed domain"},
		{"managed domain, another certificate", ingress("my-cert"), "abcd1234.eastus.aroapp.io", nil, false, "CheckFailed", "invalid ingress certificate name for cluster with managed domain"},
		{"custom domain, no certificate", ingress(""), "apps.example.com", nil, false, "CheckFailed", "missing ingress certificate for cluster with custom domain"},
		{"custom domain, any certificate", ingress("my-cert"), "apps.example.com", nil, true, "CheckDone", "Default ingress certificate is in use"},
		{"a domain that only contains aroapp.io", ingress("my-cert"), "aroapp.io.example.com", nil, true, "CheckDone", "Default ingress certificate is in use"},
		{"unreadable", nil, "abcd1234.eastus.aroapp.io", errors.New(`ingresscontrollers.operator.openshift.io "default" not found`), false, "CheckFailed",
			`ingresscontrollers.operator.openshift.io "default" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Ingress(id, tc.ic, tc.domain, tc.err)
			if r.Passed != tc.passed || r.Reason != tc.reason || r.Message != tc.message || r.Summary != tc.message {
				t.Errorf("Ingress = %+v, want passed %v, %q, %q", r, tc.passed, tc.reason, tc.message)
			}
		})
	}
}

func TestDNS(t *testing.T) {
	server := func(zones []string, upstreams ...string) operatorv1.Server {
		return operatorv1.Server{Name: "s", Zones: zones, ForwardPlugin: operatorv1.ForwardPlugin{Upstreams: upstreams}}
	}
	for _, tc := range []struct {
		name    string
		servers []operatorv1.Server
		err     error
		passed  bool
		reason  string
		message string
	}{
		{"no servers", nil, nil, true, "CheckDone", "no in-cluster upstream DNS servers"},
		{"custom upstreams, in order", []operatorv1.Server{server([]string{"example.com"}, "10.0.0.1", "10.0.0.2"), server([]string{"corp"}, "1.1.1.1:5353")}, nil,
			true, "CheckDone", "custom upstream DNS servers in use: 10.0.0.1, 10.0.0.2, 1.1.1.1:5353"},
		{"the root zone forwarded", []operatorv1.Server{server([]string{"example.com"}, "10.0.0.1"), server([]string{"corp", "."}, "10.0.0.3")}, nil,
			false, "CheckDone", `malformed config: "." in zones`},
		{"unreadable", nil, errors.New("boom"), false, "CheckFailed", "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := DNS(&operatorv1.DNS{Spec: operatorv1.DNSSpec{Servers: tc.servers}}, tc.err)
			if r.Passed != tc.passed || r.Reason != tc.reason || r.Message != tc.message {
				t.Errorf("DNS = %+v, want passed %v, %q, %q", r, tc.passed, tc.reason, tc.message)
			}
		})
	}
}
