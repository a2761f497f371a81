package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// gauges are every gauge of Samples, with their help and label names.
var gauges = map[string]*prometheus.GaugeVec{}

func gauge(name, help string, labels ...string) {
	gauges[name] = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// Counters and gauges written by the reconciler as things happen (not
// derived from the status).
var (
	ocmRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: OCMRequests,
		Help: "Requests to OCM by operation and HTTP status code (\"error\" when no answer came: a timeout, a lost connection).",
	}, []string{LabelOp, LabelCode})
	notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Notifications,
		Help: "Notification deliveries by event and result: sent, already_sent (found in OCM on a resend), not_allowed (the policy state does not allow it), policy_gone, failed (retried).",
	}, []string{LabelEvent, LabelResult})
	notificationFailed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: NotificationFailed,
		Help: "1 when the last delivery of a notification failed, 0 once one succeeded (MUO's name, unprefixed as MUO exports it).",
	}, []string{LabelUpgradeConfig, LabelEvent})
	syncTimestamp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: SyncTimestamp,
		Help: "Unix time of the last successful sync of the OCM upgrade policies (MUO).",
	}, []string{LabelUpgradeConfig})
)

// ObserveOCMRequest counts one OCM request.
func ObserveOCMRequest(op, code string) { ocmRequests.WithLabelValues(op, code).Inc() }

// ObserveNotification counts one delivery of a notification of
// UpgradeConfig name; result is a lower-case outcome, or "failed".
func ObserveNotification(name, event, result string) {
	notifications.WithLabelValues(event, result).Inc()
	failingMu.Lock()
	defer failingMu.Unlock()
	notificationFailed.WithLabelValues(name, event).Set(boolValue(result == "failed"))
	failing[[2]string{name, event}] = result == "failed"
}

// failing are the (UpgradeConfig, event) pairs whose
// upgrade_notification_failed is 1.
var (
	failingMu sync.Mutex
	failing   = map[[2]string]bool{}
)

// ClearNotificationFailed resets to 0 the upgrade_notification_failed
// series of UpgradeConfig name whose event is failing but no longer wanted
// (the attempt was cancelled or ended): a notice nobody will send again
// must not keep its alert firing. wanted nil (the UpgradeConfig is gone)
// deletes all its series.
func ClearNotificationFailed(name string, wanted func(event string) bool) {
	failingMu.Lock()
	defer failingMu.Unlock()
	for _, event := range notificationEvents() {
		if wanted == nil {
			notificationFailed.DeleteLabelValues(name, event)
			delete(failing, [2]string{name, event})
			continue
		}
		if k := [2]string{name, event}; failing[k] && !wanted(event) {
			notificationFailed.WithLabelValues(name, event).Set(0)
			delete(failing, k)
		}
	}
}

func notificationEvents() []string {
	return []string{plan.EventStarted, plan.EventDelayed, plan.EventFailed, plan.EventCompleted,
		plan.EventControlPlaneStartedSL, plan.EventControlPlaneFinishedSL, plan.EventWorkerPlaneFinishedSL}
}

// ObserveSync records a successful policy sync.
func ObserveSync(name string, t time.Time) {
	syncTimestamp.WithLabelValues(name).Set(float64(t.Unix()))
}

var stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: StepDuration,
	Help: "Time from a step's first evaluation to its completion, by step (a history condition type), observed when the step completes.",
	// One second to about three days: a step that completes at once, up to a
	// worker pool of hundreds of nodes.
	Buckets: prometheus.ExponentialBuckets(1, 4, 10),
}, []string{LabelStep})

func init() {
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
	gauge(CapacityReservationSet, "State set of the capacity reservation's outcome (Ready, TimedOut, Skipped, Removed).", LabelNamespace, LabelName, LabelOutcome)
	for _, g := range gauges {
		ctrlmetrics.Registry.MustRegister(g)
	}
	ctrlmetrics.Registry.MustRegister(stepDuration, ocmRequests, notifications, notificationFailed, syncTimestamp)
}

// Names are the names of every metric this package exports.
func Names() []string {
	out := []string{StepDuration, OCMRequests, Notifications, NotificationFailed, SyncTimestamp}
	for name := range gauges {
		out = append(out, name)
	}
	return out
}

// Exporter keeps the registered series in step with the samples of each
// UpgradeConfig: series an UpgradeConfig no longer has are deleted.
type Exporter struct {
	mu   sync.Mutex
	last map[string]map[string]Sample // by UpgradeConfig key, by series key
}

// Default is the exporter of the process (the registry is the process's too).
var Default = &Exporter{}

// Update replaces the series of the UpgradeConfig key with samples.
func (e *Exporter) Update(key string, samples []Sample) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last == nil {
		e.last = map[string]map[string]Sample{}
	}
	next := make(map[string]Sample, len(samples))
	for _, s := range samples {
		next[s.Key()] = s
	}
	for k, s := range e.last[key] {
		if _, ok := next[k]; !ok && !e.ownedElsewhere(key, k) {
			gauges[s.Name].Delete(s.Labels)
		}
	}
	for _, s := range samples {
		gauges[s.Name].With(s.Labels).Set(s.Value)
	}
	e.last[key] = next
}

// Forget deletes the series of an UpgradeConfig that is gone.
func (e *Exporter) Forget(key string) {
	e.Update(key, nil)
	e.mu.Lock()
	delete(e.last, key)
	e.mu.Unlock()
}

// ownedElsewhere: another UpgradeConfig has the same series (only
// upgrade_state_timestamp, which MUO labels by version alone, can).
func (e *Exporter) ownedElsewhere(key, series string) bool {
	for k, m := range e.last {
		if _, ok := m[series]; ok && k != key {
			return true
		}
	}
	return false
}

// ObserveSteps records completed steps in the step duration histogram.
func ObserveSteps(done []StepDone) {
	for _, d := range done {
		stepDuration.WithLabelValues(d.Step).Observe(d.Duration.Seconds())
	}
}
