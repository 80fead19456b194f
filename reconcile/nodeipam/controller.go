package nodeipam

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "node-ipam-controller"

// EventComponent is the source of the controller's events.
const EventComponent = "node-ipam-controller"

// ReasonCIDRNotAvailable is the reason of the Warning event on a Node that
// gets no pod range, or whose own cannot be honoured; the reason
// kube-controller-manager's allocator gives.
const ReasonCIDRNotAvailable = "CIDRNotAvailable"

// passKey is the controller's only key: a pass looks at every node, since
// which range is free depends on all of them.
const passKey = "nodes"

var nodeKind = api.KindOf(&api.Node{})

// Options configure the controller.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events records the CIDRNotAvailable events; nil: a writer of the
	// controller's own (tests).
	Events *event.Recorder
}

// Allocator is the controller's Reconciler: a pass reads every Node inside
// one store transaction and writes the ranges Allocate assigns in it, so
// no writer between the read and the write can take a range twice.
type Allocator struct {
	store  *store.Store
	rng    *Range
	log    *slog.Logger
	events *event.Recorder

	mu sync.Mutex
	// reported holds the message last reported for each rejected node, so
	// a pass that finds it still rejected for the same reason says nothing
	// more.
	reported map[string]string
}

// NewAllocator returns the Reconciler alone, handing out rng's node
// ranges, for tests and for callers that run it under their own
// Controller.
func NewAllocator(s *store.Store, rng *Range, opts Options) *Allocator {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = event.NewWriter(s, event.Options{Clock: opts.Clock, Logger: opts.Logger}).Recorder(EventComponent, "")
	}
	return &Allocator{store: s, rng: rng, log: opts.Logger.With("controller", Name), events: opts.Events, reported: map[string]string{}}
}

// NewController returns the node IPAM controller: a pass at start, and
// whenever a node comes, goes or changes its podCIDR. Run it with
// Controller.Run(ctx, workers).
func NewController(s *store.Store, rng *Range, opts Options) *reconcile.Controller {
	return reconcile.NewController(Name, NewAllocator(s, rng, opts), reconcile.Options{
		Clock:    opts.Clock,
		Backoff:  opts.Backoff,
		Logger:   opts.Logger,
		ListKeys: func(context.Context) ([]string, error) { return []string{passKey}, nil },
		Store:    s,
		Watches:  []reconcile.Watch{{Kind: nodeKind, Keys: nodeKeys}},
	})
}

// nodeKeys asks for a pass when a node comes or goes (freeing a range a
// rejected node may take), or its ranges change; not at every heartbeat.
func nodeKeys(e store.Event) []string {
	if e.Type == store.Modified && e.Old != nil {
		old, n := e.Old.(*api.Node), e.Object.(*api.Node)
		if old.Spec.PodCIDR == n.Spec.PodCIDR && slices.Equal(old.Spec.PodCIDRs, n.Spec.PodCIDRs) {
			return nil
		}
	}
	return []string{passKey}
}

// Reconcile makes one pass.
func (a *Allocator) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var (
		plan     Plan
		reported map[string]string
	)
	_, err := a.store.Txn(ctx, func(tx *store.Txn) error {
		objs, err := tx.List(nodeKind, store.Filter{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		nodes := make([]*api.Node, len(objs))
		for i, o := range objs {
			nodes[i] = o.(*api.Node)
		}
		slices.SortFunc(nodes, func(x, y *api.Node) int {
			if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
				return c
			}
			return cmp.Compare(x.Name, y.Name)
		})
		in := make([]Node, len(nodes))
		for i, n := range nodes {
			in[i] = Node{Name: n.Name, PodCIDR: podCIDR(n)}
		}
		plan = a.rng.Allocate(in)
		reported = map[string]string{}
		for _, n := range nodes {
			if err := plan.Rejected[n.Name]; err != nil {
				if err := a.reject(tx, n, err, reported); err != nil {
					return err
				}
				continue
			}
			want := podCIDR(n)
			if p, ok := plan.Assign[n.Name]; ok {
				want = p.String()
			}
			if n.Spec.PodCIDR == want && slices.Equal(n.Spec.PodCIDRs, []string{want}) {
				continue
			}
			next := n.DeepCopy()
			next.Spec.PodCIDR, next.Spec.PodCIDRs = want, []string{want}
			if _, err := tx.Update(next); err != nil {
				return fmt.Errorf("set podCIDR of node %s: %w", n.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	a.reported = reported
	for name, p := range plan.Assign {
		a.log.Info("assigned pod CIDR", "node", name, "podCIDR", p.String())
	}
	return reconcile.Result{}, nil
}

// reject records a Warning event on a node that gets no range, inside the
// pass's transaction, unless the last pass reported the same.
func (a *Allocator) reject(tx *store.Txn, n *api.Node, why error, reported map[string]string) error {
	msg := fmt.Sprintf("node %s: %v", n.Name, why)
	reported[n.Name] = msg
	if a.reported[n.Name] == msg {
		return nil
	}
	a.log.Warn("pod CIDR not available", "node", n.Name, "err", why)
	return a.events.Record(tx, n, api.EventTypeWarning, ReasonCIDRNotAvailable, msg)
}

// podCIDR is the range node holds: spec.podCIDR, or the first of
// spec.podCIDRs when only those were set.
func podCIDR(n *api.Node) string {
	if n.Spec.PodCIDR == "" && len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs[0]
	}
	return n.Spec.PodCIDR
}
