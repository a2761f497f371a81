package framework

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	certutil "k8s.io/client-go/util/cert"
)

// MetricsCertSecret is the Secret a suite's chart is rendered to serve
// /metrics from (metrics.certSecret): in a cluster, OpenShift's service CA
// or cert-manager fills it.
const MetricsCertSecret = "upshift-e2e-metrics-tls"

// MetricsCert is the serving certificate of a component's /metrics, signed
// by a CA the test makes: the part OpenShift's service CA plays in a
// cluster. Every scrape of the suites verifies it, against the CA and the
// metrics Service's DNS name, as the platform Prometheus does.
type MetricsCert struct {
	// Dir holds tls.crt and tls.key, as the kubelet projects the chart's
	// certificate Secret into the pod; the process gets --metrics-cert-dir
	// pointing here.
	Dir string
	// CA signed the certificate.
	CA *x509.CertPool
	// ServerName is the name a scraper checks the certificate against: the
	// chart's (first) metrics Service, <service>.<namespace>.svc.
	ServerName string
}

// IssueMetricsCert checks that the chart, rendered with
// metrics.certSecret=MetricsCertSecret, mounts that Secret where its
// Deployments' --metrics-cert-dir says, and issues a certificate for every
// metrics Service the chart renders (a port named metrics) into a new
// folder under parent.
func (c *Chart) IssueMetricsCert(parent string) (*MetricsCert, error) {
	if err := c.mountsMetricsCert(); err != nil {
		return nil, err
	}
	var names []string
	for _, svc := range c.Kinds("Service") {
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range ports {
			if port, _ := p.(map[string]any); port["name"] == "metrics" {
				names = append(names, fmt.Sprintf("%s.%s.svc", svc.GetName(), svc.GetNamespace()))
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the chart renders no Service with a port named metrics")
	}
	slices.Sort(names)
	// A CA and a certificate it signs, for the first name with the others
	// as alternative names; the certificate file holds both, leaf first.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(names[0], nil, names[1:])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for rest := certPEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil && cert.IsCA {
			pool.AddCert(cert)
		}
	}
	dir, err := os.MkdirTemp(parent, "metrics-cert-")
	if err != nil {
		return nil, err
	}
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return &MetricsCert{Dir: dir, CA: pool, ServerName: names[0]}, nil
}

// mountsMetricsCert: every container of the chart's Deployments that gets
// --metrics-cert-dir mounts Secret MetricsCertSecret there, and at least
// one does.
func (c *Chart) mountsMetricsCert() error {
	found := 0
	for _, d := range c.Kinds("Deployment") {
		for _, m := range CertDirMounts(d) {
			if m.Secret != MetricsCertSecret {
				return fmt.Errorf("deployment %s: --metrics-cert-dir=%s, where Secret %s is not mounted", d.GetName(), m.Dir, MetricsCertSecret)
			}
			found++
		}
	}
	if found == 0 {
		return fmt.Errorf("no Deployment of the chart passes --metrics-cert-dir with metrics.certSecret=%s", MetricsCertSecret)
	}
	return nil
}

// CertDirMount is where one container of a Deployment reads its metrics
// serving certificate (--metrics-cert-dir) and the Secret mounted there
// (empty: none).
type CertDirMount struct {
	Dir, Secret string
}

// CertDirMounts lists, for each container of the Deployment d that passes
// --metrics-cert-dir, that folder and the Secret volume mounted at it, in
// container order.
func CertDirMounts(d *unstructured.Unstructured) []CertDirMount {
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	secretOf := map[string]string{}
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range volumes {
		vol, _ := v.(map[string]any)
		name, _, _ := unstructured.NestedString(vol, "name")
		secret, _, _ := unstructured.NestedString(vol, "secret", "secretName")
		secretOf[name] = secret
	}
	var out []CertDirMount
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	for _, ct := range containers {
		container, _ := ct.(map[string]any)
		args, _, _ := unstructured.NestedStringSlice(container, "args")
		for _, a := range args {
			dir, ok := strings.CutPrefix(a, "--metrics-cert-dir=")
			if !ok {
				continue
			}
			m := CertDirMount{Dir: dir}
			mounts, _, _ := unstructured.NestedSlice(container, "volumeMounts")
			for _, mt := range mounts {
				mount, _ := mt.(map[string]any)
				if mount["mountPath"] == dir && secretOf[fmt.Sprint(mount["name"])] != "" {
					m.Secret = secretOf[fmt.Sprint(mount["name"])]
				}
			}
			out = append(out, m)
		}
	}
	return out
}
