package upgradescheduler

import (
	"context"
	"maps"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/scheme"
)

// tracker watches the ClusterVersion and the UpgradeConfigs and records the
// wall time at which each transition was first seen: when the CVO reported a
// version Completed, and when each step of each target version completed.
// The step-completion times in status are second-granular; these are not.
type tracker struct {
	mu          sync.Mutex
	cvCompleted map[string]time.Time            // version → first seen Completed
	stepDone    map[string]map[string]time.Time // version → step → first seen True
	steps       map[string][]string             // version → step per change of currentStep
	desired     string                          // ClusterVersion spec.desiredUpdate.version
	deleting    map[string]bool                 // temporary MachineSets seen deleting
	// Per temporary MachineSet name, how many times the watch saw it
	// created, and how many times start deleting: the side effects as they
	// took effect, whatever the apiserver answered a killed client.
	added, deleted map[string]int
	// forcedPods counts, per guarded pod (guardedLabel), the times the
	// watch saw it start going.
	forcedPods map[string]int
	going      map[string]bool
	// onMoment is called (outside the lock) at every moment a crash would
	// hurt most: a step boundary, right after a temporary MachineSet was
	// created or deleted, and right after ClusterVersion was patched.
	onMoment func(version, moment string)
}

func startTracker(ctx context.Context) *tracker {
	GinkgoHelper()
	t := &tracker{cvCompleted: map[string]time.Time{}, stepDone: map[string]map[string]time.Time{}, steps: map[string][]string{},
		deleting: map[string]bool{}, added: map[string]int{}, deleted: map[string]int{}, forcedPods: map[string]int{}, going: map[string]bool{}}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	cvs, err := wc.Watch(ctx, &configv1.ClusterVersionList{})
	Expect(err).NotTo(HaveOccurred())
	ucs, err := wc.Watch(ctx, &upgradev1alpha1.UpgradeConfigList{}, client.InNamespace(namespace))
	Expect(err).NotTo(HaveOccurred())
	mss, err := wc.Watch(ctx, &machinev1beta1.MachineSetList{}, client.InNamespace(machineAPI), client.MatchingLabels{surgeLabel: "true"})
	Expect(err).NotTo(HaveOccurred())
	pods, err := wc.Watch(ctx, &corev1.PodList{}, client.MatchingLabels{guardedLabel: "true"})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		defer cvs.Stop()
		defer ucs.Stop()
		defer mss.Stop()
		defer pods.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-cvs.ResultChan():
				if !ok {
					return
				}
				if cv, ok := e.Object.(*configv1.ClusterVersion); ok && e.Type != watch.Deleted {
					t.sawCV(cv, time.Now())
				}
			case e, ok := <-ucs.ResultChan():
				if !ok {
					return
				}
				if uc, ok := e.Object.(*upgradev1alpha1.UpgradeConfig); ok && e.Type != watch.Deleted {
					t.sawUC(uc, time.Now())
				}
			case e, ok := <-mss.ResultChan():
				if !ok {
					return
				}
				if ms, ok := e.Object.(*machinev1beta1.MachineSet); ok {
					t.sawMachineSet(e.Type, ms)
				}
			case e, ok := <-pods.ResultChan():
				if !ok {
					return
				}
				if p, ok := e.Object.(*corev1.Pod); ok {
					t.sawGuardedPod(e.Type, p)
				}
			}
		}
	}()
	return t
}

func (t *tracker) sawCV(cv *configv1.ClusterVersion, now time.Time) {
	t.mu.Lock()
	var patched string
	if du := cv.Spec.DesiredUpdate; du != nil && du.Version != t.desired {
		t.desired, patched = du.Version, du.Version
	}
	on := t.onMoment
	defer func() {
		if patched != "" && on != nil {
			on(patched, "ClusterVersion patched to "+patched)
		}
	}()
	defer t.mu.Unlock()
	for _, h := range cv.Status.History {
		if h.State == configv1.CompletedUpdate {
			if _, seen := t.cvCompleted[h.Version]; !seen {
				t.cvCompleted[h.Version] = now
			}
		}
	}
}

func (t *tracker) sawUC(uc *upgradev1alpha1.UpgradeConfig, now time.Time) {
	t.mu.Lock()
	if len(uc.Status.History) == 0 {
		t.mu.Unlock()
		return
	}
	h := uc.Status.History[0]
	if t.stepDone[h.Version] == nil {
		t.stepDone[h.Version] = map[string]time.Time{}
	}
	for _, c := range h.Conditions {
		if c.Status == corev1.ConditionTrue {
			if _, seen := t.stepDone[h.Version][string(c.Type)]; !seen {
				t.stepDone[h.Version][string(c.Type)] = now
			}
		}
	}
	steps := t.steps[h.Version]
	cur := uc.Status.CurrentStep
	changed := cur != "" && (len(steps) == 0 || steps[len(steps)-1] != cur)
	if changed {
		t.steps[h.Version] = append(steps, cur)
	}
	on := t.onMoment
	t.mu.Unlock()
	if changed && on != nil {
		on(h.Version, "step "+cur)
	}
}

func (t *tracker) sawMachineSet(typ watch.EventType, ms *machinev1beta1.MachineSet) {
	t.mu.Lock()
	moment := ""
	switch {
	case typ == watch.Added:
		moment = "created " + ms.Name
		t.added[ms.Name]++
	case ms.DeletionTimestamp != nil || typ == watch.Deleted:
		if !t.deleting[ms.Name] {
			t.deleting[ms.Name] = true
			moment = "deleting " + ms.Name
			t.deleted[ms.Name]++
		}
	}
	if typ == watch.Added {
		delete(t.deleting, ms.Name)
	}
	on, version := t.onMoment, t.desired
	t.mu.Unlock()
	if moment != "" && on != nil {
		on(version, moment)
	}
}

// sawGuardedPod reports a guarded pod's going (its deletion, by whoever)
// once, as a moment.
func (t *tracker) sawGuardedPod(typ watch.EventType, p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	t.mu.Lock()
	moment := ""
	if (p.DeletionTimestamp != nil || typ == watch.Deleted) && !t.going[key] {
		t.going[key] = true
		t.forcedPods[key]++
		moment = "forced " + key
	}
	on, version := t.onMoment, t.desired
	t.mu.Unlock()
	if moment != "" && on != nil {
		on(version, moment)
	}
}

// forced returns, per guarded pod, how many times the watch saw it go.
func (t *tracker) forced() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.forcedPods)
}

// machineSets returns, per temporary MachineSet name, how many times the
// watch saw it created and deleted.
func (t *tracker) machineSets() (added, deleted map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.added), maps.Clone(t.deleted)
}

// setOnMoment calls f (outside the lock) at every moment listed on onMoment.
func (t *tracker) setOnMoment(f func(version, moment string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onMoment = f
}

// reaction is the time from the CVO's Completed to the scheduler's
// ControlPlaneUpgraded step for version, as both were seen by the watch.
func (t *tracker) reaction(version string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cv, ok1 := t.cvCompleted[version]
	step, ok2 := t.stepDone[version]["ControlPlaneUpgraded"]
	return step.Sub(cv), ok1 && ok2
}

// stepsSeen returns the currentStep values seen for version, in order.
func (t *tracker) stepsSeen(version string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.steps[version]...)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	switch {
	case len(s) == 0:
		return 0
	case len(s)%2 == 1:
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
