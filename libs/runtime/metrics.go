package runtime

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Names of the certificate and key in --metrics-cert-dir: controller-runtime's
// defaults, and the keys of a kubernetes.io/tls Secret (what cert-manager
// writes), so a mounted Secret works as is.
const (
	MetricsCertName = "tls.crt"
	MetricsKeyName  = "tls.key"
)

// MetricsOptions is how /metrics is served. With --metrics-secure (the
// default) it is HTTPS, and controller-runtime's filter lets a request through
// only if the kube-apiserver authenticates its bearer token (TokenReview) and
// authorizes the caller for "get" on the non-resource URL /metrics
// (SubjectAccessReview): 401 without a valid token, 403 without the
// permission. The component's ServiceAccount therefore needs create on
// tokenreviews and subjectaccessreviews, and the scraper a role with
// nonResourceURLs ["/metrics"], verbs ["get"].
func MetricsOptions(f *Flags) (metricsserver.Options, error) {
	opts := metricsserver.Options{BindAddress: f.MetricsBindAddress}
	if !f.MetricsSecure {
		return opts, nil
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	if f.MetricsCertDir != "" {
		// controller-runtime silently falls back to a self-signed
		// certificate when the files are missing; someone who named a
		// folder wants to hear that it is empty.
		for _, name := range []string{MetricsCertName, MetricsKeyName} {
			if _, err := os.Stat(filepath.Join(f.MetricsCertDir, name)); err != nil {
				return opts, fmt.Errorf("--metrics-cert-dir: %w", err)
			}
		}
		opts.CertDir, opts.CertName, opts.KeyName = f.MetricsCertDir, MetricsCertName, MetricsKeyName
	}
	return opts, nil
}
