package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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

// countWrites reads the audit log at path and counts the writes that ended
// between from and to.
func countWrites(path string, from, to time.Time) (clientWrites, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := clientWrites{}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return counts, nil // a last line without its newline is still being written
		}
		if err != nil {
			return nil, err
		}
		var ev testenv.AuditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if !writeVerbs[ev.Verb] || ev.ObjectRef == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ev.StageTimestamp)
		if err != nil || at.Before(from) || at.After(to) {
			continue
		}
		resource := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
		}
		counts[clientName(ev.User.Username)+": "+ev.Verb+" "+resource]++
	}
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
