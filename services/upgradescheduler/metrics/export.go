package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// Metrics are the scheduler's metrics, registered on the registry they were
// made with: the manager's in production, a fresh one in a test, so that
// tests of several reconcilers never share series.
type Metrics struct {
	// gauges are every gauge of Samples, by name.
	gauges map[string]*prometheus.GaugeVec

	// Written by the reconciler as things happen (not derived from the status).
	stepDuration       *prometheus.HistogramVec
	ocmRequests        *prometheus.CounterVec
	notifications      *prometheus.CounterVec
	notificationFailed *prometheus.GaugeVec
	syncTimestamp      *prometheus.GaugeVec
	drainForced        *prometheus.CounterVec

	// failing are the (UpgradeConfig, event) pairs whose
	// upgrade_notification_failed is 1.
	failingMu sync.Mutex
	failing   map[[2]string]bool

	// last are the samples exported per UpgradeConfig key, by series key:
	// series an UpgradeConfig no longer has are deleted.
	mu   sync.Mutex
	last map[string]map[string]Sample
}

// gaugeDef is one gauge of Samples: its name, help and label names.
type gaugeDef struct {
	name, help string
	labels     []string
}

// gaugeDefs are every gauge of Samples.
func gaugeDefs() []gaugeDef {
	var defs []gaugeDef
	gauge := func(name, help string, labels ...string) {
		defs = append(defs, gaugeDef{name, help, labels})
	}
	muo, ts := []string{LabelUpgradeConfig}, []string{LabelClusterID, LabelUpgradeConfig, LabelVersion}
	own := []string{LabelNamespace, LabelName}
	gauge(ValidationFailed, "1 when the UpgradeConfig's validation fails, 0 when it passes (MUO).", muo...)
	gauge(HealthCheckFailed, "1 when a health check fails, 0 when it passes, by check reason; state is the attempt's phase, version the cluster's current version (MUO).",
		LabelUpgradeConfig, LabelState, LabelVersion, LabelReason)
	gauge(ClusterCheckFailed, "1 when any health check of status.preflight fails, 0 when all pass (MUO's older name for the health check alert).", muo...)
	gauge(ScalingFailed, "1 when the temporary capacity was not ready within scale.timeOut, 0 when it was (MUO).", muo...)
	gauge(UpgradeWindowBreached, "1 when the start deadline passed before the upgrade commenced, else 0 (MUO).", muo...)
	gauge(ControlPlaneTimeout, "1 when the control plane deadline passed before the control plane completed, else 0 (MUO).", LabelUpgradeConfig, LabelVersion)
	gauge(WorkerTimeout, "1 when the workers deadline passed before every worker pool was updated, else 0 (MUO).", LabelUpgradeConfig, LabelVersion)
	gauge(UpgradeStarted, "Unix time the upgrade attempt started (phase Upgrading) (MUO).", ts...)
	gauge(UpgradeCompleted, "Unix time the upgrade attempt completed (phase Upgraded) (MUO).", ts...)
	gauge(ControlPlaneStarted, "Unix time ClusterVersion was pointed at the target (MUO).", ts...)
	gauge(ControlPlaneCompleted, "Unix time the control plane completed the target (MUO).", ts...)
	gauge(WorkerNodesStarted, "Unix time the worker pools started updating (MUO).", ts...)
	gauge(WorkerNodesCompleted, "Unix time every worker pool was updated (MUO).", ts...)
	gauge(UpgradeStateTimestamp, "Unix time the upgrade to version reached state: scheduled, started, control_plane_started, control_plane_completed, workers_started, workers_completed, finished (MUO's collector).",
		LabelVersion, LabelState)
	gauge(Phase, "State set of the current attempt's phase: 1 for the current one, 0 for the others.", LabelNamespace, LabelName, LabelPhase)
	gauge(CurrentStepInfo, "1 for the step the upgrade is at (no series outside phase Upgrading).", LabelNamespace, LabelName, LabelStep)
	gauge(DeadlineExceeded, "1 when the named deadline (start, controlPlane, workers, postCheck) has passed on a wait, else 0.", LabelNamespace, LabelName, LabelDeadline)
	gauge(PreflightCheckFailing, "1 when a health check of status.preflight fails, 0 when it passes, by check.", LabelNamespace, LabelName, LabelCheck)
	gauge(ConfigInvalid, "1 when the configuration ConfigMap is missing or invalid (the last valid one, if any, stays in force), else 0.", own...)
	gauge(Paused, "1 while the upgrade is paused (spec.paused or a deadline with policy pause), else 0.", own...)
	gauge(SilencesActive, "Alertmanager silences the upgrade holds (status.silences): renewed while its phase runs, expired when it ends.", own...)
	gauge(Notification, "1 for every notification delivered (an OCM policy state or a service log), by event and target version (MUO).", LabelUpgradeConfig, LabelEvent, LabelVersion)
	gauge(NodeDrainTimeout, "1 while the drain of a worker node is still blocked with nothing left to force or wait for, 0 once that drain ended (MUO).", LabelNode)
	gauge(UpgradeResult, "After an upgrade: 1 when none of the SRE paging alerts fired during it, 0 when some did, named in alerts (MUO; needs a Prometheus alert source).",
		LabelUpgradeConfig, LabelPrecedingVersion, LabelStream, LabelVersion, LabelAlerts)
	gauge(CapacityReservationSet, "State set of the capacity reservation's outcome (Ready, TimedOut, Skipped, Removed).", LabelNamespace, LabelName, LabelOutcome)
	return defs
}

// New makes the scheduler's metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		gauges: map[string]*prometheus.GaugeVec{},
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: StepDuration,
			Help: "Time from a step's first evaluation to its completion, by step (a history condition type), observed when the step completes.",
			// One second to about three days: a step that completes at once, up to a
			// worker pool of hundreds of nodes.
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}, []string{LabelStep}),
		ocmRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: OCMRequests,
			Help: "Requests to OCM by operation and HTTP status code (\"error\" when no answer came: a timeout, a lost connection).",
		}, []string{LabelOp, LabelCode}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Notifications,
			Help: "Notification deliveries by event and result: sent, already_sent (found in OCM on a resend), not_allowed (the policy state does not allow it), policy_gone, failed (retried).",
		}, []string{LabelEvent, LabelResult}),
		notificationFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NotificationFailed,
			Help: "1 when the last delivery of a notification failed, 0 once one succeeded (MUO's name, unprefixed as MUO exports it).",
		}, []string{LabelUpgradeConfig, LabelEvent}),
		syncTimestamp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: SyncTimestamp,
			Help: "Unix time of the last successful sync of the UpgradeConfig with its source: the OCM upgrade policies, or with source LOCAL the UpgradeConfigs on the cluster (MUO).",
		}, []string{LabelUpgradeConfig}),
		drainForced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: DrainForced,
			Help: "Steps taken on pods of blocked worker drains, by step: ForceDelete (grace period 0), RemoveFinalizers.",
		}, []string{LabelStep}),
		failing: map[[2]string]bool{},
		last:    map[string]map[string]Sample{},
	}
	for _, d := range gaugeDefs() {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.name, Help: d.help}, d.labels)
		m.gauges[d.name] = g
		reg.MustRegister(g)
	}
	reg.MustRegister(m.stepDuration, m.ocmRequests, m.notifications, m.notificationFailed, m.syncTimestamp, m.drainForced)
	return m
}

// ObserveForced counts one step taken on a pod of a blocked drain.
func (m *Metrics) ObserveForced(step string) { m.drainForced.WithLabelValues(step).Inc() }

// ObserveOCMRequest counts one OCM request.
func (m *Metrics) ObserveOCMRequest(op, code string) { m.ocmRequests.WithLabelValues(op, code).Inc() }

// ObserveNotification counts one delivery of a notification of
// UpgradeConfig name; result is a lower-case outcome, or "failed".
func (m *Metrics) ObserveNotification(name, event, result string) {
	m.notifications.WithLabelValues(event, result).Inc()
	m.failingMu.Lock()
	defer m.failingMu.Unlock()
	m.notificationFailed.WithLabelValues(name, event).Set(boolValue(result == "failed"))
	m.failing[[2]string{name, event}] = result == "failed"
}

// ClearNotificationFailed resets to 0 the upgrade_notification_failed
// series of UpgradeConfig name whose event is failing but no longer wanted
// (the attempt was cancelled or ended): a notice nobody will send again
// must not keep its alert firing. wanted nil (the UpgradeConfig is gone)
// deletes all its series.
func (m *Metrics) ClearNotificationFailed(name string, wanted func(event string) bool) {
	m.failingMu.Lock()
	defer m.failingMu.Unlock()
	for _, event := range notificationEvents() {
		if wanted == nil {
			m.notificationFailed.DeleteLabelValues(name, event)
			delete(m.failing, [2]string{name, event})
			continue
		}
		if k := [2]string{name, event}; m.failing[k] && !wanted(event) {
			m.notificationFailed.WithLabelValues(name, event).Set(0)
			delete(m.failing, k)
		}
	}
}

func notificationEvents() []string {
	return []string{plan.EventStarted, plan.EventDelayed, plan.EventFailed, plan.EventCompleted,
		plan.EventControlPlaneStartedSL, plan.EventControlPlaneFinishedSL, plan.EventWorkerPlaneFinishedSL,
		plan.EventScaleSkipped, plan.EventSkipped, plan.EventHealthCheckSL, plan.EventPreHealthCheckSL}
}

// ObserveSync records a successful policy sync.
func (m *Metrics) ObserveSync(name string, t time.Time) {
	m.syncTimestamp.WithLabelValues(name).Set(float64(t.Unix()))
}

// Names are the names of every metric this package exports.
func Names() []string {
	out := []string{StepDuration, OCMRequests, Notifications, NotificationFailed, SyncTimestamp, DrainForced}
	for _, d := range gaugeDefs() {
		out = append(out, d.name)
	}
	return out
}

// Update replaces the series of the UpgradeConfig key with samples.
func (m *Metrics) Update(key string, samples []Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[string]Sample, len(samples))
	for _, s := range samples {
		next[s.Key()] = s
	}
	for k, s := range m.last[key] {
		if _, ok := next[k]; !ok && !m.ownedElsewhere(key, k) {
			m.gauges[s.Name].Delete(s.Labels)
		}
	}
	for _, s := range samples {
		m.gauges[s.Name].With(s.Labels).Set(s.Value)
	}
	m.last[key] = next
}

// Forget deletes the series of an UpgradeConfig that is gone.
func (m *Metrics) Forget(key string) {
	m.Update(key, nil)
	m.mu.Lock()
	delete(m.last, key)
	m.mu.Unlock()
}

// ownedElsewhere: another UpgradeConfig has the same series (only
// upgrade_state_timestamp, which MUO labels by version alone, can).
func (m *Metrics) ownedElsewhere(key, series string) bool {
	for k, byKey := range m.last {
		if _, ok := byKey[series]; ok && k != key {
			return true
		}
	}
	return false
}

// ObserveSteps records completed steps in the step duration histogram.
func (m *Metrics) ObserveSteps(done []StepDone) {
	for _, d := range done {
		m.stepDuration.WithLabelValues(d.Step).Observe(d.Duration.Seconds())
	}
}
