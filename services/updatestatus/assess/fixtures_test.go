package assess

import (
	"regexp"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders for small, readable test snapshots. now is the assessment time.
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func cvCond(t string, s configv1.ConditionStatus, reason, msg string, since time.Duration) configv1.ClusterOperatorStatusCondition {
	return configv1.ClusterOperatorStatusCondition{Type: configv1.ClusterStatusConditionType(t), Status: s, Reason: reason, Message: msg, LastTransitionTime: ago(since)}
}

func partialEntry(version string, started time.Duration) configv1.UpdateHistory {
	return configv1.UpdateHistory{State: configv1.PartialUpdate, Version: version, Image: "img-" + version, StartedTime: ago(started)}
}

func completedEntry(version string, started, completed time.Duration) configv1.UpdateHistory {
	c := ago(completed)
	return configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: version, Image: "img-" + version, StartedTime: ago(started), CompletionTime: &c}
}

// updatingCV is a cluster updating 4.18.0 -> 4.18.1 for the given time.
func updatingCV(for_ time.Duration) *configv1.ClusterVersion {
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	cv.Status.Desired.Version = "4.18.1"
	cv.Status.History = []configv1.UpdateHistory{partialEntry("4.18.1", for_), completedEntry("4.18.0", 100*time.Hour, 99*time.Hour)}
	cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
		cvCond("Progressing", configv1.ConditionTrue, "", "Working towards 4.18.1", for_),
		cvCond("Failing", configv1.ConditionFalse, "", "", for_),
	}
	return cv
}

// idleCV is a cluster that completed 4.18.0 -> 4.18.1.
func idleCV() *configv1.ClusterVersion {
	cv := updatingCV(time.Hour)
	cv.Status.History[0] = completedEntry("4.18.1", 2*time.Hour, time.Hour)
	cv.Status.Conditions[0] = cvCond("Progressing", configv1.ConditionFalse, "", "Cluster version is 4.18.1", time.Hour)
	return cv
}

type coOpt func(*configv1.ClusterOperator)

func co(name, version string, opts ...coOpt) configv1.ClusterOperator {
	c := configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		"include.release.openshift.io/self-managed-high-availability": "true",
	}}}
	c.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
	c.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
		cvCond("Available", configv1.ConditionTrue, "", "", 10*time.Hour),
		cvCond("Degraded", configv1.ConditionFalse, "", "", 10*time.Hour),
		cvCond("Progressing", configv1.ConditionFalse, "", "", 10*time.Hour),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func withCond(t string, s configv1.ConditionStatus, reason, msg string, since time.Duration) coOpt {
	return func(c *configv1.ClusterOperator) {
		for i := range c.Status.Conditions {
			if string(c.Status.Conditions[i].Type) == t {
				c.Status.Conditions[i] = cvCond(t, s, reason, msg, since)
			}
		}
	}
}

func notPlatform(c *configv1.ClusterOperator) { c.Annotations = nil }

func pool(name, role, config string, paused bool) mcfgv1.MachineConfigPool {
	p := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + role: ""}}
	p.Spec.Configuration.Name = config
	p.Spec.Paused = paused
	return p
}

func mc(name, version string) mcfgv1.MachineConfig {
	return mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annoReleaseImageVersion: version}}}
}

type nodeOpt func(*corev1.Node)

// node builds a ready node with the MCD annotations given.
func node(name, role, current, desired, state string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"node-role.kubernetes.io/" + role: ""},
		Annotations: map[string]string{
			annoCurrentConfig: current, annoDesiredConfig: desired, annoState: state,
		},
	}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(10 * time.Hour)}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func notReadyFor(d time.Duration) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy", LastTransitionTime: ago(d)}
	}
}

func annotate(k, v string) nodeOpt {
	return func(n *corev1.Node) { n.Annotations[k] = v }
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

// baseSnapshot: updating for 20 minutes; one platform operator done, one in progress;
// master and worker pools with the rendered configs "m-old/m-new" and "w-old/w-new".
func baseSnapshot() Snapshot {
	return Snapshot{
		ClusterVersion: updatingCV(20 * time.Minute),
		ClusterOperators: []configv1.ClusterOperator{
			co("etcd", "4.18.1"),
			co("kube-apiserver", "4.18.0", withCond("Progressing", configv1.ConditionTrue, "NodeInstaller", "installing revision 7", 3*time.Minute)),
		},
		MachineConfigPools: []mcfgv1.MachineConfigPool{
			pool("master", "master", "m-new", false),
			pool("worker", "worker", "w-new", false),
		},
		MachineConfigs: []mcfgv1.MachineConfig{
			mc("m-old", "4.18.0"), mc("m-new", "4.18.1"), mc("w-old", "4.18.0"), mc("w-new", "4.18.1"),
		},
		Nodes: []*corev1.Node{
			node("master-0", "master", "m-old", "m-old", "Done"),
			node("worker-0", "worker", "w-old", "w-old", "Done"),
		},
		Now: now,
	}
}

var uidPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
