// Package silence keeps the upgrade-scheduler's Alertmanager silences as
// renewable leases: each silence lives a short TTL past now and is extended
// while the phase that needs it is active, so a crashed or removed scheduler
// leaves nothing silenced for long. Plan is the pure core (inputs in,
// actions out); Client executes the actions against Alertmanager's API v2.
//
// Identity: every silence carries two marker matchers, upshift_upgradeconfig
// != "<uid>" and upshift_lease != "<version>/<purpose>". No alert carries
// these labels, so a "!=" matcher on them matches every alert and does not
// narrow the silence; but Alertmanager's server-side silence filter compares
// a silence's matchers by name, type and pattern, so listing with
// upshift_upgradeconfig!="<uid>" returns exactly this UpgradeConfig's
// silences (any state), without reading everyone else's. A silence found with
// our lease marker is re-adopted after a restart or a lost status write, so
// there is never a second silence for one purpose.
//
// A lease is held for as long as its phase wants it: someone who expires one
// by hand sees it come back at the next reconcile, until the phase ends or its
// window closes. Past the window (maintenance.controlPlaneTime for the control
// plane, the estimate from the remaining machines for the workers) a lease is
// no longer extended, so the alerts of an overrunning phase are seen.
package silence

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/upshift-io/upshift/libs/alerts"
)

// Purpose names a lease: which phase needs it and what it silences.
type Purpose string

const (
	// ControlPlane silences warning and info alerts in the platform
	// namespaces while the control plane upgrades.
	ControlPlane Purpose = "control-plane"
	// ControlPlaneCriticals silences the configured critical alerts
	// (maintenance.ignoredAlerts.controlPlaneCriticals) during the same phase.
	ControlPlaneCriticals Purpose = "control-plane-criticals"
	// Workers silences warning and info alerts in the platform namespaces
	// while the worker pools upgrade.
	Workers Purpose = "workers"
)

// Marker labels; see the package comment. They are defined in libs/alerts,
// so that a component that gates on alerts (node-gate) tells the
// scheduler's silences from a person's by the same definition.
const (
	LabelOwner = alerts.MaintenanceOwnerLabel
	LabelLease = alerts.MaintenanceLeaseLabel
)

// PlatformNamespaces is MUO's namespace regex for its maintenance silences
// (Alertmanager anchors regex matchers, so the ^ and $ are redundant but kept
// as MUO writes them).
const PlatformNamespaces = "(^openshift.*|^kube.*|^redhat.*|^default$)"

// DefaultTTL is how far past now a lease reaches. Short, so a scheduler that
// stops renewing (crashed, uninstalled) unsilences the cluster within it.
const DefaultTTL = 30 * time.Minute

// Matcher is one silence matcher, as Alertmanager's API v2 has it.
type Matcher struct {
	Name    string
	Value   string
	IsRegex bool
	IsEqual bool
}

// State is Alertmanager's silence state.
type State string

const (
	StateActive  State = "active"
	StatePending State = "pending"
	StateExpired State = "expired"
)

// Silence is a silence as listed from Alertmanager.
type Silence struct {
	ID        string
	Matchers  []Matcher
	StartsAt  time.Time
	EndsAt    time.Time
	State     State
	CreatedBy string
	Comment   string
}

// live reports whether the silence silences now or will: active or pending.
func (s Silence) live() bool { return s.State == StateActive || s.State == StatePending }

// Lease returns the lease key (<version>/<purpose>) from the marker matcher,
// or "" for a silence that is not one of ours.
func (s Silence) Lease() string {
	for _, m := range s.Matchers {
		if alerts.IsMaintenanceMatcher(m.Name, m.IsEqual, m.IsRegex) {
			return m.Value
		}
	}
	return ""
}

// Owner identifies the UpgradeConfig the leases belong to.
type Owner struct {
	Namespace string
	Name      string
	// UID keys the silences: a deleted and recreated UpgradeConfig of the
	// same name does not adopt its predecessor's.
	UID string
}

// OwnerFilter is the server-side filter (Alertmanager's matcher syntax) that
// lists the owner's silences.
func OwnerFilter(uid string) []string {
	return []string{LabelOwner + `!="` + uid + `"`}
}

// Want is a lease the current phase needs, up to End: the phase's window.
// Past End the lease is no longer extended and lapses, so alerts of a phase
// that overruns its window are seen, as with MUO's fixed windows.
type Want struct {
	Purpose Purpose
	End     time.Time
}

// Input is what Plan decides from.
type Input struct {
	Owner   Owner
	Version string
	// CreatedBy is written on every silence (MUO writes
	// managed-upgrade-operator; SRE alert rules exclude silences by it).
	CreatedBy string
	// Criticals are the alert names the ControlPlaneCriticals lease silences.
	Criticals []string
	// Wanted are the leases the current phase needs; a terminal phase
	// (completed, failed, cancelled) wants none, which expires them all.
	Wanted []Want
	// Recorded are the silence IDs in the UpgradeConfig's status, by purpose.
	// They pick which silence to keep when more than one is live.
	Recorded map[Purpose]string
	// Existing are the owner's silences as Alertmanager lists them with
	// OwnerFilter.
	Existing []Silence
	Now      time.Time
	// TTL is the lease length; zero means DefaultTTL.
	TTL time.Duration
}

// Kind is what an action does.
type Kind string

const (
	// Create posts a new silence.
	Create Kind = "Create"
	// Extend posts the silence again with its ID and a later end;
	// Alertmanager updates it in place (same matchers and start).
	Extend Kind = "Extend"
	// Replace posts new matchers under the silence's ID; Alertmanager
	// expires the old silence and returns a new ID.
	Replace Kind = "Replace"
	// Expire deletes (expires) the silence.
	Expire Kind = "Expire"
)

// Action is one call to Alertmanager.
type Action struct {
	Kind    Kind
	Purpose Purpose
	// ID is the silence to extend or expire; empty for Create.
	ID string
	// Silence is what Create, Extend and Replace post.
	Silence Silence
}

// Plan is the outcome of one reconcile.
type Plan struct {
	// Actions, in order: expiries first, so a crash mid-way leaves fewer
	// silences rather than more.
	Actions []Action
	// Record is what status should hold after the actions, by purpose; a
	// Create's ID is known only once executed (Client.Apply fills it in).
	Record map[Purpose]string
}

// Decide plans the actions. It is a pure function of its input.
func Decide(in Input) Plan {
	ttl := cmp.Or(in.TTL, DefaultTTL)
	out := Plan{Record: map[Purpose]string{}}
	// MUO makes no critical-alert silence without the list; one made
	// before the list was emptied is expired like any unwanted lease.
	in.Wanted = slices.DeleteFunc(slices.Clone(in.Wanted), func(w Want) bool {
		return w.Purpose == ControlPlaneCriticals && len(in.Criticals) == 0
	})
	wanted := map[string]Want{}
	for _, w := range in.Wanted {
		wanted[leaseKey(in.Version, w.Purpose)] = w
	}

	// Group our live silences by lease key.
	live := map[string][]Silence{}
	for _, s := range in.Existing {
		if s.live() && s.Lease() != "" {
			live[s.Lease()] = append(live[s.Lease()], s)
		}
	}
	var expire, keep []Action
	for _, key := range slices.Sorted(maps.Keys(live)) {
		group := live[key]
		w, ok := wanted[key]
		if !ok {
			// Not wanted: another phase, another version, or a terminal
			// phase. Expire every one.
			for _, s := range group {
				expire = append(expire, Action{Kind: Expire, Purpose: purposeOf(key), ID: s.ID})
			}
			continue
		}
		// Wanted: keep one (the recorded one, else the one reaching
		// furthest), expire the others.
		kept := pick(group, in.Recorded[w.Purpose])
		for _, s := range group {
			if s.ID != kept.ID {
				expire = append(expire, Action{Kind: Expire, Purpose: w.Purpose, ID: s.ID})
			}
		}
		out.Record[w.Purpose] = kept.ID
		end := leaseEnd(in.Now, ttl, w.End)
		if want := matchers(in, w.Purpose); !slices.Equal(kept.Matchers, want) && in.Now.Before(w.End) {
			// The configuration changed (the criticals list): post the
			// new matchers under the old ID, which Alertmanager does by
			// expiring the old silence and creating a new one in one
			// call, so there is neither a gap nor a second silence.
			s := kept
			s.Matchers, s.StartsAt, s.EndsAt, s.Comment = want, in.Now, end, comment(in, w.Purpose)
			keep = append(keep, Action{Kind: Replace, Purpose: w.Purpose, ID: kept.ID, Silence: s})
			continue
		}
		// Renew when less than half the TTL remains and the window allows
		// a later end; never shorten (the window only bounds extension).
		// Past the window's end nothing is posted: a list read a moment
		// ago may still show the lease live, and Alertmanager refuses a
		// silence that ends in the past.
		if kept.EndsAt.Sub(in.Now) < ttl/2 && end.After(kept.EndsAt) && in.Now.Before(w.End) {
			// Only the end changes: Alertmanager then updates the silence
			// in place and keeps its ID.
			s := kept
			s.EndsAt = end
			keep = append(keep, Action{Kind: Extend, Purpose: w.Purpose, ID: kept.ID, Silence: s})
		}
	}
	for _, w := range in.Wanted {
		if _, ok := live[leaseKey(in.Version, w.Purpose)]; ok {
			continue
		}
		if !in.Now.Before(w.End) {
			continue // the window has passed: let alerts through
		}
		keep = append(keep, Action{Kind: Create, Purpose: w.Purpose, Silence: Silence{
			Matchers:  matchers(in, w.Purpose),
			StartsAt:  in.Now,
			EndsAt:    leaseEnd(in.Now, ttl, w.End),
			CreatedBy: in.CreatedBy,
			Comment:   comment(in, w.Purpose),
		}})
	}
	out.Actions = append(expire, keep...)
	return out
}

func leaseEnd(now time.Time, ttl time.Duration, windowEnd time.Time) time.Time {
	end := now.Add(ttl)
	if windowEnd.Before(end) {
		return windowEnd
	}
	return end
}

// pick keeps the recorded silence if it is live, else the one ending last
// (ties: the smallest ID, so every replica picks the same).
func pick(group []Silence, recorded string) Silence {
	for _, s := range group {
		if recorded != "" && s.ID == recorded {
			return s
		}
	}
	return slices.MaxFunc(group, func(a, b Silence) int {
		if c := a.EndsAt.Compare(b.EndsAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}

func leaseKey(version string, p Purpose) string { return version + "/" + string(p) }

func purposeOf(key string) Purpose {
	return Purpose(key[strings.LastIndexByte(key, '/')+1:])
}

// matchers are MUO's, with two changes: the critical-alert silence is scoped
// to the platform namespaces too (MUO's matches those alert names in any
// namespace, a customer's included), and every silence carries the marker
// matchers that identify it.
func matchers(in Input, p Purpose) []Matcher {
	var ms []Matcher
	switch p {
	case ControlPlaneCriticals:
		names := make([]string, len(in.Criticals))
		for i, n := range in.Criticals {
			names[i] = regexp.QuoteMeta(n)
		}
		ms = []Matcher{{Name: "alertname", Value: "(" + strings.Join(names, "|") + ")", IsRegex: true, IsEqual: true}}
	default:
		ms = []Matcher{{Name: "severity", Value: "(warning|info)", IsRegex: true, IsEqual: true}}
	}
	// The markers are "!=" matchers (IsEqual false).
	return append(ms,
		Matcher{Name: "namespace", Value: PlatformNamespaces, IsRegex: true, IsEqual: true},
		Matcher{Name: LabelOwner, Value: in.Owner.UID},
		Matcher{Name: LabelLease, Value: leaseKey(in.Version, p)},
	)
}

// comment keeps MUO's wording (people and alert rules search for it) and
// names the UpgradeConfig.
func comment(in Input, p Purpose) string {
	var text string
	switch p {
	case ControlPlane:
		text = "Silence for OSD control plane upgrade to version " + in.Version
	case ControlPlaneCriticals:
		text = "Silence for critical alerts during OSD control plane upgrade to version " + in.Version
	default:
		text = "Silence for OSD worker node upgrade to version " + in.Version
	}
	return text + " (Upshift lease " + string(p) + " of UpgradeConfig " + in.Owner.Namespace + "/" + in.Owner.Name + ")"
}
