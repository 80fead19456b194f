package node

import (
	"errors"
	"testing"
	"time"
)

func TestHeartbeatStatusDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	failed := errors.New("unreachable")
	h := Heartbeat{Period: 10 * time.Second, ReportPeriod: time.Minute}
	h.wrote(at(0), nil)
	steps := []struct {
		name   string
		at     time.Duration
		renew  error
		report error // written when due
		due    bool
	}{
		{name: "registration", at: 0, due: false},
		{name: "on time", at: 10 * time.Second, due: false},
		{name: "a little late", at: 24 * time.Second, due: false},
		{name: "more than half a period late", at: 40 * time.Second, due: true},
		{name: "on time again", at: 50 * time.Second, due: false},
		{name: "renewal fails", at: 60 * time.Second, renew: failed, due: false},
		{name: "the next one writes the status", at: 70 * time.Second, due: true, report: failed},
		{name: "the status write failed: again", at: 80 * time.Second, due: true},
		{name: "quiet", at: 90 * time.Second, due: false},
		{name: "a report period after the last write", at: 140 * time.Second, due: true},
	}
	for _, s := range steps {
		due := h.renewal(at(s.at), s.renew)
		if due != s.due {
			t.Fatalf("%s: status due %v, want %v", s.name, due, s.due)
		}
		if due {
			h.wrote(at(s.at), s.report)
		}
	}
}
