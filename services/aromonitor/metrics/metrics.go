// Package metrics holds aro-monitor's Prometheus metrics and the hooks the
// reconcilers and the Azure client call to feed them. Labels are bounded:
// check and condition names, roles, vantage points (the control plane and
// the worker subnets), target hosts from the configured URL list, probe
// phases, ARM operations and status codes.
package metrics

import (
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/probe"
)

// Metrics are aro-monitor's metrics.
type Metrics struct {
	condition     *prometheus.GaugeVec
	lastSuccess   *prometheus.GaugeVec
	phase         *prometheus.HistogramVec
	probeFailures *prometheus.CounterVec
	remediations  *prometheus.CounterVec
	arm           *prometheus.CounterVec
	secretExpiry  prometheus.Gauge
	ownership     *prometheus.GaugeVec
}

// New creates the metrics and registers them with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_aro_monitor_condition",
			Help: "1 for the current status (True, False, Unknown) of each condition aro-monitor decides (as recorded on its MonitorConfig), 0 for the others.",
		}, []string{"type", "status"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_aro_monitor_last_success_timestamp_seconds",
			Help: "When each check (per vantage point for the egress checks) last passed.",
		}, []string{"check", "vantage_point"}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "upshift_aro_monitor_probe_phase_duration_seconds",
			Help:    "Duration of each phase (DNS, Connect, TLS, HTTP) of an egress probe, by target host and role.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"target", "role", "phase"}),
		probeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "upshift_aro_monitor_probe_failures_total",
			Help: "Egress probes that failed, by target host, role and the phase that failed.",
		}, []string{"target", "role", "phase"}),
		remediations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "upshift_aro_monitor_remediations_total",
			Help: "Subnet remediation decisions carried out, by action (reassociate, suppress, add-service-endpoints) and result (success, error, done).",
		}, []string{"action", "result"}),
		arm: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "upshift_aro_monitor_arm_requests_total",
			Help: "Azure Resource Manager requests, retries included, by operation and HTTP status code (\"error\" when no response came).",
		}, []string{"operation", "code"}),
		secretExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "upshift_aro_monitor_client_secret_expiry_timestamp_seconds",
			Help: "When the cluster's client secret expires, where the credentials Secret says so; 0 when unknown.",
		}),
		ownership: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "upshift_aro_monitor_check_ownership",
			Help: "1 for who acts for each check: Replace (aro-monitor writes ARO's conditions and remediates) or Observe (ARO's operator runs it; aro-monitor reports only); 0 for the other.",
		}, []string{"check", "ownership"}),
	}
	reg.MustRegister(m.condition, m.lastSuccess, m.phase, m.probeFailures, m.remediations, m.arm, m.secretExpiry, m.ownership)
	return m
}

// Ownership records who acts for a check ("" before its first decision:
// both 0).
func (m *Metrics) Ownership(check amv1alpha1.CheckName, o amv1alpha1.Ownership) {
	for _, v := range []amv1alpha1.Ownership{amv1alpha1.OwnershipReplace, amv1alpha1.OwnershipObserve} {
		val := 0.0
		if v == o {
			val = 1
		}
		m.ownership.WithLabelValues(string(check), string(v)).Set(val)
	}
}

// Condition records a condition's current status.
func (m *Metrics) Condition(condType, status string) {
	for _, s := range []string{"True", "False", "Unknown"} {
		v := 0.0
		if s == status {
			v = 1
		}
		m.condition.WithLabelValues(condType, s).Set(v)
	}
}

// ConditionAbsent removes a condition's series: a condition no longer in
// the status (or no Cluster at all) must not keep its last value, or an
// alert on it would fire forever.
func (m *Metrics) ConditionAbsent(condType string) {
	m.condition.DeletePartialMatch(prometheus.Labels{"type": condType})
}

// Success records a check passing, at t.
func (m *Metrics) Success(check amv1alpha1.CheckName, vantagePoint string, t time.Time) {
	m.lastSuccess.WithLabelValues(string(check), vantagePoint).Set(float64(t.Unix()))
}

// Round records one egress round's probes.
func (m *Metrics) Round(role amv1alpha1.Role, results []probe.Result) {
	for _, r := range results {
		host := r.URL
		if u, err := url.Parse(r.URL); err == nil && u.Host != "" {
			host = u.Host
		}
		for ph, d := range r.Latency {
			m.phase.WithLabelValues(host, string(role), string(ph)).Observe(d.Seconds())
		}
		if !r.OK() {
			m.probeFailures.WithLabelValues(host, string(role), string(r.FailedPhase)).Inc()
		}
	}
}

// Remediation records an NSG remediation outcome.
func (m *Metrics) Remediation(action, result string) {
	m.remediations.WithLabelValues(action, result).Inc()
}

// ARMRequest records an ARM response.
func (m *Metrics) ARMRequest(operation, code string) { m.arm.WithLabelValues(operation, code).Inc() }

// SecretExpiry records the client secret's expiry (nil: unknown).
func (m *Metrics) SecretExpiry(t *time.Time) {
	if t == nil {
		m.secretExpiry.Set(0)
		return
	}
	m.secretExpiry.Set(float64(t.Unix()))
}
