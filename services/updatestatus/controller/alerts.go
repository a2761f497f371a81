package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/truncate"
	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// DefaultAlertsInterval is how often alerts are read when configured.
const DefaultAlertsInterval = 30 * time.Second

// Alerts configures reading alerts; a nil *Alerts on the Reconciler means
// they are not read (no alert-based health insights, no AlertsAvailable
// condition).
type Alerts struct {
	Client alerts.Client
	// URL names the source in the AlertsAvailable condition.
	URL string
	// Interval between reads; zero means DefaultAlertsInterval.
	Interval time.Duration
}

// alertsPoller reads alerts on a real-time interval — alerts have no watch —
// and keeps the last outcome for the reconciler. It triggers a recomputation
// only when that outcome changes, so a quiet cluster costs one HTTP request
// per interval and nothing more. It runs only on the leader.
type alertsPoller struct {
	cfg     Alerts
	trigger chan event.GenericEvent

	mu   sync.Mutex
	read bool           // at least one read finished
	last []assess.Alert // nil after a failed read
	err  error
}

func newAlertsPoller(cfg Alerts) *alertsPoller {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultAlertsInterval
	}
	return &alertsPoller{cfg: cfg, trigger: make(chan event.GenericEvent, 1)}
}

// Start implements manager.Runnable.
func (p *alertsPoller) Start(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		p.poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// replica that publishes needs the alerts.
func (p *alertsPoller) NeedLeaderElection() bool { return true }

func (p *alertsPoller) poll(ctx context.Context) {
	got, err := p.cfg.Client.Alerts(ctx) // bounded by the client's timeout
	if ctx.Err() != nil {
		return // shutting down: not an outcome worth publishing
	}
	var converted []assess.Alert
	if err == nil {
		converted = assess.FromAlerts(got)
	}
	p.mu.Lock()
	changed := !p.read || errText(err) != errText(p.err) || !slices.EqualFunc(converted, p.last, assess.Alert.Equal)
	wasOK := p.read && p.err == nil
	p.read, p.last, p.err = true, converted, err
	p.mu.Unlock()
	if !changed {
		return
	}
	logger := log.FromContext(ctx).WithValues("url", p.cfg.URL)
	switch {
	case err != nil:
		logger.Info("cannot read alerts: alert-based health insights are left out until they can be read", "reason", err.Error())
	case !wasOK:
		logger.Info("reading alerts", "alerts", len(converted))
	}
	select {
	case p.trigger <- event.GenericEvent{Object: &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}}}:
	default: // a recomputation is already pending; it will read the latest outcome
	}
}

// current returns the alerts of the last read (nil when it failed or none
// finished yet) and the AlertsAvailable condition to publish (nil: none yet).
func (p *alertsPoller) current(now time.Time) ([]assess.Alert, *metav1.Condition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.read {
		return nil, nil
	}
	c := &metav1.Condition{
		Type: updatev1alpha1.ConditionAlertsAvailable, Status: metav1.ConditionTrue,
		Reason: updatev1alpha1.ReasonAsExpected, Message: "Alerts are read from " + p.cfg.URL + ".",
		LastTransitionTime: metav1.NewTime(now),
	}
	if p.err != nil {
		c.Status, c.Reason = metav1.ConditionFalse, updatev1alpha1.ReasonCannotReadAlerts
		c.Message = truncate.String(fmt.Sprintf("Cannot read alerts from %s: %v", p.cfg.URL, p.err), maxConditionMessage)
	}
	return p.last, c
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// maxConditionMessage is metav1.Condition's limit on a message.
const maxConditionMessage = 32768

// setupAlerts registers the poller and its trigger when alerts are
// configured.
func (r *Reconciler) setupAlerts(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if r.Alerts == nil {
		return b, nil
	}
	r.alerts = newAlertsPoller(*r.Alerts)
	if err := mgr.Add(r.alerts); err != nil {
		return nil, err
	}
	return b.WatchesRawSource(source.Channel(r.alerts.trigger, &handler.EnqueueRequestForObject{})), nil
}

// lastAlerts is the outcome of the last alerts read, taken once per
// recomputation so the assessment's alerts and the AlertsAvailable condition
// come from the same read: the alerts (nil when not configured or not
// readable) and the condition (nil when not configured or not read yet).
func (r *Reconciler) lastAlerts(now time.Time) ([]assess.Alert, *metav1.Condition) {
	if r.alerts == nil {
		return nil, nil
	}
	return r.alerts.current(now)
}
