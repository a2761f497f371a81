package platform

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
)

func TestIndexFromName(t *testing.T) {
	cases := map[string]int{
		"c1-abcde-master-0": 0, "c1-master-2": 2, "prefix-fghij-14": 14,
		"c1-master": -1, "master0": -1, "c1-master-": -1, "c1-master-+1": -1, "c1-master-1a": -1, "c1-master-12345678": -1,
	}
	for name, want := range cases {
		got, ok := IndexFromName(name)
		if want < 0 && ok || want >= 0 && (!ok || got != want) {
			t.Errorf("%s: got %d,%v want %d", name, got, ok, want)
		}
	}
}

func TestIndexes(t *testing.T) {
	cases := []struct {
		replicas int
		used     []int
		want     []int
	}{
		{3, nil, []int{0, 1, 2}},
		{3, []int{0, 1, 2}, []int{0, 1, 2}},
		{3, []int{3, 4, 5}, []int{3, 4, 5}},
		{3, []int{4, 0}, []int{0, 1, 4}},
		{3, []int{2, 2, 3, 4}, []int{2, 3, 4}},
		{3, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}},
		{5, []int{0, 1, 2}, []int{0, 1, 2, 3, 4}},
	}
	for _, c := range cases {
		if got := Indexes(c.replicas, c.used); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Indexes(%d, %v) = %v, want %v", c.replicas, c.used, got, c.want)
		}
	}
}

func zones(names ...string) []FailureDomain {
	var fds []machinev1.GCPFailureDomain
	for _, n := range names {
		fds = append(fds, machinev1.GCPFailureDomain{Zone: n})
	}
	out, err := FromSpec(&machinev1.FailureDomains{Platform: configv1.GCPPlatformType, GCP: &fds}, nil)
	if err != nil {
		panic(err)
	}
	return out
}

func zone(z string) FailureDomain {
	if z == "" {
		return FailureDomain{}
	}
	return FailureDomain{Platform: configv1.GCPPlatformType, GCP: &machinev1.GCPFailureDomain{Zone: z}}
}

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// m is a machine at index i in zone z; a leading "-" on the zone marks it deleting.
func m(i int, z string, age int) PlacedMachine {
	del := len(z) > 0 && z[0] == '-'
	if del {
		z = z[1:]
	}
	return PlacedMachine{Name: fmt.Sprintf("m%d-%d", i, age), Index: i, Observed: zone(z), Deleting: del, Created: t0.Add(time.Duration(age) * time.Minute)}
}

func TestMapFailureDomains(t *testing.T) {
	cases := []struct {
		name     string
		replicas int
		spec     []FailureDomain
		machines []PlacedMachine
		want     map[int]string
	}{
		{"balanced machines stay", 3, zones("c", "a", "b"),
			[]PlacedMachine{m(0, "b", 0), m(1, "c", 0), m(2, "a", 0)},
			map[int]string{0: "b", 1: "c", 2: "a"}},
		{"non-standard indexes 3,4,5 keep their zones", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(3, "c", 0), m(4, "a", 0), m(5, "b", 0)},
			map[int]string{3: "c", 4: "a", 5: "b"}},
		{"indexes 0,1,3 are kept, not renumbered", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "b", 0), m(3, "c", 0)},
			map[int]string{0: "a", 1: "b", 3: "c"}},
		{"a missing index gets the unused zone", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "b", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
		{"all in one zone rebalances: lowest index stays", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "a", 0), m(2, "a", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
		{"all in an undeclared zone: spread alphabetically", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "x", 0), m(1, "x", 0), m(2, "x", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
		{"a zone dropped from the spec moves only its machine", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "d", 0), m(2, "c", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
		{"adding a zone moves nothing when balanced", 3, zones("a", "b", "c", "d"),
			[]PlacedMachine{m(0, "a", 0), m(1, "b", 0), m(2, "c", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
		{"two zones for three machines: two may share", 3, zones("a", "b"),
			[]PlacedMachine{m(0, "a", 0), m(1, "a", 0), m(2, "b", 0)},
			map[int]string{0: "a", 1: "a", 2: "b"}},
		{"two zones, all in one: the third moves", 3, zones("a", "b"),
			[]PlacedMachine{m(0, "a", 0), m(1, "a", 0), m(2, "a", 0)},
			map[int]string{0: "a", 1: "a", 2: "b"}},
		{"five replicas over three zones", 5, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "a", 0), m(2, "a", 0), m(3, "b", 0), m(4, "b", 0)},
			map[int]string{0: "a", 1: "a", 2: "c", 3: "b", 4: "b"}},
		{"the newest live machine of an index decides", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(0, "c", 5), m(1, "b", 0), m(2, "a", 0)},
			map[int]string{0: "c", 1: "b", 2: "a"}},
		{"a deleting machine claims nothing: its replacement balances", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "-a", 0), m(2, "c", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
		{"a deleting machine's zone wins a tie", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "a", 0), m(1, "-c", 0), m(2, "b", 0)},
			map[int]string{0: "a", 1: "c", 2: "b"}},
		{"deleting old next to its replacement: the replacement's zone", 3, zones("a", "b", "c"),
			[]PlacedMachine{m(0, "-b", 0), m(0, "a", 5), m(1, "b", 0), m(2, "c", 0)},
			map[int]string{0: "a", 1: "b", 2: "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var used []int
			for _, pm := range c.machines {
				used = append(used, pm.Index)
			}
			idx := Indexes(c.replicas, used)
			for shuffle := 0; shuffle < 5; shuffle++ {
				ms := append([]PlacedMachine(nil), c.machines...)
				rand.New(rand.NewSource(int64(shuffle))).Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
				got := map[int]string{}
				for i, fd := range MapFailureDomains(idx, c.spec, ms) {
					got[i] = fd.GCP.Zone
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Fatalf("order %d: got %v want %v", shuffle, got, c.want)
				}
			}
		})
	}
	if got := MapFailureDomains([]int{0, 1, 2}, nil, []PlacedMachine{m(0, "a", 0)}); got != nil {
		t.Fatalf("no declared failure domains: got %v, want nil", got)
	}
}

// TestMapFailureDomainsBalances checks, over random placements, that no
// failure domain holds more than its share and that a machine inside its
// share never moves.
func TestMapFailureDomainsBalances(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	for seed := int64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewSource(seed))
		spec := zones(all[:1+rng.Intn(4)]...)
		replicas := []int{3, 5}[rng.Intn(2)]
		var ms []PlacedMachine
		for i := 0; i < replicas; i++ {
			if rng.Intn(6) == 0 {
				continue
			}
			ms = append(ms, m(i+rng.Intn(2)*3, all[rng.Intn(len(all))], rng.Intn(3)))
		}
		var used []int
		for _, pm := range ms {
			used = append(used, pm.Index)
		}
		idx := Indexes(replicas, used)
		got := MapFailureDomains(idx, spec, ms)
		limit := (len(idx) + len(spec) - 1) / len(spec)
		count := map[string]int{}
		for _, i := range idx {
			fd, ok := got[i]
			if !ok {
				t.Fatalf("seed %d: index %d unmapped", seed, i)
			}
			count[fd.String()]++
		}
		for fd, n := range count {
			if n > limit {
				t.Fatalf("seed %d: %s holds %d indexes, limit %d: %v", seed, fd, n, limit, got)
			}
		}
		// Re-mapping with every machine already where the mapping put it is a
		// fixed point: nothing moves once the rollout is done.
		var settled []PlacedMachine
		for _, i := range idx {
			settled = append(settled, PlacedMachine{Name: fmt.Sprint(i), Index: i, Observed: got[i], Created: t0})
		}
		again := MapFailureDomains(idx, spec, settled)
		for _, i := range idx {
			if again[i].String() != got[i].String() {
				t.Fatalf("seed %d: not a fixed point at index %d: %s then %s", seed, i, got[i], again[i])
			}
		}
	}
}
