package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	libnodes "github.com/upshift-io/upshift/libs/nodes"
	"github.com/upshift-io/upshift/services/cpms/platform"
)

// machine is what one pass knows of one selected Machine.
type machine struct {
	obj     *machinev1beta1.Machine
	name    string
	index   int
	created time.Time
	// deleting: deletionTimestamp set. A deleting machine is never counted
	// as anyone's replacement.
	deleting bool
	phase    string
	// ready: counts as a ready replica (Running with a Ready Node or a Node
	// NotReady within the grace period; or deleting with a Ready Node).
	ready bool
	// healthy: Running with a Node whose Ready condition is True now — the
	// bar for a replacement to stand in for the machine it replaces.
	healthy bool
	// graceEnds is when a NotReady Node stops counting as ready (zero when
	// not in grace).
	graceEnds time.Time
	upToDate  bool
	diff      platform.Diff
	// failed: phase Failed or an errorMessage; errMsg is that message.
	failed  bool
	errMsg  string
	hasHook bool
	fd      platform.FailureDomain
}

func (m *machine) live() bool { return !m.deleting }

func (m *machine) ref() MachineRef { return MachineRef{Name: m.name, UID: m.obj.UID} }

// group is one index: its machines (oldest first) and what it should be.
type group struct {
	index    int
	machines []*machine
	fd       platform.FailureDomain
	// desired is the template providerSpec with the index's failure domain.
	desired []byte
	// specHash identifies desired (for names and the remediation budget).
	specHash string
}

func (g *group) live() []*machine {
	var out []*machine
	for _, m := range g.machines {
		if m.live() {
			out = append(out, m)
		}
	}
	return out
}

func (g *group) deleting() []*machine {
	var out []*machine
	for _, m := range g.machines {
		if m.deleting {
			out = append(out, m)
		}
	}
	return out
}

// updated: live machines with the desired spec.
func (g *group) updated() []*machine {
	var out []*machine
	for _, m := range g.live() {
		if m.upToDate {
			out = append(out, m)
		}
	}
	return out
}

func (g *group) outdated() []*machine {
	var out []*machine
	for _, m := range g.live() {
		if !m.upToDate {
			out = append(out, m)
		}
	}
	return out
}

// keeper is the machine that lets the index give up others: live, healthy
// right now, and carrying the etcd quorum hook (so the etcd operator has
// adopted it and moves the member before anything drains). An up-to-date one
// (the oldest) is preferred and lets every other machine go; failing that,
// the newest outdated one, which lets only the other outdated machines go —
// a spec changed again mid-replacement leaves two generations of outdated
// machines, and one of them must make room for the next replacement.
func (g *group) keeper() (keeper *machine, upToDate bool) {
	for _, m := range g.updated() {
		if m.healthy && m.hasHook {
			return m, true
		}
	}
	live := g.live()
	for i := len(live) - 1; i >= 0; i-- {
		if m := live[i]; m.healthy && m.hasHook && !m.upToDate {
			return m, false
		}
	}
	return nil, false
}

// lost: no live machine that is not failed.
func (g *group) lost() bool {
	for _, m := range g.live() {
		if !m.failed {
			return false
		}
	}
	return true
}

func (g *group) anyReady() bool {
	for _, m := range g.machines {
		if m.ready {
			return true
		}
	}
	return false
}

// pending: a live up-to-date machine that is not ready yet — a replacement
// coming up, or stuck, or failed.
func (g *group) pending() *machine {
	for _, m := range g.updated() {
		if !m.ready {
			return m
		}
	}
	return nil
}

func hasEtcdHook(m *machinev1beta1.Machine) bool {
	for _, h := range m.Spec.LifecycleHooks.PreDrain {
		if h.Name == EtcdHookName && h.Owner == EtcdHookOwner {
			return true
		}
	}
	return false
}

func operatorDegraded(cos []configv1.ClusterOperator, name string) (bool, string) {
	for _, co := range cos {
		if co.Name != name {
			continue
		}
		for _, c := range co.Status.Conditions {
			if c.Type == configv1.OperatorDegraded && c.Status == configv1.ConditionTrue {
				return true, c.Message
			}
		}
	}
	return false, ""
}

// readiness decides ready, healthy and the grace deadline of a machine.
func readiness(m *machine, node *corev1.Node, grace time.Duration, now time.Time) {
	if node == nil {
		return // a missing Node is a Node that is not ready, not an error
	}
	c := libnodes.ReadyCondition(node)
	isReady := c != nil && c.Status == corev1.ConditionTrue
	switch {
	case m.deleting:
		m.ready = isReady
	case m.phase != machinev1beta1.PhaseRunning:
	case isReady:
		m.ready, m.healthy = true, true
	case c != nil && grace > 0 && now.Before(c.LastTransitionTime.Add(grace)):
		m.ready = true
		m.graceEnds = c.LastTransitionTime.Add(grace)
	}
}

// observation is the derived picture of one pass.
type observation struct {
	cpms     *machinev1.ControlPlaneMachineSet
	replicas int
	strategy machinev1.ControlPlaneMachineSetStrategyType
	platform platform.Platform
	template []byte
	groups   []*group // by index
	byIndex  map[int]*group
	machines []*machine
	cpNodes  []*corev1.Node
	// problems that stop every mutation, by condition reason.
	halt map[string][]string
	// unindexable machines.
	unindexable []string
	// unknown provider-spec fields seen while comparing.
	unknown map[string]bool
}

func (o *observation) addHalt(reason, msg string) {
	if o.halt == nil {
		o.halt = map[string][]string{}
	}
	o.halt[reason] = append(o.halt[reason], msg)
}

func specHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

func observe(in Input) *observation {
	cpms := in.CPMS
	o := &observation{cpms: cpms, replicas: 3, strategy: cpms.Spec.Strategy.Type, byIndex: map[int]*group{}, unknown: map[string]bool{}}
	if cpms.Spec.Replicas != nil {
		o.replicas = int(*cpms.Spec.Replicas)
	}
	if o.strategy == "" {
		o.strategy = machinev1.RollingUpdate
	}
	if o.strategy != machinev1.RollingUpdate && o.strategy != machinev1.OnDelete {
		o.addHalt(ReasonInvalidStrategy, fmt.Sprintf("strategy %q is not supported (RollingUpdate or OnDelete)", o.strategy))
	}

	tmpl := cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
	var specFDs []platform.FailureDomain
	if cpms.Spec.Template.MachineType != machinev1.OpenShiftMachineV1Beta1MachineType || tmpl == nil {
		o.addHalt(ReasonInvalidSpec, fmt.Sprintf("template machineType %q is not supported", cpms.Spec.Template.MachineType))
	} else {
		if tmpl.Spec.ProviderSpec.Value != nil {
			o.template = tmpl.Spec.ProviderSpec.Value.Raw
		}
		p, err := platform.Detect(tmpl.FailureDomains, o.template)
		if err == nil {
			specFDs, err = platform.FromSpec(tmpl.FailureDomains, in.Infrastructure)
		}
		if err != nil {
			o.addHalt(ReasonInvalidSpec, err.Error())
		}
		o.platform = p
	}

	selector, err := metav1.LabelSelectorAsSelector(&cpms.Spec.Selector)
	if err != nil {
		o.addHalt(ReasonInvalidSpec, "selector: "+err.Error())
	}
	nodes := map[string]*corev1.Node{}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if libnodes.ControlPlane(n) {
			nodes[n.Name] = n
			o.cpNodes = append(o.cpNodes, n)
		}
	}
	sort.Slice(o.cpNodes, func(i, j int) bool { return o.cpNodes[i].Name < o.cpNodes[j].Name })

	var used []int
	for i := range in.Machines {
		obj := &in.Machines[i]
		if selector == nil || !selector.Matches(labels.Set(obj.Labels)) {
			continue
		}
		m := &machine{obj: obj, name: obj.Name, created: obj.CreationTimestamp.Time, deleting: obj.DeletionTimestamp != nil, hasHook: hasEtcdHook(obj)}
		if obj.Status.Phase != nil {
			m.phase = *obj.Status.Phase
		}
		if obj.Status.ErrorMessage != nil {
			m.errMsg = *obj.Status.ErrorMessage
		}
		// An errorMessage on a Running machine (a failed update, say) does
		// not make it a failed replacement: it serves, and may host etcd.
		m.failed = m.phase == machinev1beta1.PhaseFailed || (m.errMsg != "" && m.phase != machinev1beta1.PhaseRunning)
		if m.phase == machinev1beta1.PhaseFailed && m.errMsg == "" {
			m.errMsg = "phase Failed"
			if obj.Status.ErrorReason != nil {
				m.errMsg = "phase Failed: " + string(*obj.Status.ErrorReason)
			}
		}
		var node *corev1.Node
		if obj.Status.NodeRef != nil {
			node = nodes[obj.Status.NodeRef.Name]
		}
		readiness(m, node, in.Config.NodeGracePeriod, in.Now)
		if o.platform != nil && obj.Spec.ProviderSpec.Value != nil {
			m.fd, _ = o.platform.FailureDomain(obj.Spec.ProviderSpec.Value.Raw)
		}
		idx, ok := platform.IndexFromName(obj.Name)
		m.index = idx
		if !ok {
			m.index = -1
		} else {
			used = append(used, idx)
		}
		o.machines = append(o.machines, m)
	}
	sort.Slice(o.machines, func(i, j int) bool {
		a, b := o.machines[i], o.machines[j]
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return a.name < b.name
	})

	indexes := platform.Indexes(o.replicas, used)
	var placed []platform.PlacedMachine
	for _, m := range o.machines {
		if m.index >= 0 {
			placed = append(placed, platform.PlacedMachine{Name: m.name, Index: m.index, Observed: m.fd, Deleting: m.deleting, Created: m.created})
		}
	}
	mapping := platform.MapFailureDomains(indexes, specFDs, placed)
	for _, i := range indexes {
		g := &group{index: i, fd: mapping[i]}
		if o.platform != nil {
			desired, err := o.platform.Inject(o.template, g.fd)
			if err != nil {
				o.addHalt(ReasonInvalidSpec, fmt.Sprintf("index %d: %v", i, err))
			}
			g.desired = desired
			g.specHash = specHash(desired)
		}
		o.groups = append(o.groups, g)
		o.byIndex[i] = g
	}
	// A machine whose name carries no index is placed by its failure domain
	// (the first index mapped there), as machines created by hand may be.
	for _, m := range o.machines {
		if m.index < 0 && !m.fd.IsZero() {
			for _, g := range o.groups {
				if g.fd.Matches(m.fd) {
					m.index = g.index
					break
				}
			}
		}
		if m.index < 0 {
			o.unindexable = append(o.unindexable, m.name)
			continue
		}
		g := o.byIndex[m.index]
		g.machines = append(g.machines, m)
	}
	if len(o.unindexable) > 0 {
		o.addHalt(ReasonUnindexableMachines, "machines "+strings.Join(o.unindexable, ", ")+" carry no index in their name and sit in no declared failure domain")
	}

	for _, g := range o.groups {
		for _, m := range g.machines {
			if o.platform == nil || m.obj.Spec.ProviderSpec.Value == nil {
				if o.platform != nil {
					m.diff = platform.Diff{{Path: "providerSpec.value", Got: "<absent>", Want: "<set>"}}
				}
				continue
			}
			d, unknown, err := platform.Compare(o.platform, g.desired, m.obj.Spec.ProviderSpec.Value.Raw)
			for _, u := range unknown {
				o.unknown[u] = true
			}
			if err != nil {
				d = platform.Diff{{Path: "providerSpec.value", Got: "unreadable: " + err.Error(), Want: "<template>"}}
			}
			m.diff = d
			m.upToDate = len(d) == 0
		}
	}
	return o
}
