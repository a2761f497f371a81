package events

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func obj(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func TestFold(t *testing.T) {
	a, b := obj("a", "1"), obj("b", "1")
	got := Fold([]Event{
		Normal(a, "Checked", "Plan", "first"),
		Normal(a, "Checked", "Plan", "second"), // would fold: numbered
		Normal(a, "Checked", "Plan", "first"),  // a repeat: dropped
		Normal(a, "Checked", "Plan", "third"),
		Warning(a, "Checked", "Plan", "first"),                                   // another type: its own series
		Normal(b, "Checked", "Plan", "second"),                                   // another object
		Normal(obj("a", "2"), "Checked", "Plan", "second"),                       // another resourceVersion
		{Regarding: a, Related: b, Reason: "Checked", Action: "Plan", Note: "x"}, // another related object
		Normal(a, "Other", "Plan", "second"),
	})
	var lines []string
	for _, e := range got {
		lines = append(lines, fmt.Sprintf("%s/%s %s %s %s %s", e.Regarding.(*corev1.ConfigMap).Name,
			e.Regarding.(*corev1.ConfigMap).ResourceVersion, e.Type(), e.Reason, e.Action, e.Note))
	}
	want := []string{
		"a/1 Normal Checked Plan first",
		"a/1 Normal Checked Plan-2 second",
		"a/1 Normal Checked Plan-3 third",
		"a/1 Warning Checked Plan first",
		"b/1 Normal Checked Plan second",
		"a/2 Normal Checked Plan second",
		"a/1 Normal Checked Plan x",
		"a/1 Normal Other Plan second",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// fakeLibrary stands in for client-go's recorder: Record's own logic (the
// rule, the nil related object, the note limit) is what is tested here; the
// library itself is used against a real apiserver by every controller suite.
type fakeLibrary struct {
	mu  sync.Mutex
	got []string
}

func (f *fakeLibrary) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fmt.Sprintf("%s %v %s %s %s %d", regarding.(*corev1.ConfigMap).Name, related == nil, eventtype, reason, action, len(fmt.Sprintf(note, args...))))
}

func TestRecord(t *testing.T) {
	f := &fakeLibrary{}
	var nilMap *corev1.ConfigMap
	NewRecorder(f).Record(
		Event{Regarding: obj("a", "1"), Related: nilMap, Reason: "R", Action: "A", Note: "typed nil related"},
		Warning(obj("a", "1"), "Long", "A", strings.Repeat("x", 5000)),
	)
	want := []string{"a true Normal R A 17", "a true Warning Long A 1024"}
	if strings.Join(f.got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q, want %q", f.got, want)
	}
	// Without a library, or without a Recorder, nothing happens.
	NewRecorder(nil).Record(Normal(obj("a", "1"), "R", "A", "n"))
	var r *Recorder
	r.Record(Normal(obj("a", "1"), "R", "A", "n"))
}
