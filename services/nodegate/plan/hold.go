package plan

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
)

// This file decides how long gated nodes wait for a cluster update, and what
// happens to nodes whose pre-update hooks ran for a target their pool has
// since replaced.

// controlPlaneUpdating: a cluster update was requested and the control
// plane has not finished it.
func controlPlaneUpdating(cv *configv1.ClusterVersion) (bool, string) {
	if cv == nil {
		return false, ""
	}
	if len(cv.Status.History) > 0 && cv.Status.History[0].State != configv1.CompletedUpdate {
		return true, fmt.Sprintf("the control plane is updating to %s", cv.Status.History[0].Version)
	}
	d := cv.Spec.DesiredUpdate
	if d == nil {
		return false, ""
	}
	cur := configv1.Release{}
	if len(cv.Status.History) > 0 {
		cur = configv1.Release{Version: cv.Status.History[0].Version, Image: cv.Status.History[0].Image}
	}
	if (d.Version != "" && d.Version != cur.Version) || (d.Version == "" && d.Image != "" && d.Image != cur.Image) {
		want := d.Version
		if want == "" {
			want = d.Image
		}
		return true, fmt.Sprintf("an update to %s is requested and the control plane has not finished it", want)
	}
	return false, ""
}

// requestedVersion is the version of the release the cluster updates to,
// once it is known: a request by image alone names its version only when
// the cluster-version operator has loaded that image (status.desired).
func requestedVersion(cv *configv1.ClusterVersion) (string, bool) {
	if cv == nil {
		return "", false
	}
	if d := cv.Spec.DesiredUpdate; d != nil {
		if d.Version != "" {
			return d.Version, true
		}
		if d.Image != "" && d.Image != cv.Status.Desired.Image {
			return "", false
		}
	}
	return cv.Status.Desired.Version, cv.Status.Desired.Version != ""
}

// targetVersion is the version the cluster is updating to, for hooks.
func targetVersion(cv *configv1.ClusterVersion) string {
	if cv == nil {
		return ""
	}
	if cv.Spec.DesiredUpdate != nil && cv.Spec.DesiredUpdate.Version != "" {
		return cv.Spec.DesiredUpdate.Version
	}
	return cv.Status.Desired.Version
}

// updateHold says whether no gated node may be released because of the
// cluster update, and why.
//
// With spec.holdUntil Rendered the hold ends as soon as every gated pool and
// its gate pool target a configuration the machine-config operator rendered
// for the requested release (the release-image-version it writes on
// rendered MachineConfigs): that is when the MCO would start updating the
// pool ungated, so waiting longer only makes the gated update slower than
// the ungated one. A target whose release is unknown (a rendered config
// without the annotation) holds until the control plane completes, as
// ControlPlaneUpdated always does.
//
// Whatever the mode, a pool seen targeting a config rendered for another
// release than the one the cluster updates to (or runs) holds too: the MCO
// renders every pool before it reports the release done, so such a view is
// behind the render, and a node released on it could be given the new
// release on the strength of hooks that ran for the old one.
func (p *planner) updateHold(cvUpdating bool, cvMsg string) (bool, string) {
	if cvUpdating && p.run.Spec.HoldUntil == nodegatev1alpha1.HoldUntilControlPlaneUpdated {
		return true, cvMsg
	}
	want, known := requestedVersion(p.in.ClusterVersion)
	if !known {
		if cvUpdating {
			return true, cvMsg + "; the requested release's version is not known yet"
		}
		return false, ""
	}
	for _, s := range p.sources {
		names := []string{s}
		if !p.holdsInGatePool() {
			// The canary's target is what its nodes are given.
			names = append(names, p.gatePoolName(s))
		}
		for _, name := range names {
			pool := p.pools[name]
			if pool == nil || pool.Spec.Configuration.Name == "" {
				continue // a gate pool not created or rendered yet: releases wait for it anyway
			}
			target := pool.Spec.Configuration.Name
			got := p.in.RenderedReleases[target]
			if got == want || (got == "" && !cvUpdating) {
				continue
			}
			if got == "" {
				got = "no known release"
			}
			msg := fmt.Sprintf("pool %s targets %q, rendered for %s, not yet for %s", name, target, got, want)
			if cvUpdating {
				msg = cvMsg + "; " + msg
			}
			return true, msg
		}
	}
	return false, ""
}

// updateTarget is the rendered config a node of source pool is updated
// to (the hooks' TARGET_CONFIG): its source pool's target, or with a canary
// the canary's once it rendered.
func (p *planner) updateTarget(source string) string {
	if g := p.pools[p.gatePoolName(source)]; !p.holdsInGatePool() && g != nil && g.Spec.Configuration.Name != "" {
		return g.Spec.Configuration.Name
	}
	if s := p.pools[source]; s != nil {
		return s.Spec.Configuration.Name
	}
	return ""
}

// retargeted: the node's pre-update hooks ran for a target its gate pool
// no longer has (the pools rendered new content since). A record written
// before hooksTarget existed is taken as current.
func (p *planner) retargeted(r *nodegatev1alpha1.NodeRecord) bool {
	t := p.updateTarget(r.Pool)
	return r.HooksTarget != "" && t != "" && t != r.HooksTarget
}

// admit (re)starts the node's hooks, all pending, for its pool's current
// target. A node admitted again is no longer released, even while it keeps
// the label: a pre-update hook failing now must not count it as released,
// which would let the gate pool run with it inside.
func (p *planner) admit(r *nodegatev1alpha1.NodeRecord) {
	r.Phase = nodegatev1alpha1.NodePreHooks
	r.ReleasedTime = nil
	r.HooksTarget = p.updateTarget(r.Pool)
	if r.Hooks == nil {
		r.Hooks = p.hookRecords()
		return
	}
	for i := range r.Hooks {
		h := &r.Hooks[i]
		h.Phase = nodegatev1alpha1.HookPending
		h.AttemptsBefore = h.Attempts
	}
}

// rehold takes a node whose hooks ran for an older target back to its
// pre-update hooks, held again (or out of the canary) if the MCO has not
// started it: a re-render mid-run must not let the MCO update a node on the
// strength of hooks that ran for other content.
func (p *planner) rehold(r *nodegatev1alpha1.NodeRecord) {
	n := p.nodes[r.Name]
	old := r.HooksTarget
	if n != nil && n.Labels[ReleaseLabel] != "" {
		p.act(Action{Kind: UnlabelNode, Label: ReleaseLabel, Node: r.Name, Pool: r.Pool})
	}
	p.admit(r)
	p.event(OnNode, r.Name, corev1.EventTypeWarning, "GateRetargeted", "pool %s now updates its nodes to %s; node %s's pre-update hooks ran for %s: they run again before it is released", r.Pool, r.HooksTarget, r.Name, old)
}
