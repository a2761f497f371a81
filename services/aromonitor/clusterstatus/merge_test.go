package clusterstatus

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMerge(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	foreign := operatorv1.OperatorCondition{Type: "MachineValid", Status: "True", Reason: "CheckDone", LastTransitionTime: then}
	master := operatorv1.OperatorCondition{Type: "InternetReachableFromMaster", Status: "True", Reason: "CheckDone", Message: "ok", LastTransitionTime: then}
	other := operatorv1.OperatorCondition{Type: "CPMSControllerAvailable", Status: "True", LastTransitionTime: then}
	existing := []operatorv1.OperatorCondition{foreign, master, other}

	t.Run("same status, reason and message: unchanged, whatever the time", func(t *testing.T) {
		c := master
		c.LastTransitionTime = metav1.NewTime(now)
		got, changed := Merge(existing, []operatorv1.OperatorCondition{c}, now)
		if changed || !reflect.DeepEqual(got, existing) {
			t.Fatalf("changed %v: %+v", changed, got)
		}
	})
	t.Run("a new message keeps the transition time and the place", func(t *testing.T) {
		c := master
		c.Message = "still ok"
		got, changed := Merge(existing, []operatorv1.OperatorCondition{c}, now)
		want := []operatorv1.OperatorCondition{foreign, c, other}
		if !changed || !reflect.DeepEqual(got, want) {
			t.Fatalf("changed %v: %+v", changed, got)
		}
	})
	t.Run("a new status moves the transition time", func(t *testing.T) {
		c := master
		c.Status, c.Reason = "False", "CheckFailed"
		got, changed := Merge(existing, []operatorv1.OperatorCondition{c}, now)
		if !changed || got[1].LastTransitionTime.Time != now || got[1].Status != "False" {
			t.Fatalf("changed %v: %+v", changed, got)
		}
	})
	t.Run("a new type is appended after the others", func(t *testing.T) {
		c := operatorv1.OperatorCondition{Type: "ServicePrincipalValid", Status: "True", Reason: "Validation Successful"}
		got, changed := Merge(existing, []operatorv1.OperatorCondition{c}, now)
		if !changed || len(got) != 4 || !reflect.DeepEqual(got[:3], existing) || got[3].Type != c.Type || got[3].LastTransitionTime.Time != now {
			t.Fatalf("changed %v: %+v", changed, got)
		}
	})
	t.Run("the input is not modified", func(t *testing.T) {
		in := append([]operatorv1.OperatorCondition(nil), existing...)
		c := master
		c.Status = "False"
		Merge(in, []operatorv1.OperatorCondition{c}, now)
		if !reflect.DeepEqual(in, existing) {
			t.Fatalf("input changed: %+v", in)
		}
	})
}

// Whatever a check writes, in whatever order, every condition it does not
// own stays as it was and where it was.
func TestMergeNeverTouchesOthers(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	owned := []string{"InternetReachableFromMaster", "InternetReachableFromWorker", "ServicePrincipalValid"}
	others := []string{"MachineValid", "DefaultIngressCertificate", "DefaultClusterDNS", "CPMSControllerAvailable", "Foo"}
	statuses := []operatorv1.ConditionStatus{"True", "False", "Unknown"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var existing []operatorv1.OperatorCondition
		for _, t := range rng.Perm(len(owned) + len(others)) {
			if rng.IntN(3) == 0 {
				continue
			}
			typ := append(append([]string(nil), owned...), others...)[t]
			existing = append(existing, operatorv1.OperatorCondition{Type: typ, Status: statuses[rng.IntN(3)], Message: typ,
				LastTransitionTime: metav1.NewTime(now.Add(-time.Duration(rng.IntN(1000)) * time.Hour))})
		}
		var mine []operatorv1.OperatorCondition
		for _, t := range owned {
			if rng.IntN(2) == 0 {
				mine = append(mine, operatorv1.OperatorCondition{Type: t, Status: statuses[rng.IntN(3)]})
			}
		}
		got, _ := Merge(existing, mine, now)
		var keptBefore, keptAfter []operatorv1.OperatorCondition
		for _, c := range existing {
			if !slices.Contains(owned, c.Type) {
				keptBefore = append(keptBefore, c)
			}
		}
		for _, c := range got {
			if !slices.Contains(owned, c.Type) {
				keptAfter = append(keptAfter, c)
			}
		}
		if !reflect.DeepEqual(keptBefore, keptAfter) {
			t.Fatalf("others changed:\n before %+v\n after  %+v", keptBefore, keptAfter)
		}
		for _, m := range mine {
			if c := ConditionByType(got, m.Type); c == nil || c.Status != m.Status {
				t.Fatalf("%s not written: %+v", m.Type, got)
			}
		}
	}
}
