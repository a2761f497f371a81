package seed

import (
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sintstr "k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/machineapi"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

// Objects is everything Seed creates. Status fields are filled and written
// through the status subresource after creation.
type Objects struct {
	Namespaces     []*corev1.Namespace
	ClusterVersion *configv1.ClusterVersion
	// Infrastructure is the cluster's `cluster`: AWS, the topology's
	// region and infrastructure name, as the installer writes it.
	Infrastructure   *configv1.Infrastructure
	ClusterOperators []*configv1.ClusterOperator
	MachineConfigs   []*mcfgv1.MachineConfig // sources and rendered
	Pools            []*mcfgv1.MachineConfigPool
	Nodes            []*corev1.Node
	Machines         []*machinev1beta1.Machine
	MachineSets      []*machinev1beta1.MachineSet
	CPMS             *machinev1.ControlPlaneMachineSet
	// MCODeployment is the machine-config-operator's Deployment, running the
	// release's MCO image.
	MCODeployment *appsv1.Deployment
	// CPMSOperatorDeployment is the control-plane-machine-set operator's
	// Deployment (Topology.CPMSOperator; nil without it).
	CPMSOperatorDeployment *appsv1.Deployment
	// GraphConfigMap holds the simulated update service's graph (see
	// cvo.GraphConfigMap), which the simulated CVO reads.
	GraphConfigMap *corev1.ConfigMap
	// Deployments are the topology's workloads.
	Deployments []*appsv1.Deployment
	PDBs        []*policyv1.PodDisruptionBudget
}

const (
	instanceMaster = "m6i.xlarge"
	instanceWorker = "m6i.2xlarge"
	// KubeletVersion is reported by seeded nodes.
	KubeletVersion = "v1.29.6+aa1b2c3"
)

// Build turns a topology into objects; now stamps history and conditions.
func Build(t Topology, now time.Time) (*Objects, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	t = t.WithDefaults()
	o := &Objects{}
	mnow := metav1.NewTime(now)
	for _, ns := range []string{machineapi.Namespace, "openshift-machine-config-operator", "openshift-etcd", "openshift-cluster-version"} {
		o.Namespaces = append(o.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	o.ClusterVersion = clusterVersion(t, now)
	o.Infrastructure = Infrastructure(t)
	graph, err := cvo.EncodeGraph(t.UpdateGraph())
	if err != nil {
		return nil, err
	}
	o.GraphConfigMap = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cvo.GraphNamespace, Name: cvo.GraphConfigMap}, Data: map[string]string{cvo.GraphKey: graph}}
	o.MCODeployment = MCODeployment(cvo.MCOImage(cvo.ReleaseImage(t.Version)))
	if t.CPMSOperator {
		o.CPMSOperatorDeployment = CPMSOperatorDeployment(t.Version)
	}
	for _, op := range cvo.Operators() {
		o.ClusterOperators = append(o.ClusterOperators, ClusterOperator(op, t.Version, mnow))
	}

	// MachineConfigs and pools.
	roles := []string{"master", "worker"}
	for _, r := range roles {
		o.MachineConfigs = append(o.MachineConfigs, mco.BaseConfigs(r, t.Version)...)
		o.MachineConfigs = append(o.MachineConfigs, mco.UserConfigs(r)...)
	}
	master := Pool("master", mco.RoleLabel, nil, nil, false)
	master.Labels[mco.RequiredForUpgradeLabel] = ""
	wmu, _ := ParseIntOrPercent(t.WorkerMaxUnavailable)
	worker := Pool("worker", mco.RoleLabel, nil, &wmu, false)
	o.Pools = []*mcfgv1.MachineConfigPool{master, worker}
	for _, cp := range t.CustomPools {
		var mu *k8sintstr.IntOrString
		if cp.MaxUnavailable != "" {
			v, _ := ParseIntOrPercent(cp.MaxUnavailable)
			mu = &v
		}
		o.Pools = append(o.Pools, Pool(cp.Name, mco.RoleLabel, []string{"worker", cp.Name}, mu, cp.Paused))
	}
	rendered := map[string]string{}
	for _, p := range o.Pools {
		mc, err := mco.Render(p, o.MachineConfigs, t.Version)
		if err != nil {
			return nil, err
		}
		src, _ := mco.SelectSources(p, o.MachineConfigs)
		p.Spec.Configuration = mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: mc.Name}, Source: mco.Sources(src)}
		rendered[p.Name] = mc.Name
		o.MachineConfigs = append(o.MachineConfigs, mc)
	}

	// Machines, Nodes, MachineSets.
	addMachine := func(name, role, zone, instance, machineSet string, extra map[string]string, pool string) {
		m := machineapi.Machine(machineapi.MachineSpec{Name: name, InfraName: t.InfraName, Role: role, Region: t.Region, Zone: zone, InstanceType: instance, MachineSet: machineSet})
		for k, v := range extra {
			m.Spec.ObjectMeta.Labels[k] = v
		}
		m.Finalizers = []string{machineapi.Finalizer}
		pid := machineapi.ProviderID(zone, name)
		ip := machineapi.InternalIP(name)
		m.Spec.ProviderID = &pid
		if role == "master" {
			m.Spec.LifecycleHooks.PreDrain = []machinev1beta1.LifecycleHook{{Name: EtcdHookName, Owner: EtcdHookOwner}}
		}
		m.Status = machinev1beta1.MachineStatus{
			Phase:       ptr.To(machinev1beta1.PhaseRunning),
			NodeRef:     &corev1.ObjectReference{Kind: "Node", Name: name},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalDNS, Address: name}},
			LastUpdated: &mnow,
			Conditions:  []machinev1beta1.Condition{{Type: machinev1beta1.InstanceExistsCondition, Status: corev1.ConditionTrue, LastTransitionTime: mnow}},
		}
		o.Machines = append(o.Machines, m)
		cfg := rendered[pool]
		o.Nodes = append(o.Nodes, machineapi.Node(machineapi.NodeSpec{
			Name: name, Zone: zone, Region: t.Region, InstanceType: instance, Role: role, ExtraLabels: extra,
			MachineRef: machineapi.Namespace + "/" + name, ProviderID: pid, InternalIP: ip, KubeletVersion: KubeletVersion,
			Annotations: DoneAnnotations(cfg),
		}))
	}
	for i := 0; i < t.Masters; i++ {
		addMachine(fmt.Sprintf("%s-master-%d", t.InfraName, i), "master", t.Zones[i%len(t.Zones)], instanceMaster, "", nil, "master")
	}
	addPoolMachines := func(pool string, n int, extra map[string]string) {
		perZone := make([]int, len(t.Zones))
		for i := 0; i < n; i++ {
			perZone[i%len(t.Zones)]++
		}
		for zi, z := range t.Zones {
			msName := fmt.Sprintf("%s-%s-%s", t.InfraName, pool, z)
			if perZone[zi] == 0 && pool != "worker" {
				continue
			}
			for j := 0; j < perZone[zi]; j++ {
				addMachine(fmt.Sprintf("%s-%d", msName, j), "worker", z, instanceWorker, msName, extra, pool)
			}
			o.MachineSets = append(o.MachineSets, MachineSet(t, msName, z, int32(perZone[zi]), extra))
		}
	}
	addPoolMachines("worker", t.Workers, nil)
	for _, cp := range t.CustomPools {
		addPoolMachines(cp.Name, cp.Nodes, map[string]string{"node-role.kubernetes.io/" + cp.Name: ""})
	}
	if t.Masters == 3 || t.Masters == 5 { // the CPMS API accepts only these; single-node clusters have none
		o.CPMS = controlPlaneMachineSet(t)
	}

	// Pool status, as the MCO would report it.
	byPool := mco.NodesByPool(o.Nodes, o.Pools)
	for _, p := range o.Pools {
		p.Status = mco.PoolStatus(p, byPool[p.Name], mnow)
	}

	// Workloads.
	for _, w := range t.Workloads {
		if !hasNamespace(o, w.Namespace) {
			o.Namespaces = append(o.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Namespace}})
		}
		d, pdb := workload(w)
		o.Deployments = append(o.Deployments, d)
		if pdb != nil {
			o.PDBs = append(o.PDBs, pdb)
		}
	}
	return o, nil
}

func hasNamespace(o *Objects, ns string) bool {
	for _, n := range o.Namespaces {
		if n.Name == ns {
			return true
		}
	}
	return false
}

// Etcd hook on control-plane Machines (owned by the etcd operator).
const (
	EtcdHookName  = "EtcdQuorumOperator"
	EtcdHookOwner = "clusteroperator/etcd"
)

// DoneAnnotations are the MCO annotations of a node settled on config.
func DoneAnnotations(config string) map[string]string {
	return map[string]string{
		mco.CurrentConfigAnnotation:    config,
		mco.DesiredConfigAnnotation:    config,
		mco.StateAnnotation:            mco.StateDone,
		mco.ReasonAnnotation:           "",
		mco.DesiredDrainAnnotation:     mco.DrainAction("uncordon", config),
		mco.LastAppliedDrainAnnotation: mco.DrainAction("uncordon", config),
		mco.ControlPlaneTopologyAnnot:  "HighlyAvailable",
	}
}

// Pool builds a MachineConfigPool; roles selects source configs by role
// (default: the pool's own name).
func Pool(name, roleLabel string, roles []string, maxUnavailable *k8sintstr.IntOrString, paused bool) *mcfgv1.MachineConfigPool {
	mcSel := &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: name}}
	if len(roles) > 0 {
		mcSel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: roleLabel, Operator: metav1.LabelSelectorOpIn, Values: roles}}}
	}
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pools.operator.machineconfiguration.openshift.io/" + name: ""}},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: mcSel,
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
			MaxUnavailable:        maxUnavailable,
			Paused:                paused,
		},
	}
}

// Infrastructure builds the Infrastructure `cluster` of an AWS cluster of
// topology t (every OpenShift cluster has one; the installer writes it).
func Infrastructure(t Topology) *configv1.Infrastructure {
	t = t.WithDefaults()
	return &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec:       configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformSpec{}}},
		Status: configv1.InfrastructureStatus{
			InfrastructureName:     t.InfraName,
			ControlPlaneTopology:   configv1.HighlyAvailableTopologyMode,
			InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
			PlatformStatus:         &configv1.PlatformStatus{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformStatus{Region: t.Region}},
		},
	}
}

// MCODeployment builds the machine-config-operator Deployment as the release
// payload has it: one replica on a control-plane node, the operator's
// container and its metrics proxy.
func MCODeployment(image string) *appsv1.Deployment {
	return payloadOperator(cvo.MCONamespace, cvo.MCODeployment, "machine-config-operator",
		corev1.Container{Name: cvo.MCOContainer, Image: image},
		corev1.Container{Name: "kube-rbac-proxy", Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:kube-rbac-proxy"})
}

// CPMSOperatorDeployment builds the control-plane-machine-set operator's
// Deployment of release version as the release manifest has it: one
// replica on a control-plane node, the operator's image of the release and
// RELEASE_VERSION, the version the operator reports.
func CPMSOperatorDeployment(version string) *appsv1.Deployment {
	d := cvo.CPMSOperatorDeployment
	return payloadOperator(d.Namespace, d.Name, d.Name, corev1.Container{
		Name:  d.Name,
		Image: cvo.CPMSOperatorImage(cvo.ReleaseImage(version)),
		Env:   []corev1.EnvVar{{Name: cvo.ReleaseVersionEnv, Value: version}},
	})
}

// payloadOperator is an operator Deployment of the payload as its release
// manifest has it: one replica, labelled k8s-app=app, on a control-plane
// node (tolerating the master taint).
func payloadOperator(namespace, name, app string, containers ...corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"k8s-app": app}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"node-role.kubernetes.io/master": ""},
					Tolerations: []corev1.Toleration{
						{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
					},
					Containers: containers,
				},
			},
		},
	}
}

// ClusterOperator builds a healthy ClusterOperator at version; the
// machine-config operator also reports the image it runs.
func ClusterOperator(op cvo.Operator, version string, now metav1.Time) *configv1.ClusterOperator {
	co := &configv1.ClusterOperator{
		ObjectMeta: metav1.ObjectMeta{Name: op.Name, Annotations: map[string]string{
			"include.release.openshift.io/self-managed-high-availability": "true",
			"include.release.openshift.io/single-node-developer":          "true",
		}},
	}
	co.Status = configv1.ClusterOperatorStatus{
		Versions:       versions(op.Name, version),
		RelatedObjects: []configv1.ObjectReference{{Group: "", Resource: "namespaces", Name: op.Namespace}, {Group: "config.openshift.io", Resource: "clusteroperators", Name: op.Name}},
		Conditions:     cvo.HealthyConditions(version, now),
	}
	return co
}

func clusterVersion(t Topology, now time.Time) *configv1.ClusterVersion {
	mnow := metav1.NewTime(now)
	cv := &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec:       configv1.ClusterVersionSpec{ClusterID: configv1.ClusterID(t.ClusterID), Channel: t.Channel},
	}
	var history []configv1.UpdateHistory
	all := append(append([]string(nil), t.PreviousVersions...), t.Version)
	start := now.Add(-time.Duration(len(all)) * 30 * 24 * time.Hour)
	for i, v := range all {
		s := metav1.NewTime(start.Add(time.Duration(i) * 30 * 24 * time.Hour))
		c := metav1.NewTime(s.Add(75 * time.Minute))
		history = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, StartedTime: s, CompletionTime: &c, Version: v, Image: cvo.ReleaseImage(v), Verified: i > 0}}, history...)
	}
	u := cvo.ComputeUpdates(t.UpdateGraph(), t.Channel, t.Version, nil, mnow)
	cv.Status = configv1.ClusterVersionStatus{
		Desired:            configv1.Release{Version: t.Version, Image: cvo.ReleaseImage(t.Version), Channels: u.Channels},
		History:            history,
		VersionHash:        "ocpsim-" + t.Version,
		AvailableUpdates:   u.Available,
		ConditionalUpdates: u.Conditional,
		Capabilities: configv1.ClusterVersionCapabilitiesStatus{
			EnabledCapabilities: []configv1.ClusterVersionCapability{"baremetal", "Console", "Insights", "MachineAPI", "marketplace", "openshift-samples", "Storage"},
			KnownCapabilities:   []configv1.ClusterVersionCapability{"baremetal", "Console", "Insights", "MachineAPI", "marketplace", "openshift-samples", "Storage"},
		},
		Conditions: cvo.SettledConditions(t.Version, cvo.ReleaseImage(t.Version), mnow),
	}
	cvo.SetCondition(&cv.Status.Conditions, configv1.RetrievedUpdates, u.Retrieved.Status, u.Retrieved.Reason, u.Retrieved.Message, mnow)
	return cv
}

// MachineSet builds a worker MachineSet in zone.
func MachineSet(t Topology, name, zone string, replicas int32, extra map[string]string) *machinev1beta1.MachineSet {
	sel := map[string]string{machineapi.ClusterLabel: t.InfraName, machineapi.MachineSetLabel: name}
	tmpl := machineapi.Machine(machineapi.MachineSpec{Name: name, InfraName: t.InfraName, Role: "worker", Region: t.Region, Zone: zone, InstanceType: instanceWorker, MachineSet: name})
	for k, v := range extra {
		tmpl.Spec.ObjectMeta.Labels[k] = v
	}
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: machineapi.Namespace, Labels: map[string]string{machineapi.ClusterLabel: t.InfraName}},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: metav1.LabelSelector{MatchLabels: sel},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: tmpl.Labels},
				Spec:       tmpl.Spec,
			},
		},
	}
	ms.Status = machinev1beta1.MachineSetStatus{Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}
	return ms
}

func controlPlaneMachineSet(t Topology) *machinev1.ControlPlaneMachineSet {
	tmpl := machineapi.Machine(machineapi.MachineSpec{Name: "template", InfraName: t.InfraName, Role: "master", Region: t.Region, Zone: t.Zones[0], InstanceType: instanceMaster})
	var fds []machinev1.AWSFailureDomain
	for _, z := range t.Zones {
		fds = append(fds, machinev1.AWSFailureDomain{Placement: machinev1.AWSFailureDomainPlacement{AvailabilityZone: z}})
	}
	labels := map[string]string{machineapi.ClusterLabel: t.InfraName, machineapi.RoleLabel: "master", machineapi.TypeLabel: "master"}
	return &machinev1.ControlPlaneMachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: machineapi.Namespace},
		Spec: machinev1.ControlPlaneMachineSetSpec{
			Replicas: ptr.To(int32(t.Masters)),
			State:    machinev1.ControlPlaneMachineSetStateActive,
			Strategy: machinev1.ControlPlaneMachineSetStrategy{Type: machinev1.RollingUpdate},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{machineapi.RoleLabel: "master", machineapi.TypeLabel: "master"}},
			Template: machinev1.ControlPlaneMachineSetTemplate{
				MachineType: machinev1.OpenShiftMachineV1Beta1MachineType,
				OpenShiftMachineV1Beta1Machine: &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
					FailureDomains: &machinev1.FailureDomains{Platform: configv1.AWSPlatformType, AWS: &fds},
					ObjectMeta:     machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: labels},
					Spec:           tmpl.Spec,
				},
			},
		},
	}
}

func workload(w Workload) (*appsv1.Deployment, *policyv1.PodDisruptionBudget) {
	lbl := map[string]string{"app": w.Name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
					Containers:   []corev1.Container{{Name: "app", Image: "registry.example.com/" + w.Name + ":1"}},
				},
			},
		},
	}
	if w.NodeName != "" {
		d.Spec.Template.Spec.NodeSelector["kubernetes.io/hostname"] = w.NodeName
	}
	if w.PDBMaxUnavailable == "" && w.PDBMinAvailable == "" {
		return d, nil
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: lbl}},
	}
	if w.PDBMaxUnavailable != "" {
		v, _ := ParseIntOrPercent(w.PDBMaxUnavailable)
		pdb.Spec.MaxUnavailable = &v
	} else {
		v, _ := ParseIntOrPercent(w.PDBMinAvailable)
		pdb.Spec.MinAvailable = &v
	}
	return d, pdb
}

func versions(operator, version string) []configv1.OperandVersion {
	v := []configv1.OperandVersion{{Name: "operator", Version: version}}
	if operator == cvo.MachineConfig {
		v = append(v, configv1.OperandVersion{Name: "operator-image", Version: cvo.MCOImage(cvo.ReleaseImage(version))})
	}
	return v
}
