package mcostate

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var orderT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// zoned is a node created ageMin minutes before orderT0; zone "-" means no
// zone label at all.
func zoned(name, zone string, ageMin int) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{},
		CreationTimestamp: metav1.NewTime(orderT0.Add(-time.Duration(ageMin) * time.Minute))}}
	if zone != "-" {
		n.Labels[ZoneLabel] = zone
	}
	return n
}

func orderOf(ns []*corev1.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

// The MCO's order (its node controller's sortNodeList): zones first, in
// lexical order, oldest first within a zone; nodes without the label last,
// oldest first. A label with an empty value is a zone ("" sorts first).
func TestSortForUpdate(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*corev1.Node
		want  string
	}{
		{"zone first, then oldest", []*corev1.Node{
			zoned("c", "zone-b", 100), zoned("a", "zone-a", 1), zoned("b", "zone-a", 50), zoned("d", "-", 500),
		}, "b,a,c,d"},
		{"without a zone last, oldest first", []*corev1.Node{
			zoned("young", "-", 1), zoned("old", "-", 500), zoned("z", "zone-c", 1),
		}, "z,old,young"},
		{"an empty zone is a zone", []*corev1.Node{
			zoned("none", "-", 500), zoned("b", "zone-a", 1), zoned("empty", "", 1),
		}, "empty,b,none"},
		{"same zone and age: by name", []*corev1.Node{
			zoned("n2", "z", 5), zoned("n10", "z", 5), zoned("n1", "z", 5),
		}, "n1,n10,n2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			SortForUpdate(c.nodes)
			if got := orderOf(c.nodes); got != c.want {
				t.Fatalf("order %s, want %s", got, c.want)
			}
		})
	}
}

// Whatever the input order, the result is the same, and every adjacent pair
// is in the MCO's order.
func TestSortForUpdateProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zones := []string{"-", "", "zone-a", "zone-b", "zone-c"}
	for round := 0; round < 200; round++ {
		var ns []*corev1.Node
		for i := range 1 + r.IntN(30) {
			ns = append(ns, zoned("n"+string(rune('a'+i%26))+string(rune('0'+i/26)), zones[r.IntN(len(zones))], r.IntN(5)))
		}
		SortForUpdate(ns)
		want := orderOf(ns)
		for i := 1; i < len(ns); i++ {
			a, b := ns[i-1], ns[i]
			_, az := a.Labels[ZoneLabel]
			_, bz := b.Labels[ZoneLabel]
			switch {
			case az != bz:
				if !az {
					t.Fatalf("%s without a zone before %s with one: %s", a.Name, b.Name, want)
				}
			case a.Labels[ZoneLabel] != b.Labels[ZoneLabel]:
				if a.Labels[ZoneLabel] > b.Labels[ZoneLabel] {
					t.Fatalf("zone %q before %q: %s", a.Labels[ZoneLabel], b.Labels[ZoneLabel], want)
				}
			case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
				if b.CreationTimestamp.Before(&a.CreationTimestamp) {
					t.Fatalf("%s younger than %s but first: %s", a.Name, b.Name, want)
				}
			case a.Name > b.Name:
				t.Fatalf("%s before %s at the same zone and age: %s", a.Name, b.Name, want)
			}
		}
		r.Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
		SortForUpdate(ns)
		if got := orderOf(ns); got != want {
			t.Fatalf("order depends on the input's: %s then %s", want, got)
		}
	}
}
