package etcd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// A follower whose connection to etcd hangs, passing nothing but never
// failing, drops it once etcd stops answering its pings and follows on
// over a new one, rather than serving what it had for as long as the
// connection hangs.
func TestFollowerOverAHungConnectionFollowsOn(t *testing.T) {
	ep := etcdtest.Start(t)
	_, lead := leader(t, ep, nil)
	p := testtool.StartStallProxy(t, strings.TrimPrefix(ep, "http://"))
	follower := newStore(t, open(t, "http://"+p.Addr, func(o *Options) { o.keepAlive = 10 * time.Second }))
	writeSome(t, lead, 1, "a")
	caughtUp(t, lead, follower)
	p.Hang()
	writeSome(t, lead, 2, "b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := follower.WaitRevision(ctx, lead.Revision()); err != nil {
		t.Fatalf("the follower is at revision %d, the leader at %d: %v", follower.Revision(), lead.Revision(), err)
	}
	caughtUp(t, lead, follower)
}
