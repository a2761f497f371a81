package platform

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// IndexFromName reads a control-plane machine's index from its name: the
// digits after the last "-" ("cluster-master-2", "prefix-abcde-4"). Other
// tooling parses names the same way, which is why new machines keep it.
func IndexFromName(name string) (int, bool) {
	i := strings.LastIndexByte(name, '-')
	suffix := name[i+1:]
	if i < 0 || suffix == "" || len(suffix) > 6 {
		return 0, false
	}
	for _, r := range suffix {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(suffix)
	return n, err == nil
}

// Indexes is the set of indexes the set manages: every index a machine uses,
// plus the lowest unused ones until there are replicas of them. Indexes need
// not start at 0 nor be contiguous (machines 3, 4, 5 stay 3, 4, 5; machines 4
// and 0 with three replicas make 0, 1, 4).
func Indexes(replicas int, used []int) []int {
	seen := map[int]bool{}
	out := []int{}
	for _, i := range used {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	for next := 0; len(out) < replicas; next++ {
		if !seen[next] {
			seen[next] = true
			out = append(out, next)
		}
	}
	sort.Ints(out)
	return out
}

// PlacedMachine is what the mapping needs to know of a machine.
type PlacedMachine struct {
	Name     string
	Index    int
	Observed FailureDomain
	Deleting bool
	Created  time.Time
}

// MapFailureDomains assigns a failure domain from spec (as FromSpec returns
// it) to every index. Its aims, in order:
//
//  1. an index stays where its machine is, so that adopting or editing a set
//     moves nothing needlessly;
//  2. no failure domain holds more than ceil(indexes/failure domains)
//     indexes, so that piling machines into one zone is undone (the machines
//     over the limit are replaced into the emptiest zones);
//  3. the result is the same whatever order machines are listed in.
//
// An index's current failure domain is that of its newest machine that is not
// being deleted. Indexes whose machines are all being deleted claim nothing:
// their replacement goes where it balances the set best, preferring the
// failure domain it leaves only on a tie. A machine outside every declared
// failure domain claims nothing either. Without declared failure domains the
// result is nil and the template is used as is.
func MapFailureDomains(indexes []int, spec []FailureDomain, machines []PlacedMachine) map[int]FailureDomain {
	if len(spec) == 0 {
		return nil
	}
	ms := append([]PlacedMachine(nil), machines...)
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].Index != ms[j].Index {
			return ms[i].Index < ms[j].Index
		}
		if !ms[i].Created.Equal(ms[j].Created) {
			return ms[i].Created.Before(ms[j].Created)
		}
		return ms[i].Name < ms[j].Name
	})
	match := func(observed FailureDomain) int {
		for i, f := range spec {
			if f.Matches(observed) {
				return i
			}
		}
		return -1
	}
	current := map[int]int{}   // index -> spec position, from live machines (newest wins)
	preferred := map[int]int{} // index -> spec position, from deleting machines
	for _, m := range ms {
		pos := match(m.Observed)
		if pos < 0 {
			if !m.Deleting {
				delete(current, m.Index)
			}
			continue
		}
		if m.Deleting {
			preferred[m.Index] = pos
		} else {
			current[m.Index] = pos
		}
	}
	idx := append([]int(nil), indexes...)
	sort.Ints(idx)
	limit := (len(idx) + len(spec) - 1) / len(spec)
	count := make([]int, len(spec))
	out := map[int]FailureDomain{}
	for _, i := range idx {
		if pos, ok := current[i]; ok && count[pos] < limit {
			out[i] = spec[pos]
			count[pos]++
		}
	}
	for _, i := range idx {
		if _, done := out[i]; done {
			continue
		}
		best := -1
		for pos := range spec {
			if best < 0 || count[pos] < count[best] {
				best = pos
			}
		}
		for _, own := range []map[int]int{current, preferred} {
			if pos, ok := own[i]; ok && count[pos] == count[best] {
				best = pos
				break
			}
		}
		out[i] = spec[best]
		count[best]++
	}
	return out
}
