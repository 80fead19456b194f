package node

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// LeaseDuration is the leaseDurationSeconds of a node's Lease: the
// server's default grace period, after which a node whose Lease was not
// renewed is unreachable.
const LeaseDuration = 40 * time.Second

var leaseKind = api.KindOf(&api.Lease{})

// LeaseRenewer renews a node's Lease in kube-node-lease, the heartbeat the
// node lifecycle controller reads: one small write from the copy last
// written, read again (or made) when that copy is stale or gone. The
// agent's Manager has one, and so has each of berth sim's hollow
// agents. It is not safe for concurrent use.
type LeaseRenewer struct {
	Client *client.Client
	// Node names the node, and so its Lease and its holderIdentity, as the
	// kubelet's does.
	Node string
	// ID is the agent's node ID, which the Lease carries as the Node does,
	// in AnnotationNodeID, so that an agent does not renew the Lease of a
	// Node another agent registered after it was deleted, and so hide that
	// agent's silence. Empty records and checks none: berth sim's hollow
	// agents are alone on their nodes.
	ID string
	// Owner returns the Node's UID, which the Lease names as its owner so
	// that deleting the Node deletes it; "" names none.
	Owner func() types.UID
	// Lost is called when the Lease was deleted under the renewer, or
	// carries another agent's node ID, before the renewer makes or takes
	// it: the Node may be gone too, or another agent's. Lost looks at the
	// Node: it registers it again if it is gone (so that Owner returns its
	// new UID), and returns a *ClaimedError if another agent holds it,
	// which Renew returns; nil says the Node is this agent's, and a Lease
	// that names another is left from the Node before, not yet deleted with
	// it. Nil Lost: a deleted Lease is made again, and one that names
	// another agent is refused with a *ClaimedError.
	Lost func(ctx context.Context) error

	lease *api.Lease
}

// Renew renews the Lease at now, making it if there is none. It returns a
// *ClaimedError, and renews nothing, when the Lease and the Node are
// another agent's (see Lost).
func (r *LeaseRenewer) Renew(ctx context.Context, now time.Time) error {
	for attempt := 0; ; attempt++ {
		var written api.Object
		var err error
		if r.lease == nil {
			written, err = r.readOrCreate(ctx, now)
		} else {
			next := r.lease.DeepCopy()
			r.hold(next, now)
			written, err = r.Client.Update(ctx, next)
			if client.IsNotFound(err) && r.Lost != nil {
				if lerr := r.Lost(ctx); lerr != nil {
					return lerr
				}
			}
		}
		if err == nil {
			r.lease = written.(*api.Lease)
			return nil
		}
		r.lease = nil
		if IsClaimed(err) {
			return err // it names the node
		}
		if !(client.IsConflict(err) || client.IsNotFound(err) || client.IsAlreadyExists(err)) || attempt >= 3 {
			return fmt.Errorf("renew lease of node %s: %w", r.Node, err)
		}
	}
}

// readOrCreate renews the stored Lease, or makes it if there is none. A
// Lease that names another agent is renewed only if Lost finds the Node
// this agent's.
func (r *LeaseRenewer) readOrCreate(ctx context.Context, now time.Time) (api.Object, error) {
	obj, err := r.Client.Get(ctx, leaseKind, api.NamespaceNodeLease, r.Node)
	if client.IsNotFound(err) {
		l := &api.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceNodeLease, Name: r.Node}}
		r.hold(l, now)
		return r.Client.Create(ctx, l)
	}
	if err != nil {
		return nil, err
	}
	l := obj.(*api.Lease)
	if id := l.Annotations[AnnotationNodeID]; r.ID != "" && id != "" && id != r.ID {
		if r.Lost == nil {
			return nil, &ClaimedError{Node: r.Node, ID: id, Own: r.ID}
		}
		if err := r.Lost(ctx); err != nil {
			return nil, err
		}
	}
	r.hold(l, now)
	return r.Client.Update(ctx, l)
}

// hold sets what the agent says in its Lease: that it holds it (by the
// node's name and its node ID), for how long, renewed at now, owned by
// the Node.
func (r *LeaseRenewer) hold(l *api.Lease, now time.Time) {
	holder, seconds, renew := r.Node, int32(LeaseDuration/time.Second), metav1.NewMicroTime(now)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &seconds, &renew
	if r.ID != "" {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationNodeID] = r.ID
	}
	if uid := r.ownerUID(); uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: r.Node, UID: uid}}
	}
}

func (r *LeaseRenewer) ownerUID() types.UID {
	if r.Owner == nil {
		return ""
	}
	return r.Owner()
}
