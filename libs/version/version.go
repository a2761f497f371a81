// Package version compares OpenShift release versions with semantic
// versioning (github.com/blang/semver/v4) and derives the update channel
// names MUO and OCM use. Never compare versions by splitting strings.
package version

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// Parse parses a release version such as 4.14.15 or 4.16.0-rc.1. It is
// strict: "v4.14.15" and "4.14" are errors, because ClusterVersion never
// reports them and accepting them would hide a typo in a spec.
func Parse(s string) (semver.Version, error) {
	v, err := semver.Parse(s)
	if err != nil {
		return semver.Version{}, fmt.Errorf("%q is not a release version (major.minor.patch): %w", s, err)
	}
	return v, nil
}

// Stream classifies an update from one version to another.
type Stream string

const (
	// ZStream is a patch update within one minor version (4.14.1 -> 4.14.2).
	ZStream Stream = "z"
	// YStream is a minor (or major) update (4.14.x -> 4.15.y).
	YStream Stream = "y"
	// NotAnUpdate is a downgrade or the same version.
	NotAnUpdate Stream = "none"
)

// Classify says whether target is a z-stream or y-stream update from current,
// or not an update at all (not strictly greater).
func Classify(current, target semver.Version) Stream {
	switch {
	case !target.GT(current):
		return NotAnUpdate
	case target.Major == current.Major && target.Minor == current.Minor:
		return ZStream
	default:
		return YStream
	}
}

// StrictlyGreater reports whether target is a newer release than current.
// Pre-releases order before their release (4.16.0-rc.1 < 4.16.0), as semver
// says; build metadata is ignored.
func StrictlyGreater(current, target semver.Version) bool {
	return target.GT(current)
}

// Channel is an update channel such as stable-4.14: a group and a minor
// version.
type Channel struct {
	Group        string
	Major, Minor uint64
}

func (c Channel) String() string { return fmt.Sprintf("%s-%d.%d", c.Group, c.Major, c.Minor) }

// ParseChannel parses "<group>-<major>.<minor>".
func ParseChannel(s string) (Channel, error) {
	i := strings.LastIndex(s, "-")
	if i <= 0 {
		return Channel{}, fmt.Errorf("%q is not a channel (<group>-<major>.<minor>, e.g. stable-4.14)", s)
	}
	mm := strings.Split(s[i+1:], ".")
	if len(mm) != 2 {
		return Channel{}, fmt.Errorf("%q is not a channel (<group>-<major>.<minor>, e.g. stable-4.14)", s)
	}
	major, err1 := strconv.ParseUint(mm[0], 10, 64)
	minor, err2 := strconv.ParseUint(mm[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Channel{}, fmt.Errorf("%q is not a channel (<group>-<major>.<minor>, e.g. stable-4.14)", s)
	}
	return Channel{Group: s[:i], Major: major, Minor: minor}, nil
}

// ChannelFor is the channel OCM's policies map a version to, as MUO does: the
// group ("stable" when empty) and the version's minor, rounded up to the next
// even minor for the eus group, since EUS channels exist only for even
// minors (4.15.3 in eus is eus-4.16).
func ChannelFor(group string, v semver.Version) Channel {
	if group == "" {
		group = "stable"
	}
	return Channel{Group: group, Major: v.Major, Minor: EUSMinor(group, v.Minor)}
}

// EUSMinor rounds minor up to even for the eus channel group and returns it
// unchanged for any other group.
func EUSMinor(group string, minor uint64) uint64 {
	if group == "eus" && minor%2 == 1 {
		return minor + 1
	}
	return minor
}

// Admits reports whether a channel can carry version v: its minor is v's (or,
// for eus, v's rounded up to even) and its major is v's.
func (c Channel) Admits(v semver.Version) bool {
	return c.Major == v.Major && (c.Minor == v.Minor || c.Minor == EUSMinor(c.Group, v.Minor))
}
