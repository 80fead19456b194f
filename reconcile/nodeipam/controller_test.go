package nodeipam

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
	"github.com/berth-dev/berth/testtool"
)

// cluster is a control plane's store on a bolt file, which a test can
// close and open again as a restart does, with the controller running
// over it.
type cluster struct {
	t     *testing.T
	path  string
	clock *clocktesting.FakeClock
	store *store.Store
	stop  func()
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, path: filepath.Join(t.TempDir(), "state.db"), clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	c.open()
	t.Cleanup(c.close)
	return c
}

func (c *cluster) open() {
	c.t.Helper()
	b, err := bolt.Open(c.path)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.store, err = store.New(b, store.Options{Clock: c.clock}); err != nil {
		c.t.Fatal(err)
	}
}

// start runs the controller over cidr until stop or the test's end.
func (c *cluster) start(cidr string, mask int) {
	c.t.Helper()
	rng, err := NewRange(cidr, mask)
	if err != nil {
		c.t.Fatal(err)
	}
	ctrl := NewController(c.store, rng, Options{Clock: c.clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx, 1) }()
	c.stop = func() {
		cancel()
		if err := <-done; err != nil {
			c.t.Error(err)
		}
		c.stop = nil
	}
}

func (c *cluster) close() {
	if c.stop != nil {
		c.stop()
	}
	if c.store != nil {
		c.store.Close()
		c.store = nil
	}
}

// restart stops the controller and the store and opens both again, as a
// server that restarts (or a new leader over the same state) does.
func (c *cluster) restart(cidr string, mask int) {
	c.close()
	c.open()
	c.start(cidr, mask)
}

func (c *cluster) create(name, podCIDR string) {
	c.t.Helper()
	// Creation times order the nodes' precedence.
	c.clock.Step(time.Second)
	n := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: api.NodeSpec{PodCIDR: podCIDR}}
	if _, err := c.store.Create(context.Background(), n); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) delete(name string) {
	c.t.Helper()
	if _, err := c.store.Delete(context.Background(), nodeKind, "", name, store.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) podCIDR(name string) (*api.Node, error) {
	obj, err := c.store.Get(nodeKind, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*api.Node), nil
}

// waitCIDR waits until node name holds want in podCIDR and podCIDRs.
func (c *cluster) waitCIDR(name, want string) {
	c.t.Helper()
	testtool.WaitFor(c.t, 10*time.Second, fmt.Sprintf("node %s's podCIDR %s", name, want), func() error {
		n, err := c.podCIDR(name)
		if err != nil {
			return err
		}
		if n.Spec.PodCIDR != want || !slices.Equal(n.Spec.PodCIDRs, []string{want}) {
			return fmt.Errorf("podCIDR %q, podCIDRs %q", n.Spec.PodCIDR, n.Spec.PodCIDRs)
		}
		return nil
	})
}

// events returns the messages of the CIDRNotAvailable events on node name.
func (c *cluster) events(name string) []string {
	c.t.Helper()
	objs, _, err := c.store.List(api.KindOf(&api.Event{}), store.Filter{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		e := o.(*api.Event)
		if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == name && e.Reason == ReasonCIDRNotAvailable {
			out = append(out, e.Message)
		}
	}
	return out
}

// TestControllerAssignsFreesAndSurvivesRestart runs the controller over a
// bolt store: nodes get distinct ranges as they register, a deleted
// node's range goes to the next, a user's own range is honoured, and after
// a restart the allocator, rebuilt from the nodes, hands out no range
// twice.
func TestControllerAssignsFreesAndSurvivesRestart(t *testing.T) {
	const cidr = "198.18.0.0/16"
	c := newCluster(t)
	c.create("own", "198.18.1.0/24") // before the controller runs
	c.start(cidr, 24)
	c.waitCIDR("own", "198.18.1.0/24")
	c.create("a", "")
	c.waitCIDR("a", "198.18.0.0/24")
	c.create("b", "")
	c.waitCIDR("b", "198.18.2.0/24")

	c.delete("a")
	c.create("c", "")
	c.waitCIDR("c", "198.18.0.0/24")

	// Nodes that register while no controller runs get theirs when the
	// next one starts, from the ranges the store says are free.
	c.close()
	c.open()
	c.create("d", "")
	c.create("e", "")
	c.start(cidr, 24)
	c.waitCIDR("d", "198.18.3.0/24")
	c.waitCIDR("e", "198.18.4.0/24")
	c.restart(cidr, 24)
	c.create("f", "")
	c.waitCIDR("f", "198.18.5.0/24")

	seen := map[string]string{}
	for _, name := range []string{"own", "b", "c", "d", "e", "f"} {
		n, err := c.podCIDR(name)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[n.Spec.PodCIDR]; ok {
			t.Errorf("nodes %s and %s both hold %s", other, name, n.Spec.PodCIDR)
		}
		seen[n.Spec.PodCIDR] = name
	}
}

// TestControllerReportsExhaustionAndConflicts fills a range of two node
// ranges: the third node gets a CIDRNotAvailable event, once, and the
// range freed by a deleted node; a node whose own range is outside the
// cluster CIDR or another's is reported and left as set.
func TestControllerReportsExhaustionAndConflicts(t *testing.T) {
	c := newCluster(t)
	c.start("198.18.0.0/23", 24)
	c.create("a", "")
	c.waitCIDR("a", "198.18.0.0/24")
	c.create("b", "")
	c.waitCIDR("b", "198.18.1.0/24")
	c.create("z", "")
	testtool.WaitFor(t, 10*time.Second, "a CIDRNotAvailable event on node z", func() error {
		if evs := c.events("z"); len(evs) != 1 || !strings.Contains(evs[0], "no pod CIDR left") {
			return fmt.Errorf("events %q", evs)
		}
		return nil
	})
	c.create("outside", "198.19.0.0/24")
	c.create("dup", "198.18.1.0/24")
	testtool.WaitFor(t, 10*time.Second, "CIDRNotAvailable events on nodes outside and dup", func() error {
		out, dup := c.events("outside"), c.events("dup")
		if len(out) != 1 || !strings.Contains(out[0], "outside the cluster CIDR 198.18.0.0/23") {
			return fmt.Errorf("outside: events %q", out)
		}
		if len(dup) != 1 || !strings.Contains(dup[0], "overlaps node b's") {
			return fmt.Errorf("dup: events %q", dup)
		}
		return nil
	})
	// Those passes reported z again no more.
	if evs := c.events("z"); len(evs) != 1 {
		t.Errorf("node z: events %q, want one", evs)
	}
	if n, _ := c.podCIDR("z"); n.Spec.PodCIDR != "" {
		t.Errorf("node z holds %q", n.Spec.PodCIDR)
	}

	c.delete("a")
	c.waitCIDR("z", "198.18.0.0/24")
	for _, name := range []string{"outside", "dup"} {
		n, err := c.podCIDR(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Spec.PodCIDRs) != 0 {
			t.Errorf("node %s: podCIDRs %q set for a range not honoured", name, n.Spec.PodCIDRs)
		}
	}
}

// TestTwoAllocatorsNeverShareARange runs two controllers over one store at
// once, as an old and a new leader may overlap for a moment: each pass
// reads and writes the Nodes in one transaction, so while nodes register
// the two never hand one range to two nodes.
func TestTwoAllocatorsNeverShareARange(t *testing.T) {
	c := newCluster(t)
	rng, err := NewRange("198.18.0.0/16", 24)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		testtool.Run(t, fmt.Sprintf("allocator %d", i), func(ctx context.Context) error {
			return NewController(c.store, rng, Options{Clock: c.clock}).Run(ctx, 2)
		})
	}
	const nodes = 40
	for i := range nodes {
		c.create(fmt.Sprintf("n%02d", i), "")
	}
	testtool.WaitFor(t, 20*time.Second, "every node's podCIDR", func() error {
		seen := map[string]string{}
		for i := range nodes {
			name := fmt.Sprintf("n%02d", i)
			n, err := c.podCIDR(name)
			if err != nil {
				return err
			}
			if n.Spec.PodCIDR == "" {
				return fmt.Errorf("node %s has none yet", name)
			}
			if other, ok := seen[n.Spec.PodCIDR]; ok {
				t.Fatalf("nodes %s and %s both hold %s", other, name, n.Spec.PodCIDR)
			}
			seen[n.Spec.PodCIDR] = name
		}
		return nil
	})
}
