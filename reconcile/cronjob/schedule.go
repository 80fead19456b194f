package cronjob

import (
	"time"

	"github.com/robfig/cron/v3"
)

// tooManyMissed is how many missed start times Kubernetes tolerates
// before it warns: past it the CronJob still runs once, for the most
// recent.
const tooManyMissed = 100

// mostRecent is the latest time of the schedule in (earliest, now], and
// how many such times there are, as Kubernetes' mostRecentScheduleTime:
// the count is computed from the interval between the first two times
// and corrected by walking, so that a year without a controller costs
// no year of steps. A zero time means none is due.
func mostRecent(s cron.Schedule, earliest, now time.Time) (time.Time, int64) {
	t1 := s.Next(earliest)
	if t1.IsZero() || t1.After(now) {
		return time.Time{}, 0
	}
	t2 := s.Next(t1)
	if t2.IsZero() || t2.After(now) {
		return t1, 1
	}
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval <= 0 {
		interval = 1
	}
	elapsed := int64(now.Sub(t1).Seconds())
	missed := elapsed/interval + 1
	recent := time.Unix(t1.Unix()+(missed-1)*interval, 0).In(t1.Location())
	if recent.After(now) || s.Next(recent.Add(-time.Second)) != recent {
		// Not a time of the schedule (its times are not evenly spaced):
		// walk from the first.
		recent, missed = t1, 1
	}
	for t := s.Next(recent); !t.IsZero() && !t.After(now); t = s.Next(t) {
		recent = t
		missed++
	}
	return recent, missed
}

// nextAfter is how long from now until the schedule's next time, a
// little past it so that the sync that wakes finds the time due.
func nextAfter(s cron.Schedule, now time.Time) time.Duration {
	next := s.Next(now)
	if next.IsZero() {
		return 0
	}
	return next.Sub(now) + 100*time.Millisecond
}
