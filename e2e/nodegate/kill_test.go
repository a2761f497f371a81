package nodegate

import (
	"context"
	"maps"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// Kinds of node-gate's writes the killer acts on.
const (
	killJob      = "hook Job created"
	killLabel    = "hold label changed"
	killPool     = "pool changed"
	killDrain    = "pod deleted"
	killForce    = "pod deleted with grace 0"
	killFinalize = "pod finalizers removed"
)

// killer SIGKILLs node-gate right after each of its writes that a run's
// progress rests on — a hook Job created, a hold label set or removed, a
// pool paused, unpaused, created, deleted or re-selected, a forced-drain
// step on a pod — as independent watches see them, and starts it again at
// once. A crash at any of these points must resume without repeating a
// side effect. Writes seen before a kill are taken together: one kill for
// all of them; each new process is killed after its first write.
//
// The restarted processes run without leader election: a SIGKILLed leader
// keeps its Lease until it expires, so each restart would wait the lease
// duration; the handover itself is libs/runtime's, tested there. This is
// about resuming.
type killer struct {
	trig chan string

	mu    sync.Mutex
	kills int
	// after counts, by kind, the writes a kill followed.
	after map[string]int
	// stopAfterPostOf: once a post-update hook Job was created for this
	// many distinct nodes (the last node), the killer stops, so that the
	// instance left has seen a node through its post-update hooks (the
	// spec reads what it timed); 0: it never stops by itself.
	stopAfterPostOf int
	postNodes       map[string]bool
	stopped         bool
	// jobs are the run's Jobs as the watch saw them created, by node and
	// stage (the container's name), each by UID: a hook created twice is
	// seen even if the first Job was deleted since.
	jobs map[string][]types.UID
	// err is why node-gate could not be started again.
	err error
}

// killReport is what a kill loop did.
type killReport struct {
	// Kills is how many times node-gate was killed.
	Kills int
	// After counts, by kind, the writes a kill followed.
	After map[string]int
	// Err is why node-gate could not be started again, if so.
	Err error
	// Jobs are the run's Jobs seen created, by "<node>/<stage>", by UID.
	Jobs map[string][]types.UID
}

// killOnWrites starts the watches and the killer for the run named run;
// the returned function stops it and reports what it did.
func killOnWrites(ctx context.Context, run string, nodes int) func() killReport {
	GinkgoHelper()
	k := &killer{trig: make(chan string, 256), after: map[string]int{}, stopAfterPostOf: nodes, postNodes: map[string]bool{}, jobs: map[string][]types.UID{}}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	runKey := plan.RunKey(namespace, run)

	watchAll := func(list client.ObjectList, opts ...client.ListOption) watch.Interface {
		Expect(wc.List(ctx, list, opts...)).To(Succeed())
		rv := list.(metav1.ListInterface).GetResourceVersion()
		w, err := wc.Watch(context.Background(), list, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(w.Stop)
		return w
	}

	jw := watchAll(&batchv1.JobList{}, client.InNamespace(namespace), client.MatchingLabels{plan.RunLabel: runKey})
	go func() {
		for ev := range jw.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added {
				continue
			}
			stage := j.Spec.Template.Spec.Containers[0].Name
			k.mu.Lock()
			key := jobNode(j) + "/" + stage
			if !slices.Contains(k.jobs[key], j.UID) {
				k.jobs[key] = append(k.jobs[key], j.UID)
			}
			if stage == "post" {
				k.postNodes[jobNode(j)] = true
				if k.stopAfterPostOf > 0 && len(k.postNodes) >= k.stopAfterPostOf {
					k.stopped = true
				}
			}
			k.mu.Unlock()
			k.fire(killJob)
		}
	}()

	// What each Node and pool was when the watches started, so that the
	// first change of one is a change too.
	labels := map[string]string{}
	nodeList := &corev1.NodeList{}
	nw := watchAll(nodeList)
	for _, n := range nodeList.Items {
		labels[n.Name] = n.Labels[plan.HoldLabel]
	}
	go func() {
		for ev := range nw.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			v, seen := labels[n.Name]
			labels[n.Name] = n.Labels[plan.HoldLabel]
			if seen && v != n.Labels[plan.HoldLabel] {
				k.fire(killLabel)
			}
		}
	}()

	// Only what node-gate changes on a pool: the MCO writes the rendered
	// configuration and the status.
	type poolSpec struct {
		paused bool
		sel    *metav1.LabelSelector
		maxU   string
	}
	specOf := func(p *mcfgv1.MachineConfigPool) poolSpec {
		now := poolSpec{paused: p.Spec.Paused, sel: p.Spec.NodeSelector}
		if p.Spec.MaxUnavailable != nil {
			now.maxU = p.Spec.MaxUnavailable.String()
		}
		return now
	}
	pools := map[string]poolSpec{}
	poolList := &mcfgv1.MachineConfigPoolList{}
	pw := watchAll(poolList)
	for i := range poolList.Items {
		pools[poolList.Items[i].Name] = specOf(&poolList.Items[i])
	}
	go func() {
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*mcfgv1.MachineConfigPool)
			if !ok {
				continue
			}
			now := specOf(p)
			was, seen := pools[p.Name]
			pools[p.Name] = now
			switch {
			case ev.Type == watch.Deleted, ev.Type == watch.Added && !seen:
				k.fire(killPool)
			case was.paused != now.paused || was.maxU != now.maxU || !equality.Semantic.DeepEqual(was.sel, now.sel):
				k.fire(killPool)
			}
		}
	}()

	type podState struct {
		deleting, force bool
		finalizers      int
	}
	pods := map[string]podState{}
	dw := watchAll(&corev1.PodList{}, client.InNamespace("guarded"))
	go func() {
		for ev := range dw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := podState{deleting: p.DeletionTimestamp != nil, finalizers: len(p.Finalizers),
				force: p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0}
			was := pods[p.Name]
			pods[p.Name] = now
			switch {
			case now.deleting && !was.deleting:
				k.fire(killDrain)
			case now.force && !was.force:
				k.fire(killForce)
			case was.finalizers > 0 && (now.finalizers == 0 || ev.Type == watch.Deleted):
				k.fire(killFinalize)
			}
		}
	}()

	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case kind := <-k.trig:
				// Every write seen so far was made before this kill.
				batch := []string{kind}
				for len(k.trig) > 0 {
					batch = append(batch, <-k.trig)
				}
				k.mu.Lock()
				stopped := k.stopped
				k.mu.Unlock()
				if stopped {
					continue
				}
				gate.Kill()
				c, err := startProcess(false)
				k.mu.Lock()
				if err != nil {
					// The spec waits for the run in vain and reports this.
					k.err, k.stopped = err, true
					k.mu.Unlock()
					continue
				}
				gate = c
				k.kills++
				for _, b := range batch {
					k.after[b]++
				}
				k.mu.Unlock()
			}
		}
	}()
	return func() killReport {
		close(done)
		<-exited
		k.mu.Lock()
		defer k.mu.Unlock()
		return killReport{Kills: k.kills, After: maps.Clone(k.after), Err: k.err, Jobs: maps.Clone(k.jobs)}
	}
}

// fire asks for a kill; one already asked for covers it.
func (k *killer) fire(kind string) {
	select {
	case k.trig <- kind:
	default:
	}
}

func jobNode(j *batchv1.Job) string {
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == plan.EnvNodeName {
			return e.Value
		}
	}
	return ""
}

// killKinds lists the kinds a kill loop must have hit at least once.
var killKinds = slices.Sorted(slices.Values([]string{killJob, killLabel, killPool, killDrain, killForce, killFinalize}))
