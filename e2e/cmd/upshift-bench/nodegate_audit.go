package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/upshift-io/upshift/libs/testenv"
)

// With --audit the node-gate bench splits each paired reaction by the
// apiserver's record of node-gate's release patch: from the Done seen by
// the bench to the request received (node-gate's own time: the Done's
// delivery to it, its queue, its pass, its write slot), from received to
// answered (the apiserver's), and from answered to seen by the bench (the
// watch's). Both the bench and node-gate see the Done through a watch of
// the same apiserver, so the first part is node-gate's.

// nodeRequest is one request on a Node, as the audit log has it.
type nodeRequest struct{ received, answered time.Time }

// releaseTimes is one paired reaction, split.
type releaseTimes struct {
	node                 string
	at, added            time.Duration
	send, serve, deliver time.Duration
	// doneSeen and patched bound the hop: the Done the bench saw, and the
	// apiserver's receipt of the release patch.
	doneSeen, patched time.Time
}

// splitReleases finds, per pair, the last of user's Node patches on the
// released node received before the bench saw the release: the release.
// (Received, not answered: the watch may deliver the change before the API
// server logs its answer, and answered -> seen is then negative.)
func splitReleases(pairs []releasePair, requests map[string][]nodeRequest) (out []releaseTimes, missing int) {
	for _, p := range pairs {
		var found *nodeRequest
		for i, r := range requests[p.release.node] {
			if r.received.After(p.release.t) {
				break
			}
			found = &requests[p.release.node][i]
		}
		if found == nil {
			missing++
			continue
		}
		out = append(out, releaseTimes{
			node: p.release.node, at: p.done.t.Sub(pairs[0].done.t), added: added(p.release.t, p.ref),
			send: found.received.Sub(p.done.t), serve: found.answered.Sub(found.received), deliver: p.release.t.Sub(found.answered),
			doneSeen: p.done.t, patched: found.received,
		})
	}
	return out, missing
}

// gateWrite is one of node-gate's writes, as the audit log has it.
type gateWrite struct {
	received, answered   time.Time
	verb, resource, name string // resource is resource[/subresource]
}

// gateWrites reads user's writes from the audit log, in the order received.
func gateWrites(env *testenv.Env, user string) ([]gateWrite, error) {
	events, err := env.AuditEventsWhere(func(ev testenv.AuditEvent) bool {
		switch ev.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
			return ev.User.Username == user && ev.ObjectRef != nil
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	var out []gateWrite
	for _, ev := range events {
		recv, err1 := time.Parse(time.RFC3339Nano, ev.RequestReceivedTimestamp)
		done, err2 := time.Parse(time.RFC3339Nano, ev.StageTimestamp)
		if err1 != nil || err2 != nil {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out = append(out, gateWrite{received: recv, answered: done, verb: ev.Verb, resource: res, name: ev.ObjectRef.Name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].received.Before(out[j].received) })
	return out, nil
}

// hopCounts are node-gate's writes in one hop, from the Done the bench saw
// to the release patch received: on the released node (the release
// included: one is the design), and run status writes answered in the
// window (the most the release could have waited for; the hops overlap,
// so a status write of the background or of another hop counts too).
type hopCounts struct{ node, status int }

// hopWrites counts each release's hop from the audit log.
func hopWrites(split []releaseTimes, writes []gateWrite) []hopCounts {
	var out []hopCounts
	for _, r := range split {
		var c hopCounts
		i := sort.Search(len(writes), func(i int) bool { return !writes[i].received.Before(r.doneSeen) })
		for ; i < len(writes) && !writes[i].received.After(r.patched); i++ {
			w := writes[i]
			switch {
			case w.resource == "nodes" && w.name == r.node:
				c.node++
			case w.resource == "mutexrunconfigs/status" && w.answered.Before(r.patched):
				c.status++
			}
		}
		out = append(out, c)
	}
	return out
}

// intPercentiles are the p50, p99 and max of ns.
func intPercentiles(ns []int) [3]int {
	if len(ns) == 0 {
		return [3]int{}
	}
	s := slices.Sorted(slices.Values(ns))
	return [3]int{s[len(s)/2], s[min(len(s)-1, len(s)*99/100)], s[len(s)-1]}
}

// nodeRequests are the Node patches among writes, per Node, in the order
// received.
func nodeRequests(writes []gateWrite) map[string][]nodeRequest {
	out := map[string][]nodeRequest{}
	for _, w := range writes {
		if w.verb == "patch" && w.resource == "nodes" {
			out[w.name] = append(out[w.name], nodeRequest{received: w.received, answered: w.answered})
		}
	}
	return out
}

// printReleaseRequests prints the split of the last gated update's paired
// reactions: all of them, then each over the target.
func printReleaseRequests(env *testenv.Env, g *gateObserver, user string) error {
	// One read of the log, which is large: every write of node-gate's.
	writes, err := gateWrites(env, user)
	if err != nil {
		return err
	}
	requests := nodeRequests(writes)
	g.mu.Lock()
	pairs := g.releasePairs()
	g.mu.Unlock()
	split, missing := splitReleases(pairs, requests)
	var send, serve, deliver []time.Duration
	var over []string
	for _, r := range split {
		send, serve, deliver = append(send, r.send), append(serve, r.serve), append(deliver, r.deliver)
		if r.added > reactionTarget {
			over = append(over, fmt.Sprintf("%s (%s, +%s): %s / %s / %s", r.at.Round(100*time.Millisecond), r.node, r.added.Round(time.Millisecond),
				r.send.Round(time.Millisecond), r.serve.Round(time.Millisecond), r.deliver.Round(time.Millisecond)))
		}
	}
	ps, pv, pd := percentiles(send), percentiles(serve), percentiles(deliver)
	fmt.Printf("  the releases by the audit log (%d paired, %d without a patch found): Done seen -> node-gate's patch received p50 %s p99 %s max %s; received -> answered p50 %s p99 %s max %s; answered -> seen p50 %s p99 %s max %s\n",
		len(split), missing, ps[0], ps[1], ps[2], pv[0], pv[1], pv[2], pd[0], pd[1], pd[2])
	if len(over) > 0 {
		fmt.Printf("  those over %s, at (node, added): Done seen -> received / -> answered / -> seen: %s\n", reactionTarget, strings.Join(over, "; "))
	}
	var node, status []int
	one, none := 0, 0
	for _, c := range hopWrites(split, writes) {
		node, status = append(node, c.node), append(status, c.status)
		if c.node == 1 {
			one++
		}
		if c.status == 0 {
			none++
		}
	}
	pn, pst := intPercentiles(node), intPercentiles(status)
	fmt.Printf("  node-gate's writes per hop (audit log, from the Done seen to the release patch received): on the released node p50 %d p99 %d max %d (the release alone in %d of %d); run status writes answered meanwhile p50 %d p99 %d max %d (none in %d of %d; an upper bound: hops overlap and the status is written in the background)\n",
		pn[0], pn[1], pn[2], one, len(node), pst[0], pst[1], pst[2], none, len(status))
	return nil
}
