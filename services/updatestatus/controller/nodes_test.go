package controller

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/upshift-io/upshift/services/updatestatus/assess"
	"github.com/upshift-io/upshift/services/updatestatus/snapshot"
)

const mcoPrefix = "machineconfiguration.openshift.io/"

var nodeT0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// fullNode is a Node as a kubelet and the MCO leave it, with everything the
// assessment does not read as well.
func fullNode() *corev1.Node {
	mt := func(d time.Duration) metav1.Time { return metav1.NewTime(nodeT0.Add(d)) }
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-a-0", UID: "6f0d5b8e-1111-2222-3333-444455556666", ResourceVersion: "4711",
			CreationTimestamp: mt(-time.Hour),
			Labels:            map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-a-0"},
			Annotations: map[string]string{
				mcoPrefix + "currentConfig": "rendered-worker-1", mcoPrefix + "desiredConfig": "rendered-worker-2",
				mcoPrefix + "state": "Working", mcoPrefix + "reason": "",
				mcoPrefix + "desiredDrain": "drain-rendered-worker-2", mcoPrefix + "lastAppliedDrain": "uncordon-rendered-worker-1",
				mcoPrefix + "currentImage": "", mcoPrefix + "desiredImage": "",
				mcoPrefix + "controlPlaneTopology":                       "HighlyAvailable",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid":                        `{"ebs.csi.aws.com":"i-0abc"}`,
			},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
			OwnerReferences: nil,
		},
		Spec: corev1.NodeSpec{
			ProviderID: "aws:///us-east-1a/i-0abc", PodCIDR: "10.128.2.0/24", PodCIDRs: []string{"10.128.2.0/24"},
			Taints: []corev1.Taint{{Key: "UpdateInProgress", Effect: corev1.TaintEffectPreferNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7500m")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: mt(0), LastTransitionTime: mt(-time.Hour)},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: mt(0), LastTransitionTime: mt(-time.Hour)},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: mt(0), LastTransitionTime: mt(-time.Hour)},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: mt(0), LastTransitionTime: mt(-time.Hour)},
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.10"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.29.6", OSImage: "Red Hat Enterprise Linux CoreOS"},
			Images:          []corev1.ContainerImage{{Names: []string{"quay.io/openshift/release@sha256:abc"}, SizeBytes: 512 << 20}},
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/ebs.csi.aws.com^vol-1"},
			VolumesAttached: []corev1.AttachedVolume{{Name: "kubernetes.io/csi/ebs.csi.aws.com^vol-1", DevicePath: ""}},
		},
	}
}

// trimNode is the cache transform of Nodes, as ManagerOptions sets it.
var trimNode = nodeFields.Transform()

func condIndex(n *corev1.Node, t corev1.NodeConditionType) int {
	for i, c := range n.Status.Conditions {
		if c.Type == t {
			return i
		}
	}
	panic("no condition " + t)
}

func TestNodeChanged(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Node)
		want   bool
	}{
		// What the assessment does not read.
		{"kubelet heartbeat", func(n *corev1.Node) {
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(nodeT0.Add(time.Minute))
			}
			n.ResourceVersion = "4712"
		}, false},
		{"image list", func(n *corev1.Node) { n.Status.Images = nil }, false},
		{"volumes", func(n *corev1.Node) { n.Status.VolumesInUse = nil; n.Status.VolumesAttached = nil }, false},
		{"addresses", func(n *corev1.Node) { n.Status.Addresses[0].Address = "10.0.1.11" }, false},
		{"nodeInfo", func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = "v1.29.7" }, false},
		{"taints", func(n *corev1.Node) { n.Spec.Taints = nil }, false},
		{"other annotation", func(n *corev1.Node) { n.Annotations["csi.volume.kubernetes.io/nodeid"] = "{}" }, false},
		{"MCO annotation the assessment does not read", func(n *corev1.Node) {
			n.Annotations[mcoPrefix+"controlPlaneTopology"] = "SingleReplica"
		}, false},
		{"memory pressure", func(n *corev1.Node) {
			n.Status.Conditions[condIndex(n, corev1.NodeMemoryPressure)].Status = corev1.ConditionTrue
		}, false},
		{"managedFields", func(n *corev1.Node) { n.ManagedFields = nil }, false},

		// What it reads.
		{"a label (pool selectors)", func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/infra"] = "" }, true},
		{"label removed", func(n *corev1.Node) { delete(n.Labels, "node-role.kubernetes.io/worker") }, true},
		{"unschedulable", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"MCD reason set", func(n *corev1.Node) { n.Annotations[mcoPrefix+"reason"] = "failed to drain" }, true},
		{"annotation appears empty", func(n *corev1.Node) {
			delete(n.Annotations, mcoPrefix+"reason")
		}, true},
		{"Ready status", func(n *corev1.Node) {
			n.Status.Conditions[condIndex(n, corev1.NodeReady)].Status = corev1.ConditionFalse
		}, true},
		{"Ready reason", func(n *corev1.Node) {
			n.Status.Conditions[condIndex(n, corev1.NodeReady)].Reason = "KubeletNotReady"
		}, true},
		{"Ready message", func(n *corev1.Node) {
			n.Status.Conditions[condIndex(n, corev1.NodeReady)].Message = "PLEG is not healthy"
		}, true},
		{"Ready transition time", func(n *corev1.Node) {
			n.Status.Conditions[condIndex(n, corev1.NodeReady)].LastTransitionTime = metav1.NewTime(nodeT0)
		}, true},
		{"disk pressure", func(n *corev1.Node) {
			n.Status.Conditions[condIndex(n, corev1.NodeDiskPressure)].Status = corev1.ConditionTrue
		}, true},
		{"network unavailable appears", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue})
		}, true},
		{"Ready disappears", func(n *corev1.Node) {
			i := condIndex(n, corev1.NodeReady)
			n.Status.Conditions = append(n.Status.Conditions[:i], n.Status.Conditions[i+1:]...)
		}, true},
	}
	for _, k := range assess.NodeAnnotations {
		tests = append(tests, struct {
			name   string
			mutate func(*corev1.Node)
			want   bool
		}{"annotation " + strings.TrimPrefix(k, mcoPrefix), func(n *corev1.Node) { n.Annotations[k] += "-changed" }, true})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := fullNode(), fullNode()
			tc.mutate(cur)
			if got := assessedNodeChanged(old, cur); got != tc.want {
				t.Errorf("full nodes: changed = %v, want %v", got, tc.want)
			}
			// The predicate sees the cache's trimmed nodes: same answer.
			to, _ := trimNode(old)
			tn, _ := trimNode(cur)
			if got := assessedNodeChanged(to.(*corev1.Node), tn.(*corev1.Node)); got != tc.want {
				t.Errorf("trimmed nodes: changed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrimNode(t *testing.T) {
	got, err := trimNode(fullNode())
	if err != nil {
		t.Fatal(err)
	}
	mt := func(d time.Duration) metav1.Time { return metav1.NewTime(nodeT0.Add(d)) }
	want := &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-a-0", UID: "6f0d5b8e-1111-2222-3333-444455556666", ResourceVersion: "4711",
			CreationTimestamp: mt(-time.Hour),
			Labels:            map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-a-0"},
			Annotations: map[string]string{
				mcoPrefix + "currentConfig": "rendered-worker-1", mcoPrefix + "desiredConfig": "rendered-worker-2",
				mcoPrefix + "state": "Working", mcoPrefix + "reason": "",
				mcoPrefix + "desiredDrain": "drain-rendered-worker-2", mcoPrefix + "lastAppliedDrain": "uncordon-rendered-worker-1",
				mcoPrefix + "currentImage": "", mcoPrefix + "desiredImage": "",
			},
		},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastTransitionTime: mt(-time.Hour)},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastTransitionTime: mt(-time.Hour)},
		}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trimmed node (-want +got):\n%s", d)
	}

	// A node without annotations or conditions stays without.
	bare, _ := trimNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	if n := bare.(*corev1.Node); n.Annotations != nil || n.Status.Conditions != nil {
		t.Errorf("bare node grew %v %v", n.Annotations, n.Status.Conditions)
	}
	// Anything else passes through untouched.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if out, _ := trimNode(cm); out != cm {
		t.Errorf("a ConfigMap was changed")
	}
}

// TestTrimmedNodesAssessTheSame: for every snapshot of the CLI's test data,
// oc's examples among them (nodes as `oc get nodes -o yaml` prints them, with everything a kubelet
// reports: updating, draining, degraded, unavailable and paused nodes among
// them), the assessment of the trimmed nodes equals that of the full nodes.
func TestTrimmedNodesAssessTheSame(t *testing.T) {
	ours, err := filepath.Glob(filepath.Join("..", "cli", "testdata", "*"+snapshot.ClusterVersionSuffix))
	if err != nil {
		t.Fatal(err)
	}
	ocs, err := filepath.Glob(filepath.Join("..", "cli", "testdata", "oc", "*"+snapshot.ClusterVersionSuffix))
	cvFiles := append(ours, ocs...)
	if err != nil || len(ours) == 0 || len(ocs) == 0 {
		t.Fatalf("no snapshots (err %v)", err)
	}
	for _, f := range cvFiles {
		loaded, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) { assertSameAssessment(t, loaded.Snapshot) })
	}
}

func assertSameAssessment(t *testing.T, full assess.Snapshot) {
	t.Helper()
	trimmed := full
	trimmed.Nodes = make([]*corev1.Node, len(full.Nodes))
	for i := range full.Nodes {
		n, _ := trimNode(full.Nodes[i].DeepCopy())
		trimmed.Nodes[i] = n.(*corev1.Node)
	}
	want, errFull := assess.Assess(full, nil)
	got, errTrimmed := assess.Assess(trimmed, nil)
	if (errFull == nil) != (errTrimmed == nil) {
		t.Fatalf("errors differ: full %v, trimmed %v", errFull, errTrimmed)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("assessment of trimmed nodes differs (-full +trimmed):\n%s", d)
	}
	if len(want.Nodes) == 0 {
		t.Errorf("the snapshot has no node in a pool: nothing compared")
	}
}
