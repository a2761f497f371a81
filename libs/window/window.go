// Package window answers when maintenance windows are open. The windows are
// defined once, as the shared API type MaintenanceWindow (api/common/v1alpha1),
// which the UpgradeConfig and the MutexRunConfig both embed; every component
// that honours windows (upgrade-scheduler, node-gate) parses them with FromAPI
// and asks a Schedule.
//
// A window is a daily wall-clock range in one IANA time zone on some days of
// the week. It belongs to the day it opens on; an end not after the start
// wraps past midnight, and an end equal to the start makes a whole day. On
// days when the clocks change, wall-clock times are resolved the way people
// read them: a time skipped by the spring-forward gap means the first instant
// after the gap, and a time that occurs twice in the fall-back overlap means
// its first occurrence. Windows that overlap or touch form one open period.
package window

import (
	"fmt"
	"sort"
	"sync"
	"time"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

// Window is one parsed maintenance window.
type Window struct {
	// Days the window opens on; empty means every day.
	Days []time.Weekday
	// Start and End are minutes after midnight, wall clock in Location.
	Start, End int
	// Location is the time zone; never nil.
	Location *time.Location
}

// Schedule is a set of windows; it is open when any window is. A Schedule
// without windows places no restriction: it is always open and never closes.
type Schedule []Window

var weekdays = map[commonv1alpha1.Weekday]time.Weekday{
	"Sunday": time.Sunday, "Monday": time.Monday, "Tuesday": time.Tuesday,
	"Wednesday": time.Wednesday, "Thursday": time.Thursday, "Friday": time.Friday,
	"Saturday": time.Saturday,
}

// FromAPI parses the API windows. Errors name the field, as
// maintenanceWindows[i].<field>, for reporting on the object.
func FromAPI(in []commonv1alpha1.MaintenanceWindow) (Schedule, error) {
	out := make(Schedule, 0, len(in))
	for i, w := range in {
		field := fmt.Sprintf("maintenanceWindows[%d]", i)
		var p Window
		for _, d := range w.Days {
			wd, ok := weekdays[d]
			if !ok {
				return nil, fmt.Errorf("%s.days: %q is not a day name (Monday ... Sunday)", field, d)
			}
			p.Days = append(p.Days, wd)
		}
		var err error
		if p.Start, err = parseClock(w.Start); err != nil {
			return nil, fmt.Errorf("%s.start: %w", field, err)
		}
		if p.End, err = parseClock(w.End); err != nil {
			return nil, fmt.Errorf("%s.end: %w", field, err)
		}
		if p.Location, err = loadLocation(w.TimeZone); err != nil {
			return nil, fmt.Errorf("%s.timeZone: %w", field, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseClock(s string) (int, error) {
	var h, m int
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	if _, err := fmt.Sscanf(s, "%02d:%02d", &h, &m); err != nil || h > 23 || m > 59 || h < 0 || m < 0 {
		return 0, fmt.Errorf("%q is not HH:MM on a 24-hour clock", s)
	}
	return h*60 + m, nil
}

func loadLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	// time.LoadLocation("Local") would mean the controller's own zone, which
	// is never what a window's author meant.
	if name == "Local" {
		return nil, fmt.Errorf("%q is not an IANA time zone name", name)
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not a known IANA time zone", name)
	}
	zones.Store(name, loc)
	return loc, nil
}

// zones keeps the zones loaded so far. time.LoadLocation reads and parses the
// zone's file on every call, and windows are parsed on every pass of the
// controllers that honour them (node-gate's pass follows every Node event).
// A zone's rules change only with the tz database, which a new image brings.
var zones sync.Map // name → *time.Location

// interval is one open period [open, close).
type interval struct{ open, close time.Time }

// scanBefore and scanAfter bound the occurrences computed around now: a
// weekly schedule opens within 8 days, and a window lasts at most a day.
const (
	scanBefore = 3
	scanAfter  = 16
)

// intervals returns the merged open periods of s that overlap the scan range
// around now, in order, and the range's end.
func (s Schedule) intervals(now time.Time) []interval {
	var all []interval
	for _, w := range s {
		y, m, d := now.In(w.Location).Date()
		for k := -scanBefore; k <= scanAfter; k++ {
			// Civil-date arithmetic in UTC: no clock changes there.
			day := time.Date(y, m, d+k, 12, 0, 0, 0, time.UTC)
			if !w.opensOn(day.Weekday()) {
				continue
			}
			endDay := day
			if w.End <= w.Start {
				endDay = day.AddDate(0, 0, 1)
			}
			iv := interval{open: wallClock(day, w.Start, w.Location), close: wallClock(endDay, w.End, w.Location)}
			// A window entirely inside a spring-forward gap is empty.
			if iv.close.After(iv.open) {
				all = append(all, iv)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].open.Before(all[j].open) })
	var merged []interval
	for _, iv := range all {
		if n := len(merged); n > 0 && !iv.open.After(merged[n-1].close) {
			if iv.close.After(merged[n-1].close) {
				merged[n-1].close = iv.close
			}
			continue
		}
		merged = append(merged, iv)
	}
	return merged
}

func (w Window) opensOn(d time.Weekday) bool {
	if len(w.Days) == 0 {
		return true
	}
	for _, x := range w.Days {
		if x == d {
			return true
		}
	}
	return false
}

// wallClock is the instant the clock in loc shows minutes after midnight on
// day's date: the first occurrence when the time occurs twice, the end of the
// gap when it does not occur.
func wallClock(day time.Time, minutes int, loc *time.Location) time.Time {
	y, m, d := day.Date()
	naive := time.Date(y, m, d, minutes/60, minutes%60, 0, 0, time.UTC)
	var best time.Time
	var earlier int
	for i, probe := range []time.Duration{-36 * time.Hour, 36 * time.Hour} {
		_, off := naive.Add(probe).In(loc).Zone()
		if i == 0 {
			earlier = off
		}
		t := naive.Add(-time.Duration(off) * time.Second)
		if matches(t.In(loc), y, m, d, minutes) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best
	}
	// In the gap: read with the offset before the change, the instant lies
	// after the change; the zone period it falls in starts at the change.
	t := naive.Add(-time.Duration(earlier) * time.Second).In(loc)
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	return start
}

func matches(t time.Time, y int, m time.Month, d, minutes int) bool {
	ty, tm, td := t.Date()
	return ty == y && tm == m && td == d && t.Hour()*60+t.Minute() == minutes && t.Second() == 0
}

// Open reports whether a window is open at now.
func (s Schedule) Open(now time.Time) bool {
	if len(s) == 0 {
		return true
	}
	for _, iv := range s.intervals(now) {
		if !now.Before(iv.open) && now.Before(iv.close) {
			return true
		}
	}
	return false
}

// NextOpen returns now when a window is open, else the next instant one
// opens. ok is false when no window ever opens.
func (s Schedule) NextOpen(now time.Time) (t time.Time, ok bool) {
	if len(s) == 0 {
		return now, true
	}
	for _, iv := range s.intervals(now) {
		if now.Before(iv.close) {
			if now.Before(iv.open) {
				return iv.open, true
			}
			return now, true
		}
	}
	return time.Time{}, false
}

// NextClose returns when the open period containing now ends or, when no
// window is open, when the next open period ends. ok is false when there is
// no such end: no windows at all, or windows that together never close.
func (s Schedule) NextClose(now time.Time) (t time.Time, ok bool) {
	if len(s) == 0 {
		return time.Time{}, false
	}
	ivs := s.intervals(now)
	for i, iv := range ivs {
		if now.Before(iv.close) {
			// A period running into the last scanned day may go on beyond it.
			if i == len(ivs)-1 && iv.close.After(now.AddDate(0, 0, scanAfter-2)) {
				return time.Time{}, false
			}
			return iv.close, true
		}
	}
	return time.Time{}, false
}

// maxOpenForScans bounds OpenFor's walk: each scan covers more than two
// weeks, so this is decades of windows, far beyond any duration asked.
const maxOpenForScans = 1000

// OpenFor returns the instant at which the windows will have been open for d
// in all since since: since+d for a Schedule without windows. Time while
// every window is closed does not count, so a reader that allows a
// controller d to act, and knows the controller acts only inside its
// windows, gives it d of open time. ok is false when the windows never stay
// open that long.
func (s Schedule) OpenFor(since time.Time, d time.Duration) (t time.Time, ok bool) {
	if len(s) == 0 {
		return since.Add(d), true
	}
	from, left := since, d
	for range maxOpenForScans {
		ahead := false
		for _, iv := range s.intervals(from) {
			if !from.Before(iv.close) {
				continue
			}
			ahead = true
			open := iv.open
			if open.Before(from) {
				open = from
			}
			if span := iv.close.Sub(open); span < left {
				left -= span
				from = iv.close
				continue
			}
			return open.Add(left), true
		}
		if !ahead {
			return time.Time{}, false
		}
	}
	return time.Time{}, false
}
