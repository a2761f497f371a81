package main

import (
	"fmt"
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
			node: p.release.node, at: p.done.t.Sub(pairs[0].done.t), added: p.release.t.Sub(p.ref),
			send: found.received.Sub(p.done.t), serve: found.answered.Sub(found.received), deliver: p.release.t.Sub(found.answered),
		})
	}
	return out, missing
}

// nodeRequests reads user's Node patches from the audit log, per Node, in
// the order received.
func nodeRequests(env *testenv.Env, user string) (map[string][]nodeRequest, error) {
	events, err := env.AuditEventsWhere(func(ev testenv.AuditEvent) bool {
		return ev.Verb == "patch" && ev.User.Username == user && ev.ObjectRef != nil &&
			ev.ObjectRef.Resource == "nodes" && ev.ObjectRef.Subresource == ""
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]nodeRequest{}
	for _, ev := range events {
		recv, err1 := time.Parse(time.RFC3339Nano, ev.RequestReceivedTimestamp)
		done, err2 := time.Parse(time.RFC3339Nano, ev.StageTimestamp)
		if err1 != nil || err2 != nil {
			continue
		}
		out[ev.ObjectRef.Name] = append(out[ev.ObjectRef.Name], nodeRequest{received: recv, answered: done})
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].received.Before(rs[j].received) })
	}
	return out, nil
}

// printReleaseRequests prints the split of the last gated update's paired
// reactions: all of them, then each over the target.
func printReleaseRequests(env *testenv.Env, g *gateObserver, user string) error {
	requests, err := nodeRequests(env, user)
	if err != nil {
		return err
	}
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
	return nil
}
