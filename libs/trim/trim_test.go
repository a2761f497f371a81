package trim

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fullNode() *corev1.Node {
	now := metav1.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "n1", UID: "u", ResourceVersion: "7", Generation: 2, CreationTimestamp: now, DeletionTimestamp: &now,
			Labels:          map[string]string{"role": "worker", "kubernetes.io/hostname": "n1", "other": "x"},
			Annotations:     map[string]string{"machineconfiguration.openshift.io/state": "Done", "other": "y"},
			Finalizers:      []string{"f"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///i-1", Unschedulable: true, PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{
			{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule},
			{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute},
		}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now},
			},
			Images: []corev1.ContainerImage{{Names: []string{"img"}}},
		},
	}
}

func TestMeta(t *testing.T) {
	n := fullNode()
	m := Meta(n.ObjectMeta)
	want := metav1.ObjectMeta{Name: "n1", UID: "u", ResourceVersion: "7", Generation: 2, CreationTimestamp: n.CreationTimestamp, DeletionTimestamp: n.DeletionTimestamp}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
}

func TestNode(t *testing.T) {
	n := fullNode()
	ready := n.Status.Conditions[0]
	ready.LastHeartbeatTime = metav1.Time{}
	for _, tc := range []struct {
		name string
		opts Node
		want func(*corev1.Node)
	}{
		{"identity only", Node{}, func(*corev1.Node) {}},
		{"labels, annotations by prefix, Ready, cordoning", Node{
			Labels: All, Annotations: Prefix("machineconfiguration.openshift.io/"),
			Conditions: []corev1.NodeConditionType{corev1.NodeReady}, Unschedulable: true,
		}, func(t *corev1.Node) {
			t.Labels = map[string]string{"role": "worker", "kubernetes.io/hostname": "n1", "other": "x"}
			t.Annotations = map[string]string{"machineconfiguration.openshift.io/state": "Done"}
			t.Status.Conditions = []corev1.NodeCondition{ready}
			t.Spec.Unschedulable = true
		}},
		{"some labels and the providerID", Node{Labels: Only("role", "absent"), ProviderID: true}, func(t *corev1.Node) {
			t.Labels = map[string]string{"role": "worker"}
			t.Spec.ProviderID = "aws:///i-1"
		}},
		{"some taints", Node{Taints: []string{"node.kubernetes.io/unschedulable", "node.kubernetes.io/memory-pressure"}}, func(t *corev1.Node) {
			t.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{"a node Keep refuses keeps its identity", Node{Keep: func(*corev1.Node) bool { return false }, Labels: All, ProviderID: true}, func(*corev1.Node) {}},
		{"interned", Node{Labels: All, Conditions: []corev1.NodeConditionType{corev1.NodeReady}, Intern: true}, func(t *corev1.Node) {
			t.Labels = map[string]string{"role": "worker", "kubernetes.io/hostname": "n1", "other": "x"}
			t.Status.Conditions = []corev1.NodeCondition{ready}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: Meta(n.ObjectMeta)}
			tc.want(want)
			got, err := tc.opts.Transform()(fullNode())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// Interned strings of two nodes share their memory; a label equal to the
// node's name shares the name's.
func TestNodeInterned(t *testing.T) {
	o := Node{Labels: All, Intern: true}
	a, b := o.Trim(fullNode()), o.Trim(fullNode())
	if unsafe.StringData(a.Labels["role"]) != unsafe.StringData(b.Labels["role"]) {
		t.Fatal("label values of two nodes not shared")
	}
	if unsafe.StringData(a.Labels["kubernetes.io/hostname"]) != unsafe.StringData(a.Name) {
		t.Fatal("hostname label does not share the node's name")
	}
}

func TestFuncPassesOtherTypes(t *testing.T) {
	f := Func(func(n *corev1.Node) *corev1.Node { return &corev1.Node{} })
	pod := &corev1.Pod{}
	if got, _ := f(pod); got != pod {
		t.Fatal("another type was transformed")
	}
}

func TestInternMap(t *testing.T) {
	if InternMap(nil, "") != nil || InternMap(map[string]string{}, "") != nil {
		t.Fatal("empty map not nil")
	}
	if got := InternMap(map[string]string{"a": "b"}, ""); !reflect.DeepEqual(got, map[string]string{"a": "b"}) {
		t.Fatalf("got %v", got)
	}
}

// Sharing does not depend on the garbage collector, and the pool stays
// bounded.
func TestIntern(t *testing.T) {
	a := Intern(string([]byte("rendered-worker-abc")))
	runtime.GC()
	runtime.GC()
	b := Intern(string([]byte("rendered-worker-abc")))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatal("equal strings interned across a GC are two copies")
	}
	for i := range MaxInterned + 10 {
		Intern(fmt.Sprint("value-", i))
	}
	pool.mu.Lock()
	n := len(pool.strings)
	pool.mu.Unlock()
	if n > MaxInterned {
		t.Fatalf("pool holds %d strings, more than %d", n, MaxInterned)
	}
	if Intern("") != "" {
		t.Fatal("empty string")
	}
}
