package controller

import (
	"encoding/json"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	"github.com/upshift-io/upshift/libs/trim"
)

// fullInsight is a NodeProgressInsight as the informer decodes it: every
// string its own copy (from JSON, as the cache gets it), with the metadata
// the apiserver adds.
func fullInsight(t *testing.T, name string) *updatev1alpha1.NodeProgressInsight {
	t.Helper()
	t0 := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	in := &updatev1alpha1.NodeProgressInsight{
		TypeMeta: metav1.TypeMeta{APIVersion: updatev1alpha1.GroupVersion.String(), Kind: "NodeProgressInsight"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("uid-of-" + name), ResourceVersion: "42", Generation: 1, CreationTimestamp: t0,
			Labels:          map[string]string{updatev1alpha1.LabelPool: "worker", updatev1alpha1.LabelPhase: "Updating", updatev1alpha1.LabelDegraded: "false"},
			Annotations:     map[string]string{"someone/else": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: "node-uid"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}},
		},
		Status: drainingStatus(name, t0),
	}
	// Through JSON, as the informer decodes it: strings not shared.
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &updatev1alpha1.NodeProgressInsight{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// insightTransform is the cache transform of NodeProgressInsights, as
// ManagerOptions sets it.
var insightTransform = trim.Func(trimInsight)

func TestTrimInsight(t *testing.T) {
	full := fullInsight(t, "worker-0")
	got, err := insightTransform(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	// What the controller reads (published, previous, the plan's comparison:
	// name, labels, status) is as published; the rest is gone.
	want := &updatev1alpha1.NodeProgressInsight{
		TypeMeta: full.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: full.Name, UID: full.UID, ResourceVersion: full.ResourceVersion,
			Generation: full.Generation, CreationTimestamp: full.CreationTimestamp, Labels: full.Labels},
		Status: full.Status,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trimmed insight (-want +got):\n%s", d)
	}

	// Anything else passes through untouched.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if out, _ := insightTransform(cm); out != cm {
		t.Errorf("a ConfigMap was changed")
	}
	// An insight without status or labels stays without.
	bare, _ := insightTransform(&updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	if b := bare.(*updatev1alpha1.NodeProgressInsight); b.Labels != nil || b.Status.Conditions != nil {
		t.Errorf("bare insight grew %v %v", b.Labels, b.Status.Conditions)
	}
}

// TestTrimmedInsightsShareStrings: two insights decoded apart hold one copy
// of the strings they have in common, which is what the trimming saves on a
// large cluster; the node's name is held once per insight.
func TestTrimmedInsightsShareStrings(t *testing.T) {
	a, _ := insightTransform(fullInsight(t, "worker-0"))
	b, _ := insightTransform(fullInsight(t, "worker-1"))
	ia, ib := a.(*updatev1alpha1.NodeProgressInsight), b.(*updatev1alpha1.NodeProgressInsight)
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("pool", ia.Status.PoolResource.Name, ib.Status.PoolResource.Name)
	same("pool label", ia.Labels[updatev1alpha1.LabelPool], ib.Labels[updatev1alpha1.LabelPool])
	same("message", ia.Status.Message, ib.Status.Message)
	same("condition reason", ia.Status.Conditions[0].Reason, ib.Status.Conditions[0].Reason)
	same("condition message", ia.Status.Conditions[0].Message, ib.Status.Conditions[0].Message)
	same("version", ia.Status.Version, ib.Status.Version)
	same("status name and metadata name", ia.Status.Name, ia.Name)
	same("resource name and metadata name", ia.Status.Resource.Name, ia.Name)
	keysB := map[string]string{}
	for k := range ib.Labels {
		keysB[k] = k
	}
	for k := range ia.Labels {
		same("label key", k, keysB[k])
	}
}

func TestTrimmedNodesShareStrings(t *testing.T) {
	decode := func(name string) *corev1.Node {
		n := fullNode()
		n.Name = name
		n.Labels["kubernetes.io/hostname"] = name
		data, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		out := &corev1.Node{}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
		trimmed, _ := trimNode(out)
		return trimmed.(*corev1.Node)
	}
	a, b := decode("worker-a-0"), decode("worker-a-1")
	for k, v := range a.Labels {
		if k == "kubernetes.io/hostname" {
			if unsafe.StringData(v) != unsafe.StringData(a.Name) {
				t.Errorf("hostname label: a copy of the name")
			}
			continue
		}
		if unsafe.StringData(v) != unsafe.StringData(b.Labels[k]) && v != "" {
			t.Errorf("label %s=%s: two copies", k, v)
		}
	}
	for k, v := range a.Annotations {
		if v != "" && unsafe.StringData(v) != unsafe.StringData(b.Annotations[k]) {
			t.Errorf("annotation %s=%s: two copies", k, v)
		}
	}
	for i, c := range a.Status.Conditions {
		if unsafe.StringData(c.Reason) != unsafe.StringData(b.Status.Conditions[i].Reason) {
			t.Errorf("condition %s reason: two copies", c.Type)
		}
	}
}
