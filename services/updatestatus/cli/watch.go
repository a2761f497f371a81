package cli

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// redrawDelay gathers the events of one change (the controller writes the
// UpgradeStatus and several node insights in a burst) into one redraw.
var redrawDelay = 200 * time.Millisecond

// watchStatus prints st, then prints again whenever the UpgradeStatus or a
// NodeProgressInsight changes, as told by watches (never by polling), and
// once more when the status turns stale without a change. It returns nil
// when ctx ends (Ctrl-C).
func watchStatus(ctx context.Context, c client.Reader, wc client.WithWatch, server string, st clusterState, p printer) error {
	p.printOrSay(st)
	for {
		err := follow(ctx, wc, &st, &p)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			continue // the server closed the watch: resume where it ended
		}
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			return explain(err, "UpgradeStatus", server)
		}
		// Too far behind to resume: read everything again.
		fresh, err := read(ctx, c, server)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		st = fresh
		p.printOrSay(st)
	}
}

// printOrSay prints a frame; a status that cannot be rendered is reported
// and the watch goes on, since the next change may fix it.
func (p *printer) printOrSay(st clusterState) {
	var err error
	if st.status == nil {
		err = fmt.Errorf("UpgradeStatus %q was deleted; waiting for the update-status-controller to recreate it", updatev1alpha1.UpgradeStatusName)
	} else if err = hasControlPlane(st.status, ""); err == nil {
		err = p.print(st)
	}
	if err != nil && p.o.ErrOut != nil {
		fmt.Fprintf(p.o.ErrOut, "%v\n", err)
	}
}

// follow applies the events of one pair of watches to st, redrawing after
// each burst, until a watch ends (nil), fails (its error) or ctx ends.
func follow(ctx context.Context, wc client.WithWatch, st *clusterState, p *printer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	statusVersion := ""
	if st.status != nil {
		statusVersion = st.status.ResourceVersion
	}
	statusWatch, err := wc.Watch(ctx, &updatev1alpha1.UpgradeStatusList{},
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", updatev1alpha1.UpgradeStatusName)},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: statusVersion, AllowWatchBookmarks: true}})
	if err != nil {
		return err
	}
	defer statusWatch.Stop()
	nodeWatch, err := wc.Watch(ctx, &updatev1alpha1.NodeProgressInsightList{},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: st.nodesVersion, AllowWatchBookmarks: true}})
	if err != nil {
		return err
	}
	defer nodeWatch.Stop()

	redraw := newTimer()
	stale := newTimer()
	armStale := func() {
		if at := staleAt(st.status, p.now()); !at.IsZero() {
			stale.reset(time.Until(at))
		} else {
			stale.stop()
		}
	}
	armStale()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-statusWatch.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Error:
				return apierrors.FromObject(ev.Object)
			case watch.Bookmark:
				continue
			case watch.Deleted:
				st.status = nil
			default:
				us, ok := ev.Object.(*updatev1alpha1.UpgradeStatus)
				if !ok {
					return fmt.Errorf("unexpected %T in the UpgradeStatus watch", ev.Object)
				}
				st.status = us
			}
			redraw.arm(redrawDelay)
		case ev, ok := <-nodeWatch.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			n, ok := ev.Object.(*updatev1alpha1.NodeProgressInsight)
			if !ok {
				return fmt.Errorf("unexpected %T in the NodeProgressInsight watch", ev.Object)
			}
			st.nodesVersion = n.ResourceVersion
			switch ev.Type {
			case watch.Bookmark:
				continue
			case watch.Deleted:
				delete(st.nodes, n.Name)
			default:
				st.nodes[n.Name] = n
			}
			redraw.arm(redrawDelay)
		case <-redraw.c():
			redraw.fired()
			p.printOrSay(*st)
			armStale()
		case <-stale.c():
			stale.fired()
			p.printOrSay(*st)
		}
	}
}

// timer is a stoppable one-shot timer whose channel is nil while unarmed,
// so a select on it blocks.
type timer struct{ t *time.Timer }

func newTimer() *timer { return &timer{} }

func (t *timer) c() <-chan time.Time {
	if t.t == nil {
		return nil
	}
	return t.t.C
}

// arm starts the timer unless it is already running.
func (t *timer) arm(d time.Duration) {
	if t.t == nil {
		t.t = time.NewTimer(d)
	}
}

// reset (re)starts the timer.
func (t *timer) reset(d time.Duration) {
	t.stop()
	t.t = time.NewTimer(d)
}

func (t *timer) stop() {
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
}

func (t *timer) fired() { t.t = nil }
