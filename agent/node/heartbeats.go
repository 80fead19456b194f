package node

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"
)

// Heartbeat is a node's heartbeat: its Lease renewed every Period, and its
// Node's status written, besides when it changes, after a renewal that
// failed or came late (the lifecycle controller may have marked the node
// Unknown meanwhile) and once every ReportPeriod regardless, as the
// kubelet does. The agent's Manager keeps one, and so does each of
// berth sim's hollow agents. It is not safe for concurrent use.
type Heartbeat struct {
	Lease LeaseRenewer
	// WriteStatus writes the Node's status.
	WriteStatus func(ctx context.Context) error
	// Period is how often the Lease is renewed; a renewal more than half a
	// period late counts as missed.
	Period time.Duration
	// ReportPeriod is how often the status is written regardless.
	ReportPeriod time.Duration
	Clock        clock.PassiveClock

	renewed, reported time.Time
	missed            bool
}

// Registered records the status written at now by the node's
// registration, and renews the Lease.
func (h *Heartbeat) Registered(ctx context.Context, now time.Time) error {
	h.wrote(now, nil)
	err := h.Lease.Renew(ctx, now)
	h.renewal(now, err)
	return err
}

// Beat renews the Lease and writes the status if it is due. When the
// Lease cannot be renewed the status is written in its place: its Ready
// condition carries a heartbeat too, which the lifecycle controller reads
// as well, so a node whose Lease a server will not take (a server from
// before leases, or one whose kube-node-lease was deleted) stays alive.
// When another agent holds the Node (a *ClaimedError) nothing is
// written.
func (h *Heartbeat) Beat(ctx context.Context) error {
	now := h.Clock.Now()
	err := h.Lease.Renew(ctx, now)
	if IsClaimed(err) {
		return err
	}
	if due := h.renewal(now, err); !due && err == nil {
		return nil
	}
	return errors.Join(err, h.Report(ctx))
}

// Report writes the status now.
func (h *Heartbeat) Report(ctx context.Context) error {
	now := h.Clock.Now()
	err := h.WriteStatus(ctx)
	h.wrote(now, err)
	return err
}

// renewal records a renewal begun at now that ended with err, and reports
// whether the status is due.
func (h *Heartbeat) renewal(now time.Time, err error) (statusDue bool) {
	if err != nil || (!h.renewed.IsZero() && now.Sub(h.renewed) > h.Period*3/2) {
		h.missed = true
	}
	if err != nil {
		return false
	}
	h.renewed = now
	return h.missed || now.Sub(h.reported) >= h.ReportPeriod
}

// wrote records a status write begun at now that ended with err; after a
// failed one the status is due at the next renewal.
func (h *Heartbeat) wrote(now time.Time, err error) {
	if err != nil {
		h.missed = true
		return
	}
	h.reported, h.missed = now, false
}
