package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/upshift-io/upshift/libs/testenv"
)

// With --audit the apiserver logs every request (metadata only) and the
// bench counts, per update, the writes of each client: the apiserver's
// own counters (apitraffic.go) say which request classes grew, the audit
// log says who sent them. Logging every request loads the apiserver
// itself, so the times of such a run do not compare with a run without it.

// writeVerbs are the audit verbs that change something.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// clientWrites counts writes by "client: verb resource".
type clientWrites map[string]int

// countWrites counts the writes in env's audit log that ended between
// from and to.
func countWrites(env *testenv.Env, from, to time.Time) (clientWrites, error) {
	events, err := env.AuditEventsWhere(func(ev testenv.AuditEvent) bool {
		if !writeVerbs[ev.Verb] || ev.ObjectRef == nil {
			return false
		}
		at, err := time.Parse(time.RFC3339Nano, ev.StageTimestamp)
		return err == nil && !at.Before(from) && !at.After(to)
	})
	if err != nil {
		return nil, err
	}
	counts := clientWrites{}
	for _, ev := range events {
		resource := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
		}
		counts[clientName(ev.User.Username)+": "+ev.Verb+" "+resource]++
	}
	return counts, nil
}

// clientName shortens a ServiceAccount's user name to namespace/name.
func clientName(user string) string {
	if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		return strings.Replace(sa, ":", "/", 1)
	}
	return user
}

// printWrites prints the n client and request pairs that added the most
// writes from the update without Upshift to the one with it.
func printWrites(without, with clientWrites, n int) {
	keys := map[string]bool{}
	for k := range without {
		keys[k] = true
	}
	for k := range with {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		di, dj := with[sorted[i]]-without[sorted[i]], with[sorted[j]]-without[sorted[j]]
		if di != dj {
			return di > dj
		}
		return sorted[i] < sorted[j]
	})
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	total := func(c clientWrites) (t int) {
		for _, v := range c {
			t += v
		}
		return t
	}
	fmt.Printf("  writes by client (the audit log), most added first:\n")
	fmt.Printf("  %-70s %8s %8s\n", "", "without", "with")
	for _, k := range sorted {
		fmt.Printf("  %-70s %8d %8d\n", k, without[k], with[k])
	}
	fmt.Printf("  %-70s %8d %8d\n", "all writes", total(without), total(with))
}
