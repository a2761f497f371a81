package mcostate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache keeps only what readers of the MCO node state need of a Node
// (the Ready condition without its heartbeat).
func TestTrimNode(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "w1", ResourceVersion: "7", Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{
				State: "Working", DesiredConfig: "rendered-worker-2",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true", "kwok.x-k8s.io/node": "fake",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-1", PodCIDR: "10.0.0.0/24", Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.Now()},
			},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Images:   []corev1.ContainerImage{{Names: []string{"quay.io/x@sha256:1"}, SizeBytes: 1 << 30}},
		},
	}
	out, err := NodeFields.Transform()(n)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "w1", ResourceVersion: "7", Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{State: "Working", DesiredConfig: "rendered-worker-2"},
		},
		Spec:   corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}}},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("trimmed node:\n%+v\nwant\n%+v", got, want)
	}
	if c := got.Status.Conditions; len(c) != 1 || c[0].Type != corev1.NodeReady || c[0].Status != corev1.ConditionTrue {
		t.Fatal("Ready lost")
	}
	if other, _ := NodeFields.Transform()(&corev1.Pod{}); other == nil {
		t.Fatal("non-Node objects pass through")
	}
}
