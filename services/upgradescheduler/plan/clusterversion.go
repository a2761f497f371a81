package plan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/upshift-io/upshift/libs/version"
)

// ClusterVersionPatch is a merge patch of ClusterVersion's spec, as MUO sends
// it: the channel alone, or desiredUpdate alone with the other of version and
// image explicitly null. It never sets force and never touches overrides.
type ClusterVersionPatch struct {
	Channel       *string
	DesiredUpdate *DesiredUpdate
}

// DesiredUpdate is spec.desiredUpdate; an empty field is sent as null.
type DesiredUpdate struct {
	Version, Image string
}

// MergePatch is the JSON merge patch body.
func (c ClusterVersionPatch) MergePatch() []byte {
	spec := map[string]any{}
	if c.Channel != nil {
		spec["channel"] = *c.Channel
	}
	if c.DesiredUpdate != nil {
		spec["desiredUpdate"] = map[string]any{"version": nullIfEmpty(c.DesiredUpdate.Version), "image": nullIfEmpty(c.DesiredUpdate.Image)}
	}
	b, _ := json.Marshal(map[string]any{"spec": spec})
	return b
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// commenced is MUO's HasUpgradeCommenced: ClusterVersion's desiredUpdate
// already names the target (its image in image mode, else its version).
func (p *planner) commenced() bool {
	cv := p.in.Snapshot.ClusterVersion
	if cv == nil || cv.Spec.DesiredUpdate == nil {
		return false
	}
	if p.spec.Desired.Image != "" {
		return cv.Spec.DesiredUpdate.Image == p.spec.Desired.Image
	}
	return p.spec.Desired.Version != "" && cv.Spec.DesiredUpdate.Version == p.spec.Desired.Version
}

// CurrentVersion is currentVersion, for the metrics' version label.
func CurrentVersion(cv *configv1.ClusterVersion) string { return currentVersion(cv) }

// currentVersion is the version of the newest Completed update in the history
// (MUO's GetCurrentVersion), or the desired version of a cluster that has
// never completed one.
func currentVersion(cv *configv1.ClusterVersion) string {
	var best *configv1.UpdateHistory
	for i := range cv.Status.History {
		h := &cv.Status.History[i]
		if h.State != configv1.CompletedUpdate || h.CompletionTime == nil {
			continue
		}
		if best == nil || h.CompletionTime.After(best.CompletionTime.Time) {
			best = h
		}
	}
	if best != nil {
		return best.Version
	}
	return cv.Status.Desired.Version
}

// precedingVersion is MUO's GetPrecedingVersion: the version upgraded from.
func precedingVersion(cv *configv1.ClusterVersion, target string) string {
	if cv == nil {
		return ""
	}
	if cv.Status.Desired.Version == target || (target != "" && cv.Status.Desired.Image == target) {
		for _, h := range cv.Status.History {
			if h.State == configv1.CompletedUpdate && h.Version != target {
				return h.Version
			}
		}
		return ""
	}
	return cv.Status.Desired.Version
}

func cvCondition(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == t {
			return &cv.Status.Conditions[i]
		}
	}
	return nil
}

var digestRef = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+@sha256:[a-f0-9]{64}$`)

// validate is MUO's validation (Pending phase) with semver. It returns a
// message naming the field, a condition reason, and whether the spec is valid.
func (p *planner) validate() (string, string, bool) {
	if _, err := time.Parse(time.RFC3339, p.spec.UpgradeAt); err != nil {
		return fmt.Sprintf("spec.upgradeAt: %q is not an RFC 3339 time", p.spec.UpgradeAt), "InvalidUpgradeAt", false
	}
	if _, _, err := p.scheduledStart(); err != nil {
		return err.Error(), "InvalidMaintenanceWindows", false
	}
	cv := p.in.Snapshot.ClusterVersion
	if cv == nil {
		return "clusterversion/version cannot be read", "ClusterVersionUnavailable", false
	}
	d := p.spec.Desired
	if d.Image != "" {
		// Image mode: MUO reads the release label from the registry. Without
		// registry access the version cannot be confirmed; say so, and check
		// what can be checked.
		if !digestRef.MatchString(d.Image) {
			return fmt.Sprintf("spec.desired.image: %q is not a release image by digest (registry/namespace/name@sha256:<64 hex>)", d.Image), "InvalidImage", false
		}
		if d.Version == "" {
			return "spec.desired.image: the release version of the image cannot be confirmed without registry access; the upgrade is recorded by image", "ImageVersionUnconfirmed", true
		}
		if msg, reason, ok := p.validateVersionNewer(cv, d.Version); !ok {
			return msg, reason, false
		}
		return fmt.Sprintf("spec.desired.version %s is taken as the image's version, which cannot be confirmed without registry access", d.Version), "ImageVersionUnconfirmed", true
	}
	switch {
	case d.Version == "" && d.Channel == "":
		return "spec.desired: needs a version and a channel, or an image", "MissingTarget", false
	case d.Version == "":
		return "spec.desired.version: required with spec.desired.channel", "MissingVersion", false
	case d.Channel == "":
		return "spec.desired.channel: required with spec.desired.version", "MissingChannel", false
	}
	if msg, reason, ok := p.validateVersionNewer(cv, d.Version); !ok {
		return msg, reason, false
	}
	target, _ := version.Parse(d.Version)
	ch, err := version.ParseChannel(d.Channel)
	if err != nil {
		return "spec.desired.channel: " + err.Error(), "InvalidChannel", false
	}
	if !ch.Admits(target) {
		return fmt.Sprintf("spec.desired.channel: %s does not carry version %s", d.Channel, d.Version), "ChannelMismatch", false
	}
	if d.Channel != cv.Spec.Channel {
		// y-stream in MUO's sense: the channel changes, so ClusterVersion's
		// update lists are for the old channel; the CVO lists the target once
		// the channel is set (checked again before commencing).
		msg := fmt.Sprintf("channel change %s -> %s: %s is checked against the new channel's updates when the channel is set", cv.Spec.Channel, d.Channel, d.Version)
		if p.cfg.Cincinnati {
			msg += " (validation.cincinnati: the update graph is not queried by this scheduler)"
		}
		return msg, "Valid", true
	}
	if !listed(cv, d.Version) {
		return fmt.Sprintf("spec.desired.version: %s is not in ClusterVersion availableUpdates or conditionalUpdates of channel %s", d.Version, d.Channel), "VersionNotAvailable", false
	}
	return fmt.Sprintf("%s is an available update", d.Version), "Valid", true
}

func (p *planner) validateVersionNewer(cv *configv1.ClusterVersion, target string) (string, string, bool) {
	t, err := version.Parse(target)
	if err != nil {
		return "spec.desired.version: " + err.Error(), "InvalidVersion", false
	}
	curS := currentVersion(cv)
	cur, err := version.Parse(curS)
	if err != nil {
		return fmt.Sprintf("the cluster's current version %q cannot be parsed: %v", curS, err), "CurrentVersionUnknown", false
	}
	if !version.StrictlyGreater(cur, t) {
		return fmt.Sprintf("spec.desired.version: %s is not newer than the current version %s", target, curS), "NotAnUpgrade", false
	}
	return "", "", true
}

// listed reports whether v is offered as an update, recommended or
// conditional (MUO accepts both: the risk is accepted by whoever scheduled it).
func listed(cv *configv1.ClusterVersion, v string) bool {
	_, ok := releaseFor(cv, v)
	return ok
}

// releaseFor finds v in availableUpdates (image not needed: "") or in
// conditionalUpdates (image returned, as MUO sends it).
func releaseFor(cv *configv1.ClusterVersion, v string) (image string, ok bool) {
	for _, r := range cv.Status.AvailableUpdates {
		if r.Version == v {
			return "", true
		}
	}
	for _, c := range cv.Status.ConditionalUpdates {
		if c.Release.Version == v {
			return c.Release.Image, true
		}
	}
	return "", false
}

func (p *planner) upgradeable() result {
	cv := p.in.Snapshot.ClusterVersion
	if cv == nil {
		return result{failure: "clusterversion/version cannot be read"}
	}
	if p.spec.Desired.Version == "" {
		return result{done: true, message: "image mode: the version step cannot be classified"}
	}
	target, err := version.Parse(p.spec.Desired.Version)
	if err != nil {
		return result{failure: "spec.desired.version: " + err.Error()}
	}
	cur, err := version.Parse(currentVersion(cv))
	if err != nil {
		return result{failure: err.Error()}
	}
	c := cvCondition(cv, configv1.OperatorUpgradeable)
	// As in MUO, Upgradeable=False blocks only minor (and major) updates.
	if c != nil && c.Status == configv1.ConditionFalse && version.Classify(cur, target) == version.YStream {
		return result{failure: fmt.Sprintf("ClusterVersion is Upgradeable=False (%s: %s): the minor-version upgrade to %s cannot start", c.Reason, c.Message, p.spec.Desired.Version)}
	}
	return result{done: true}
}

func (p *planner) commence() result {
	cv := p.in.Snapshot.ClusterVersion
	if p.commenced() {
		return result{done: true, message: "ClusterVersion points at " + p.target}
	}
	if cv == nil {
		return result{failure: "clusterversion/version cannot be read"}
	}
	if sched, _ := p.schedule(); !sched.Open(p.now) {
		next, _ := sched.NextOpen(p.now)
		return result{message: "the maintenance window closed before commencement; the next opens at " + next.UTC().Format(time.RFC3339), wakeAt: next}
	}
	d := p.spec.Desired
	if d.Image != "" {
		return result{message: "setting ClusterVersion desiredUpdate to image " + d.Image,
			action: &Action{Kind: PatchClusterVersion, ClusterVersion: &ClusterVersionPatch{DesiredUpdate: &DesiredUpdate{Image: d.Image}}}}
	}
	if cv.Spec.Channel != d.Channel {
		ch := d.Channel
		return result{message: fmt.Sprintf("setting ClusterVersion channel %q -> %q", cv.Spec.Channel, ch),
			action: &Action{Kind: PatchClusterVersion, ClusterVersion: &ClusterVersionPatch{Channel: &ch}}}
	}
	image, ok := releaseFor(cv, d.Version)
	if !ok {
		return result{failure: fmt.Sprintf("%s is not (yet) in ClusterVersion availableUpdates or conditionalUpdates of channel %s", d.Version, d.Channel)}
	}
	msg := "setting ClusterVersion desiredUpdate to " + d.Version
	if image != "" {
		msg += " (a conditional update, with its image)"
	}
	return result{message: msg, action: &Action{Kind: PatchClusterVersion, ClusterVersion: &ClusterVersionPatch{DesiredUpdate: &DesiredUpdate{Version: d.Version, Image: image}}}}
}

func (p *planner) controlPlaneUpgraded() result {
	cv := p.in.Snapshot.ClusterVersion
	if cv == nil {
		return result{failure: "clusterversion/version cannot be read"}
	}
	for _, h := range cv.Status.History {
		match := (p.spec.Desired.Image != "" && h.Image == p.spec.Desired.Image) || (p.spec.Desired.Image == "" && h.Version == p.spec.Desired.Version)
		if !match {
			continue
		}
		if h.State == configv1.CompletedUpdate {
			return result{done: true}
		}
		return result{message: fmt.Sprintf("ClusterVersion is updating to %s (%s since %s)", p.target, h.State, h.StartedTime.UTC().Format(time.RFC3339))}
	}
	return result{message: "ClusterVersion has not started updating to " + p.target}
}

func joinLimited(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}
