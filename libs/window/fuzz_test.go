package window

import (
	"testing"
	"time"

	commonv1alpha1 "github.com/upshift-io/upshift/api/common/v1alpha1"
)

// FuzzSchedule feeds windows as a user might write them (any day set,
// clock strings, time zone) and any instant, and checks what every caller
// relies on: parsing never panics, and a parsed schedule's answers agree
// with each other. NextOpen is now exactly when the schedule is open, is
// never in the past and is open; NextClose is after now and closed.
func FuzzSchedule(f *testing.F) {
	for _, s := range []struct {
		days             uint8
		start, end, zone string
		at               int64
	}{
		{0b1000000, "22:00", "02:00", "Europe/Berlin", 1772916000}, // just before a Saturday-night window across midnight
		{0, "09:00", "17:00", "UTC", 1772960400},
		{0b1111111, "02:30", "03:30", "America/New_York", 1772953200}, // the spring-forward instant of 2026
		{0b0000001, "01:00", "01:00", "Europe/London", 1792886400},    // a whole Sunday, the fall-back day of 2026
		{0, "24:00", "25:00", "Mars/Olympus", 0},
	} {
		f.Add(s.days, s.start, s.end, s.zone, s.at)
	}
	days := []commonv1alpha1.Weekday{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	f.Fuzz(func(t *testing.T, dayBits uint8, start, end, zone string, at int64) {
		w := commonv1alpha1.MaintenanceWindow{Start: start, End: end, TimeZone: zone}
		for i, d := range days {
			if dayBits&(1<<i) != 0 {
				w.Days = append(w.Days, d)
			}
		}
		s, err := FromAPI([]commonv1alpha1.MaintenanceWindow{w})
		if err != nil {
			return
		}
		// Instants from 1970 to about 2100: what a cluster's clock can say.
		now := time.Unix(at%(130*365*24*3600), 0).UTC()
		if now.Before(time.Unix(0, 0)) {
			now = now.Add(130 * 365 * 24 * time.Hour)
		}
		open := s.Open(now)
		next, ok := s.NextOpen(now)
		if !ok {
			t.Fatalf("%+v: never opens at %s", w, now)
		}
		if open != next.Equal(now) {
			t.Fatalf("%+v at %s: Open %v but NextOpen %s", w, now, open, next)
		}
		if next.Before(now) || !s.Open(next) {
			t.Fatalf("%+v at %s: NextOpen %s is in the past or closed", w, now, next)
		}
		if c, ok := s.NextClose(now); ok {
			if !c.After(now) || s.Open(c) {
				t.Fatalf("%+v at %s: NextClose %s is not after now or is open", w, now, c)
			}
			if !open && !c.After(next) {
				t.Fatalf("%+v at %s: closes at %s before it opens at %s", w, now, c, next)
			}
		}
	})
}
