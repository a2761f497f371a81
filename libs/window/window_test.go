package window

import (
	"math/rand"
	"testing"
	"time"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

func sched(t *testing.T, ws ...commonv1alpha1.MaintenanceWindow) Schedule {
	t.Helper()
	s, err := FromAPI(ws)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func win(start, end, tz string, days ...commonv1alpha1.Weekday) commonv1alpha1.MaintenanceWindow {
	return commonv1alpha1.MaintenanceWindow{Start: start, End: end, TimeZone: tz, Days: days}
}

// at parses a wall-clock time with an explicit UTC offset, so that every
// expectation below is an unambiguous instant.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFromAPIErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		in   commonv1alpha1.MaintenanceWindow
		want string
	}{
		{win("24:00", "02:00", ""), `maintenanceWindows[0].start: "24:00" is not HH:MM on a 24-hour clock`},
		{win("22:00", "2:00", ""), `maintenanceWindows[0].end: "2:00" is not HH:MM`},
		{win("22:00", "02:00", "Mars/Olympus"), `maintenanceWindows[0].timeZone: "Mars/Olympus" is not a known IANA time zone`},
		{win("22:00", "02:00", "Local"), `maintenanceWindows[0].timeZone: "Local" is not an IANA time zone name`},
		{win("22:00", "02:00", "", "Funday"), `maintenanceWindows[0].days: "Funday" is not a day name (Monday ... Sunday)`},
	} {
		_, err := FromAPI([]commonv1alpha1.MaintenanceWindow{tc.in})
		if err == nil || err.Error() != tc.want {
			t.Errorf("FromAPI(%+v) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A zone is read from the tz database once, however often windows are
// parsed; a name that is no zone is refused every time.
func TestZoneLoadedOnce(t *testing.T) {
	a, err := loadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := loadLocation("Asia/Kolkata"); a != b {
		t.Fatal("Asia/Kolkata was loaded twice")
	}
	for range 2 {
		if _, err := loadLocation("Mars/Olympus"); err == nil {
			t.Fatal("Mars/Olympus accepted")
		}
	}
}

func TestNoWindowsAlwaysOpen(t *testing.T) {
	var s Schedule
	now := at(t, "2026-03-29T02:30:00Z")
	if !s.Open(now) {
		t.Fatal("no windows must mean always open")
	}
	if got, ok := s.NextOpen(now); !ok || !got.Equal(now) {
		t.Fatalf("NextOpen = %v %v", got, ok)
	}
	if _, ok := s.NextClose(now); ok {
		t.Fatal("no windows never close")
	}
}

func TestSchedule(t *testing.T) {
	type check struct {
		now       string
		open      bool
		nextOpen  string // RFC 3339; "" when never
		nextClose string // RFC 3339; "" when never
	}
	for _, tc := range []struct {
		name   string
		wins   []commonv1alpha1.MaintenanceWindow
		checks []check
	}{
		{
			name: "plain UTC window on one day",
			wins: []commonv1alpha1.MaintenanceWindow{win("10:00", "12:00", "", "Tuesday")},
			checks: []check{
				// 2026-11-24 is a Tuesday.
				{"2026-11-24T09:59:59Z", false, "2026-11-24T10:00:00Z", "2026-11-24T12:00:00Z"},
				{"2026-11-24T10:00:00Z", true, "2026-11-24T10:00:00Z", "2026-11-24T12:00:00Z"},
				{"2026-11-24T11:59:59Z", true, "2026-11-24T11:59:59Z", "2026-11-24T12:00:00Z"},
				// The end is exclusive; next opening a week later.
				{"2026-11-24T12:00:00Z", false, "2026-12-01T10:00:00Z", "2026-12-01T12:00:00Z"},
				{"2026-11-22T23:00:00Z", false, "2026-11-24T10:00:00Z", "2026-11-24T12:00:00Z"},
			},
		},
		{
			name: "wraps past midnight and belongs to its start day",
			wins: []commonv1alpha1.MaintenanceWindow{win("22:00", "02:00", "", "Saturday")},
			checks: []check{
				// 2026-11-28 is a Saturday: open Sat 22:00 to Sun 02:00.
				{"2026-11-28T21:59:00Z", false, "2026-11-28T22:00:00Z", "2026-11-29T02:00:00Z"},
				{"2026-11-29T01:30:00Z", true, "2026-11-29T01:30:00Z", "2026-11-29T02:00:00Z"},
				{"2026-11-29T02:00:00Z", false, "2026-12-05T22:00:00Z", "2026-12-06T02:00:00Z"},
				// Saturday 01:00 is the tail of Friday's window, which does not exist.
				{"2026-11-28T01:00:00Z", false, "2026-11-28T22:00:00Z", "2026-11-29T02:00:00Z"},
			},
		},
		{
			name: "start equal to end is a whole day",
			wins: []commonv1alpha1.MaintenanceWindow{win("06:00", "06:00", "", "Monday")},
			checks: []check{
				{"2026-11-23T05:59:00Z", false, "2026-11-23T06:00:00Z", "2026-11-24T06:00:00Z"},
				{"2026-11-24T05:59:00Z", true, "2026-11-24T05:59:00Z", "2026-11-24T06:00:00Z"},
			},
		},
		{
			name: "time zone is the window's, not UTC",
			wins: []commonv1alpha1.MaintenanceWindow{win("09:00", "17:00", "Asia/Tokyo", "Monday")},
			checks: []check{
				// Monday 09:00 in Tokyo is Monday 00:00 UTC.
				{"2026-11-22T23:00:00Z", false, "2026-11-23T00:00:00Z", "2026-11-23T08:00:00Z"},
				{"2026-11-23T07:59:00Z", true, "2026-11-23T07:59:00Z", "2026-11-23T08:00:00Z"},
			},
		},
		{
			name: "touching windows merge into one open period",
			wins: []commonv1alpha1.MaintenanceWindow{win("20:00", "00:00", "", "Friday"), win("00:00", "04:00", "", "Saturday")},
			checks: []check{
				// 2026-11-27 is a Friday.
				{"2026-11-27T21:00:00Z", true, "2026-11-27T21:00:00Z", "2026-11-28T04:00:00Z"},
			},
		},
		{
			name: "every day all day never closes",
			wins: []commonv1alpha1.MaintenanceWindow{win("00:00", "00:00", "Europe/Berlin")},
			checks: []check{
				{"2026-03-29T01:30:00Z", true, "2026-03-29T01:30:00Z", ""},
			},
		},
		{
			// Berlin springs forward on 2026-03-29: 02:00 CET becomes 03:00 CEST.
			name: "Europe/Berlin spring forward: a start in the gap opens at the end of the gap",
			wins: []commonv1alpha1.MaintenanceWindow{win("02:30", "05:00", "Europe/Berlin", "Sunday")},
			checks: []check{
				{"2026-03-29T00:59:00Z", false, "2026-03-29T03:00:00+02:00", "2026-03-29T05:00:00+02:00"},
				{"2026-03-29T01:00:00Z", true, "2026-03-29T01:00:00Z", "2026-03-29T05:00:00+02:00"},
				// The window is 2h long that day instead of 2h30.
				{"2026-03-29T02:59:00Z", true, "2026-03-29T02:59:00Z", "2026-03-29T03:00:00Z"},
			},
		},
		{
			name: "Europe/Berlin spring forward: a window inside the gap is empty that day",
			wins: []commonv1alpha1.MaintenanceWindow{win("02:10", "02:50", "Europe/Berlin", "Sunday")},
			checks: []check{
				{"2026-03-29T00:30:00Z", false, "2026-04-05T02:10:00+02:00", "2026-04-05T02:50:00+02:00"},
			},
		},
		{
			// Berlin falls back on 2026-10-25: 03:00 CEST becomes 02:00 CET,
			// so 02:30 happens twice; the window opens at the first.
			name: "Europe/Berlin fall back: a start in the overlap means the first occurrence",
			wins: []commonv1alpha1.MaintenanceWindow{win("02:30", "04:00", "Europe/Berlin", "Sunday")},
			checks: []check{
				{"2026-10-25T00:00:00Z", false, "2026-10-25T02:30:00+02:00", "2026-10-25T04:00:00+01:00"},
				// Between the two 02:30s: open. The window lasts 2h30 that day.
				{"2026-10-25T01:15:00Z", true, "2026-10-25T01:15:00Z", "2026-10-25T03:00:00Z"},
			},
		},
		{
			// New York springs forward on 2026-03-08 at 02:00 EST -> 03:00 EDT.
			name: "America/New_York spring forward, window wrapping past midnight into the change",
			wins: []commonv1alpha1.MaintenanceWindow{win("23:00", "03:00", "America/New_York", "Saturday")},
			checks: []check{
				// Saturday 23:00 EST to Sunday 03:00 EDT: three real hours.
				{"2026-03-08T03:59:00Z", false, "2026-03-08T04:00:00Z", "2026-03-08T07:00:00Z"},
				{"2026-03-08T06:59:00Z", true, "2026-03-08T06:59:00Z", "2026-03-08T07:00:00Z"},
				{"2026-03-08T07:00:00Z", false, "2026-03-15T03:00:00Z", "2026-03-15T07:00:00Z"},
			},
		},
		{
			// New York falls back on 2026-11-01 at 02:00 EDT -> 01:00 EST.
			name: "America/New_York fall back: an end in the overlap means its first occurrence",
			wins: []commonv1alpha1.MaintenanceWindow{win("00:00", "01:30", "America/New_York", "Sunday")},
			checks: []check{
				{"2026-11-01T03:59:00Z", false, "2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z"},
				{"2026-11-01T05:29:00Z", true, "2026-11-01T05:29:00Z", "2026-11-01T05:30:00Z"},
				// The second 01:15 (EST) is after the window closed.
				{"2026-11-01T06:15:00Z", false, "2026-11-08T05:00:00Z", "2026-11-08T06:30:00Z"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sched(t, tc.wins...)
			for _, c := range tc.checks {
				now := at(t, c.now)
				if got := s.Open(now); got != c.open {
					t.Errorf("Open(%s) = %v, want %v", c.now, got, c.open)
				}
				gotOpen, ok := s.NextOpen(now)
				if (c.nextOpen == "") == ok || (ok && !gotOpen.Equal(at(t, c.nextOpen))) {
					t.Errorf("NextOpen(%s) = %v %v, want %s", c.now, gotOpen.UTC(), ok, c.nextOpen)
				}
				gotClose, ok := s.NextClose(now)
				if (c.nextClose == "") == ok || (ok && !gotClose.Equal(at(t, c.nextClose))) {
					t.Errorf("NextClose(%s) = %v %v, want %s", c.now, gotClose.UTC(), ok, c.nextClose)
				}
			}
		})
	}
}

// TestScheduleProperties checks, over random schedules and instants around
// the clock changes of several zones, that NextOpen is open, that nothing is
// open between now and NextOpen, and that NextClose is the first closed
// instant after an open one.
func TestScheduleProperties(t *testing.T) {
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham"}
	rng := rand.New(rand.NewSource(8))
	clock := func() string {
		// Quarter hours, with extra weight on the hours clocks change at.
		h := rng.Intn(24)
		if rng.Intn(3) == 0 {
			h = 1 + rng.Intn(3)
		}
		return time.Date(0, 1, 1, h, 15*rng.Intn(4), 0, 0, time.UTC).Format("15:04")
	}
	base := at(t, "2026-01-01T00:00:00Z")
	for i := 0; i < 300; i++ {
		ws := randomWindows(rng, clock, zones, 3, 4)
		s := sched(t, ws...)
		now := base.Add(time.Duration(rng.Int63n(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
		// Bias towards the DST weekends.
		if rng.Intn(2) == 0 {
			for _, d := range []string{"2026-03-08T00:00:00Z", "2026-03-29T00:00:00Z", "2026-10-25T00:00:00Z", "2026-11-01T00:00:00Z", "2026-04-05T00:00:00Z"} {
				if rng.Intn(3) == 0 {
					now = at(t, d).Add(time.Duration(rng.Intn(48*4)) * 15 * time.Minute)
				}
			}
		}
		next, ok := s.NextOpen(now)
		if !ok {
			t.Fatalf("%+v: NextOpen(%v) found nothing", ws, now)
		}
		if !s.Open(next) {
			t.Fatalf("%+v: NextOpen(%v) = %v is not open", ws, now, next)
		}
		if s.Open(now) != next.Equal(now) {
			t.Fatalf("%+v: Open(%v) = %v but NextOpen = %v", ws, now, s.Open(now), next)
		}
		// Nothing open before next: every five minutes (windows and clock
		// changes fall on quarter hours), and the instant before.
		for m := now; m.Before(next); m = m.Add(5 * time.Minute) {
			if s.Open(m) {
				t.Fatalf("%+v: open at %v, before NextOpen(%v) = %v", ws, m, now, next)
			}
		}
		if next.After(now) && s.Open(next.Add(-time.Second)) {
			t.Fatalf("%+v: open just before NextOpen %v", ws, next)
		}
		end, ok := s.NextClose(now)
		if !ok {
			continue
		}
		if !s.Open(end.Add(-time.Second)) || s.Open(end) {
			t.Fatalf("%+v: NextClose(%v) = %v is not an open-to-closed edge", ws, now, end)
		}
		for m := next; m.Before(end); m = m.Add(7 * time.Minute) {
			if !s.Open(m) {
				t.Fatalf("%+v: closed at %v between NextOpen %v and NextClose %v", ws, m, next, end)
			}
		}
	}
}

// OpenFor counts only the time some window is open: a span that ends inside a
// window, one that runs over several windows (and over the two weeks each
// scan covers), and one over whole-day windows that touch.
func TestOpenFor(t *testing.T) {
	tuesday := []commonv1alpha1.MaintenanceWindow{win("10:00", "12:00", "", "Tuesday")}
	for _, tc := range []struct {
		name  string
		wins  []commonv1alpha1.MaintenanceWindow
		since string
		d     time.Duration
		want  string // RFC 3339; "" when never
	}{
		{"no windows: wall time", nil, "2026-11-24T09:00:00Z", 30 * time.Minute, "2026-11-24T09:30:00Z"},
		{"from before the window", tuesday, "2026-11-24T09:00:00Z", 30 * time.Minute, "2026-11-24T10:30:00Z"},
		{"from inside the window", tuesday, "2026-11-24T11:00:00Z", 30 * time.Minute, "2026-11-24T11:30:00Z"},
		{"the rest in the next week's window", tuesday, "2026-11-24T11:00:00Z", 90 * time.Minute, "2026-12-01T10:30:00Z"},
		{"a whole window, from its (exclusive) end", tuesday, "2026-11-24T12:00:00Z", 2 * time.Hour, "2026-12-01T12:00:00Z"},
		{"five windows, past a scan's range", tuesday, "2026-11-24T09:00:00Z", 10 * time.Hour, "2026-12-22T12:00:00Z"},
		{"whole days that touch", []commonv1alpha1.MaintenanceWindow{win("00:00", "00:00", "")}, "2026-11-24T09:00:00Z", 50 * time.Hour, "2026-11-26T11:00:00Z"},
		{"in a zone", []commonv1alpha1.MaintenanceWindow{win("22:00", "02:00", "Europe/Berlin", "Saturday")}, "2026-11-28T00:00:00Z", 5 * time.Hour, "2026-12-05T23:00:00+01:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sched(t, tc.wins...).OpenFor(at(t, tc.since), tc.d)
			if !ok || !got.Equal(at(t, tc.want)) {
				t.Errorf("OpenFor = %v, %v; want %s", got, ok, tc.want)
			}
		})
	}
}

// TestOpenForProperties checks, over random schedules, that the time open
// between since and OpenFor(since, d), counted in five-minute steps (windows,
// zone offsets and clock changes fall on quarter hours), is d, and that a
// window is open just before the instant returned.
func TestOpenForProperties(t *testing.T) {
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"}
	rng := rand.New(rand.NewSource(11))
	clock := func() string { return time.Date(0, 1, 1, rng.Intn(24), 15*rng.Intn(4), 0, 0, time.UTC).Format("15:04") }
	base := at(t, "2026-01-01T00:00:00Z")
	const step = 5 * time.Minute
	for i := 0; i < 60; i++ {
		ws := randomWindows(rng, clock, zones, 2, 3)
		s := sched(t, ws...)
		since := base.Add(time.Duration(rng.Intn(365*24*4)) * 15 * time.Minute)
		d := time.Duration(1+rng.Intn(12*4)) * 15 * time.Minute
		got, ok := s.OpenFor(since, d)
		if !ok {
			t.Fatalf("%+v: OpenFor(%v, %v) found nothing", ws, since, d)
		}
		var open time.Duration
		for m := since; m.Before(got); m = m.Add(step) {
			if s.Open(m) {
				open += step
			}
		}
		if open != d || !s.Open(got.Add(-time.Second)) {
			t.Fatalf("%+v: OpenFor(%v, %v) = %v, which has %v open before it", ws, since, d, got, open)
		}
	}
}

// randomWindows draws one to most windows from clock's times in random zones
// of zones, each opening on every weekday with odds one in dayOdds (on every
// day when none is drawn).
func randomWindows(rng *rand.Rand, clock func() string, zones []string, most, dayOdds int) []commonv1alpha1.MaintenanceWindow {
	days := []commonv1alpha1.Weekday{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	var ws []commonv1alpha1.MaintenanceWindow
	for n := 1 + rng.Intn(most); n > 0; n-- {
		w := win(clock(), clock(), zones[rng.Intn(len(zones))])
		for _, d := range days {
			if rng.Intn(dayOdds) == 0 {
				w.Days = append(w.Days, d)
			}
		}
		ws = append(ws, w)
	}
	return ws
}
