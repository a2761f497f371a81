package machineapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/upshift-io/upshift/tools/ocpsim/faults"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
	"github.com/upshift-io/upshift/tools/ocpsim/timescale"
)

// Durations are simulated (scaled by Options.Scale).
type Durations struct {
	Provision time.Duration // instance created: Provisioning → Provisioned
	Join      time.Duration // node registers and is linked: Provisioned → Running
	Terminate time.Duration // instance terminated after drain
}

// DefaultDurations are close to a cloud provider.
func DefaultDurations() Durations {
	return Durations{Provision: 2 * time.Minute, Join: 4 * time.Minute, Terminate: time.Minute}
}

// Options configure the machine-api simulator.
type Options struct {
	Scale          timescale.Scale
	Durations      Durations
	Log            logr.Logger
	KubeletVersion string
}

// Setup registers the machine and MachineSet controllers.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Durations == (Durations{}) {
		o.Durations = DefaultDurations()
	}
	if o.KubeletVersion == "" {
		o.KubeletVersion = "v1.29.6+aa1b2c3"
	}
	s := &sim{c: mgr.GetClient(), o: o, log: o.Log, since: map[string]time.Time{}, events: mgr.GetEventRecorder("machine-controller")}
	nodeToMachine := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if ns, name, ok := cutRef(obj.GetAnnotations()[MachineAnnotation]); ok {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
		}
		return nil
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("machine-api-machine").For(&machinev1beta1.Machine{}).
		Watches(&corev1.Node{}, nodeToMachine).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			res, err := s.machine(ctx, req)
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: timescale.ConflictRetry}, nil
			}
			return res, err
		})); err != nil {
		return err
	}
	machineToSet := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if ms := obj.GetLabels()[MachineSetLabel]; ms != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ms}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).Named("machine-api-machineset").For(&machinev1beta1.MachineSet{}).
		Watches(&machinev1beta1.Machine{}, machineToSet).
		Complete(reconcile.Func(s.machineSet))
}

func cutRef(ref string) (string, string, bool) {
	for i := 0; i < len(ref); i++ {
		if ref[i] == '/' {
			return ref[:i], ref[i+1:], ref[:i] != "" && ref[i+1:] != ""
		}
	}
	return "", "", false
}

type sim struct {
	c      client.Client
	o      Options
	log    logr.Logger
	events events.EventRecorder
	mu     sync.Mutex
	since  map[string]time.Time
}

// wait returns the wall time left of simulated duration d in phase key.
func (s *sim) wait(key string, d time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.since[key]
	if !ok {
		t = time.Now()
		s.since[key] = t
	}
	return s.o.Scale.Wall(d) - time.Since(t)
}

func (s *sim) done(key string) {
	s.mu.Lock()
	delete(s.since, key)
	s.mu.Unlock()
}

const mapi = "machine-api: "

func setMachineCondition(m *machinev1beta1.Machine, t machinev1beta1.ConditionType, st corev1.ConditionStatus, reason, msg string) {
	now := metav1.Now()
	for i := range m.Status.Conditions {
		c := &m.Status.Conditions[i]
		if c.Type == t {
			if c.Status != st {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = st, reason, msg
			if st == corev1.ConditionFalse {
				c.Severity = machinev1beta1.ConditionSeverityWarning
			} else {
				c.Severity = ""
			}
			return
		}
	}
	c := machinev1beta1.Condition{Type: t, Status: st, Reason: reason, Message: msg, LastTransitionTime: now}
	if st == corev1.ConditionFalse {
		c.Severity = machinev1beta1.ConditionSeverityWarning
	}
	m.Status.Conditions = append(m.Status.Conditions, c)
}

func (s *sim) writeStatus(ctx context.Context, orig, m *machinev1beta1.Machine) error {
	if equality.Semantic.DeepEqual(orig.Status, m.Status) {
		return nil
	}
	now := metav1.Now()
	m.Status.LastUpdated = &now
	return s.c.Status().Patch(ctx, m, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

func (s *sim) machine(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var m machinev1beta1.Machine
	if err := s.c.Get(ctx, req.NamespacedName, &m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	key := string(m.UID)
	if m.DeletionTimestamp != nil {
		return s.deleteMachine(ctx, &m)
	}
	if !controllerutil.ContainsFinalizer(&m, Finalizer) {
		orig := m.DeepCopy()
		controllerutil.AddFinalizer(&m, Finalizer)
		return reconcile.Result{}, s.c.Patch(ctx, &m, client.MergeFrom(orig))
	}
	phase := ptr.Deref(m.Status.Phase, "")
	orig := m.DeepCopy()
	ps := ReadProviderSpec(&m)
	switch phase {
	case machinev1beta1.PhaseFailed, machinev1beta1.PhaseRunning:
		return reconcile.Result{}, nil
	case "":
		if faults.Has(m.Annotations, faults.ProvisionFailed) {
			m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
			m.Status.ErrorReason = ptr.To(machinev1beta1.InvalidConfigurationMachineError)
			m.Status.ErrorMessage = ptr.To("error launching instance: The requested configuration is currently not supported. Please check the documentation for supported configurations. (fault injected by ocpsim)")
			setMachineCondition(&m, machinev1beta1.InstanceExistsCondition, corev1.ConditionFalse, machinev1beta1.ErrorCheckingProviderReason, *m.Status.ErrorMessage)
			s.log.Info(mapi + fmt.Sprintf("machine %s failed to provision: %s", m.Name, *m.Status.ErrorMessage))
			s.events.Eventf(&m, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "%s", *m.Status.ErrorMessage)
			return reconcile.Result{}, s.writeStatus(ctx, orig, &m)
		}
		m.Status.Phase = ptr.To(machinev1beta1.PhaseProvisioning)
		setMachineCondition(&m, machinev1beta1.InstanceExistsCondition, corev1.ConditionFalse, machinev1beta1.InstanceNotCreatedReason, "Instance has not been created")
		s.log.Info(mapi + fmt.Sprintf("machine %s: launching %s instance in %s", m.Name, ps.InstanceType, ps.Placement.AvailabilityZone))
		return reconcile.Result{}, s.writeStatus(ctx, orig, &m)
	case machinev1beta1.PhaseProvisioning:
		if faults.Has(m.Annotations, faults.ProvisionStuck) {
			// Removing the annotation is a Machine event: it wakes us.
			return reconcile.Result{}, nil
		}
		if left := s.wait(key+"/provision", s.o.Durations.Provision); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
		if m.Spec.ProviderID == nil {
			o2 := m.DeepCopy()
			m.Spec.ProviderID = ptr.To(ProviderID(ps.Placement.AvailabilityZone, m.Name))
			if err := s.c.Patch(ctx, &m, client.MergeFrom(o2)); err != nil {
				return reconcile.Result{}, err
			}
			orig = m.DeepCopy()
		}
		m.Status.Phase = ptr.To(machinev1beta1.PhaseProvisioned)
		m.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: InternalIP(m.Name)}, {Type: corev1.NodeHostName, Address: m.Name}, {Type: corev1.NodeInternalDNS, Address: m.Name}}
		setMachineCondition(&m, machinev1beta1.InstanceExistsCondition, corev1.ConditionTrue, "", "")
		s.done(key + "/provision")
		s.log.Info(mapi + fmt.Sprintf("machine %s: instance running (%s)", m.Name, *m.Spec.ProviderID))
		return reconcile.Result{}, s.writeStatus(ctx, orig, &m)
	case machinev1beta1.PhaseProvisioned:
		if left := s.wait(key+"/join", s.o.Durations.Join); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
		if err := s.ensureNode(ctx, &m, ps); err != nil {
			return reconcile.Result{}, err
		}
		m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
		m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: m.Name}
		s.done(key + "/join")
		s.log.Info(mapi + fmt.Sprintf("machine %s: node %s joined the cluster, machine is Running", m.Name, m.Name))
		return reconcile.Result{}, s.writeStatus(ctx, orig, &m)
	}
	return reconcile.Result{}, nil
}

// ensureNode registers the machine's Node, served its pool's current config
// by the machine-config-server (so it starts Done on it).
func (s *sim) ensureNode(ctx context.Context, m *machinev1beta1.Machine, ps ProviderSpec) error {
	var existing corev1.Node
	if err := s.c.Get(ctx, types.NamespacedName{Name: m.Name}, &existing); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	role := m.Labels[RoleLabel]
	if role == "" {
		role = "worker"
	}
	n := Node(NodeSpec{
		Name: m.Name, Zone: ps.Placement.AvailabilityZone, Region: ps.Placement.Region, InstanceType: ps.InstanceType, Role: role,
		ExtraLabels: m.Spec.ObjectMeta.Labels, MachineRef: m.Namespace + "/" + m.Name, ProviderID: ptr.Deref(m.Spec.ProviderID, ""),
		InternalIP: InternalIP(m.Name), KubeletVersion: s.o.KubeletVersion,
	})
	var pools mcfgv1.MachineConfigPoolList
	if err := s.c.List(ctx, &pools); err != nil {
		return err
	}
	ptrs := make([]*mcfgv1.MachineConfigPool, 0, len(pools.Items))
	for i := range pools.Items {
		ptrs = append(ptrs, &pools.Items[i])
	}
	if p, err := mco.PoolFor(n, ptrs); err == nil && p != "" {
		for i := range pools.Items {
			if pools.Items[i].Name == p {
				cfg := pools.Items[i].Spec.Configuration.Name
				for k, v := range map[string]string{
					mco.CurrentConfigAnnotation: cfg, mco.DesiredConfigAnnotation: cfg, mco.StateAnnotation: mco.StateDone, mco.ReasonAnnotation: "",
					mco.DesiredDrainAnnotation: mco.DrainAction("uncordon", cfg), mco.LastAppliedDrainAnnotation: mco.DrainAction("uncordon", cfg),
					mco.ControlPlaneTopologyAnnot: "HighlyAvailable",
				} {
					n.Annotations[k] = v
				}
			}
		}
	}
	if err := s.c.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func (s *sim) deleteMachine(ctx context.Context, m *machinev1beta1.Machine) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(m, Finalizer) {
		return reconcile.Result{}, nil
	}
	orig := m.DeepCopy()
	key := string(m.UID)
	if ptr.Deref(m.Status.Phase, "") != machinev1beta1.PhaseDeleting {
		m.Status.Phase = ptr.To(machinev1beta1.PhaseDeleting)
		s.log.Info(mapi + "machine " + m.Name + " is being deleted")
	}
	if hooks := m.Spec.LifecycleHooks.PreDrain; len(hooks) > 0 {
		setMachineCondition(m, machinev1beta1.MachineDrainable, corev1.ConditionFalse, machinev1beta1.MachineHookPresent, fmt.Sprintf("Drain operation currently blocked by: %+v", hooks))
		if !equality.Semantic.DeepEqual(orig.Status.Conditions, m.Status.Conditions) {
			s.log.Info(mapi + fmt.Sprintf("machine %s: drain blocked by preDrain hook %s (owner %s)", m.Name, hooks[0].Name, hooks[0].Owner))
			s.events.Eventf(m, nil, corev1.EventTypeNormal, "DrainBlocked", "Drain", "Drain operation currently blocked by: %+v", hooks)
		}
		return reconcile.Result{}, s.writeStatus(ctx, orig, m)
	}
	setMachineCondition(m, machinev1beta1.MachineDrainable, corev1.ConditionTrue, "", "")
	if c := machineCondition(m, machinev1beta1.MachineDrained); c == nil || c.Status != corev1.ConditionTrue {
		if m.Status.NodeRef != nil && m.Annotations[ExcludeDrainAnnot] == "" {
			left, err := s.drainNode(ctx, m.Status.NodeRef.Name)
			if err != nil {
				return reconcile.Result{}, err
			}
			if left > 0 {
				return reconcile.Result{RequeueAfter: left}, s.writeStatus(ctx, orig, m)
			}
		}
		setMachineCondition(m, machinev1beta1.MachineDrained, corev1.ConditionTrue, "", "")
		s.log.Info(mapi + "machine " + m.Name + ": node drained")
		return reconcile.Result{}, s.writeStatus(ctx, orig, m)
	}
	if hooks := m.Spec.LifecycleHooks.PreTerminate; len(hooks) > 0 {
		setMachineCondition(m, machinev1beta1.MachineTerminable, corev1.ConditionFalse, machinev1beta1.MachineHookPresent, fmt.Sprintf("Terminate operation currently blocked by: %+v", hooks))
		return reconcile.Result{}, s.writeStatus(ctx, orig, m)
	}
	setMachineCondition(m, machinev1beta1.MachineTerminable, corev1.ConditionTrue, "", "")
	if err := s.writeStatus(ctx, orig, m); err != nil {
		return reconcile.Result{}, err
	}
	if left := s.wait(key+"/terminate", s.o.Durations.Terminate); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	if m.Status.NodeRef != nil {
		if err := s.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Status.NodeRef.Name}}); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	s.done(key + "/terminate")
	s.log.Info(mapi + "machine " + m.Name + ": instance terminated, node deleted")
	o2 := m.DeepCopy()
	controllerutil.RemoveFinalizer(m, Finalizer)
	return reconcile.Result{}, client.IgnoreNotFound(s.c.Patch(ctx, m, client.MergeFrom(o2)))
}

func machineCondition(m *machinev1beta1.Machine, t machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range m.Status.Conditions {
		if m.Status.Conditions[i].Type == t {
			return &m.Status.Conditions[i]
		}
	}
	return nil
}

// drainNode cordons the node and evicts its pods; it returns how long to
// wait before looking again (0 when the node is drained or gone).
func (s *sim) drainNode(ctx context.Context, name string) (time.Duration, error) {
	var n corev1.Node
	if err := s.c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if !n.Spec.Unschedulable {
		orig := n.DeepCopy()
		n.Spec.Unschedulable = true
		if err := s.c.Patch(ctx, &n, client.MergeFrom(orig)); err != nil {
			return 0, err
		}
	}
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.MatchingFields{mco.PodNodeIndex: name}); err != nil {
		return 0, err
	}
	remaining := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		ds := false
		for _, o := range p.OwnerReferences {
			ds = ds || o.Kind == "DaemonSet"
		}
		if ds || p.Annotations[corev1.MirrorPodAnnotationKey] != "" {
			continue
		}
		remaining++
		if p.DeletionTimestamp == nil {
			if err := s.c.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
				return 0, err
			}
		}
	}
	if remaining > 0 {
		return s.o.Scale.Wall(20 * time.Second), nil
	}
	return 0, nil
}

// ---- MachineSet controller ----

func (s *sim) machineSet(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ms machinev1beta1.MachineSet
	if err := s.c.Get(ctx, req.NamespacedName, &ms); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ms.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
	if err != nil || sel.Empty() {
		return reconcile.Result{}, nil
	}
	var list machinev1beta1.MachineList
	if err := s.c.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return reconcile.Result{}, err
	}
	var active []*machinev1beta1.Machine
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			active = append(active, &list.Items[i])
		}
	}
	want := int(ptr.Deref(ms.Spec.Replicas, 1))
	switch {
	case len(active) < want:
		for i := len(active); i < want; i++ {
			m := &machinev1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s-%s", ms.Name, randSuffix()), Namespace: ms.Namespace,
					Labels: map[string]string{}, Annotations: map[string]string{},
				},
				Spec: *ms.Spec.Template.Spec.DeepCopy(),
			}
			for k, v := range ms.Spec.Template.ObjectMeta.Labels {
				m.Labels[k] = v
			}
			for k, v := range ms.Spec.Template.ObjectMeta.Annotations {
				m.Annotations[k] = v
			}
			m.Spec.ProviderID = nil
			if err := controllerutil.SetControllerReference(&ms, m, s.c.Scheme()); err != nil {
				return reconcile.Result{}, err
			}
			if err := s.c.Create(ctx, m); err != nil {
				return reconcile.Result{}, err
			}
			s.log.Info(mapi + fmt.Sprintf("machineset %s: created machine %s (%d/%d)", ms.Name, m.Name, i+1, want))
		}
	case len(active) > want:
		sort.SliceStable(active, func(i, j int) bool { return deletePriority(active[i]) > deletePriority(active[j]) })
		for _, m := range active[:len(active)-want] {
			if err := s.c.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			s.log.Info(mapi + fmt.Sprintf("machineset %s: deleting machine %s to scale down to %d", ms.Name, m.Name, want))
		}
	}
	orig := ms.DeepCopy()
	ready := int32(0)
	for _, m := range active {
		if ptr.Deref(m.Status.Phase, "") == machinev1beta1.PhaseRunning && m.Status.NodeRef != nil {
			ready++
		}
	}
	ms.Status.Replicas = int32(len(active))
	ms.Status.FullyLabeledReplicas = int32(len(active))
	ms.Status.ReadyReplicas, ms.Status.AvailableReplicas = ready, ready
	ms.Status.ObservedGeneration = ms.Generation
	ms.Status.LabelSelector = labels.SelectorFromSet(ms.Spec.Selector.MatchLabels).String()
	if equality.Semantic.DeepEqual(orig.Status, ms.Status) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, s.c.Status().Patch(ctx, &ms, client.MergeFrom(orig))
}

// deletePriority ranks machines for scale-down: annotated for deletion first,
// then failed, then not yet running, then newest.
func deletePriority(m *machinev1beta1.Machine) int64 {
	switch {
	case m.Annotations[DeleteMachineAnn] != "":
		return 1 << 62
	case ptr.Deref(m.Status.Phase, "") == machinev1beta1.PhaseFailed:
		return 1 << 61
	case m.Status.NodeRef == nil:
		return 1 << 60
	}
	return m.CreationTimestamp.Unix()
}

func randSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}
