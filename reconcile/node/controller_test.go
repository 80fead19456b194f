package node

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// fixture is a real in-memory store on a fake clock, with an agent's
// heartbeat played by the test.
type fixture struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	store *store.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	s, err := store.New(store.Memory{}, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{t: t, clock: clk, store: s}
}

func (f *fixture) create(obj api.Object) api.Object {
	f.t.Helper()
	out, err := f.store.Create(context.Background(), obj)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// addNode registers a node that has just heartbeated Ready=True.
func (f *fixture) addNode(name string) {
	f.t.Helper()
	n := testNode(name, api.ConditionTrue, 0)
	n.UID, n.ResourceVersion, n.CreationTimestamp = "", "", metav1.Time{}
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(f.clock.Now())
	}
	f.create(n)
}

// addPod binds a running, ready pod to a node.
func (f *fixture) addPod(name, node string, opts ...podOpt) {
	f.t.Helper()
	p := testPod(name, node, opts...)
	p.UID, p.ResourceVersion = "", ""
	f.create(p)
}

// beat is the agent renewing its Ready=True heartbeat, as it does every
// 10s; the other conditions it owns are reported healthy again too.
func (f *fixture) beat(name string) {
	f.t.Helper()
	obj, err := f.store.Get(nodeKind, "", name)
	if err != nil {
		f.t.Fatal(err)
	}
	n := obj.(*api.Node).DeepCopy()
	now := metav1.NewTime(f.clock.Now())
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		want := api.ConditionFalse
		if c.Type == api.NodeReady {
			want = api.ConditionTrue
			c.Reason, c.Message = "AgentReady", ""
		}
		if c.Status != want {
			c.Status, c.LastTransitionTime = want, now
		}
		c.LastHeartbeatTime = now
	}
	if _, err := f.store.Update(context.Background(), n); err != nil {
		f.t.Fatal(err)
	}
}

// renew is the agent renewing its node's Lease, creating it the first
// time.
func (f *fixture) renew(name string) {
	f.t.Helper()
	now := metav1.NewMicroTime(f.clock.Now())
	obj, err := f.store.Get(leaseKind, api.NamespaceNodeLease, name)
	if store.IsNotFound(err) {
		f.create(&api.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceNodeLease, Name: name},
			Spec: api.LeaseSpec{HolderIdentity: &name, RenewTime: &now}})
		return
	}
	if err != nil {
		f.t.Fatal(err)
	}
	l := obj.(*api.Lease).DeepCopy()
	l.Spec.RenewTime = &now
	if _, err := f.store.Update(context.Background(), l); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) node(name string) *api.Node {
	f.t.Helper()
	obj, err := f.store.Get(nodeKind, "", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*api.Node)
}

func (f *fixture) pod(name string) *api.Pod {
	f.t.Helper()
	obj, err := f.store.Get(podKind, "default", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*api.Pod)
}

// events lists "object reason" for every event recorded.
func (f *fixture) events() []string {
	f.t.Helper()
	objs, _, err := f.store.List(api.KindOf(&api.Event{}), store.Filter{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		e := o.(*api.Event)
		out = append(out, e.InvolvedObject.Name+" "+e.Reason)
	}
	slices.Sort(out)
	return out
}

func podCondition(p *api.Pod, t api.PodConditionType) api.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestReconcileNodeStopsHeartbeating drives passes by hand on a fake clock:
// the node is marked Unknown and tainted after the grace period, its pods
// are marked not ready, deleted after the eviction timeout and not before,
// its mirror pod survives, and its taints go when it heartbeats again.
func TestReconcileNodeStopsHeartbeating(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addNode("b")
	f.addPod("web", "a")
	f.addPod("static-a", "a", mirror)
	f.addPod("other", "b")
	r := NewReconciler(f.store, Options{Clock: f.clock, GracePeriod: 40 * time.Second, EvictionTimeout: 5 * time.Second})
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), passKey); err != nil {
			t.Fatal(err)
		}
	}
	// advance moves time on, with b heartbeating and a silent.
	advance := func(d time.Duration) {
		f.clock.Step(d)
		f.beat("b")
		pass()
	}

	pass()
	advance(40 * time.Second)
	if a := f.node("a"); nodeReady(a) != api.ConditionTrue || len(a.Spec.Taints) != 0 {
		t.Fatalf("node a changed within the grace period: %+v", a)
	}

	advance(5 * time.Second)
	a := f.node("a")
	for _, c := range a.Status.Conditions {
		if c.Status != api.ConditionUnknown || c.Reason != ReasonNodeStatusUnknown {
			t.Errorf("node a condition %s is %s (%s), want Unknown", c.Type, c.Status, c.Reason)
		}
	}
	if got := taintStrings(a.Spec.Taints); !slices.Equal(got, []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute@-45s"}) {
		t.Errorf("node a taints %v", got)
	}
	if b := f.node("b"); nodeReady(b) != api.ConditionTrue || len(b.Spec.Taints) != 0 {
		t.Errorf("node b changed: %+v", b)
	}
	web := f.pod("web")
	if podCondition(web, api.PodReady) != api.ConditionFalse || podCondition(web, api.ContainersReady) != api.ConditionFalse {
		t.Errorf("pod web still ready: %+v", web.Status.Conditions)
	}
	if podCondition(f.pod("other"), api.PodReady) != api.ConditionTrue {
		t.Error("pod other on the healthy node marked not ready")
	}
	if web.DeletionTimestamp != nil {
		t.Fatal("pod web deleted at once")
	}

	advance(4 * time.Second)
	if f.pod("web").DeletionTimestamp != nil {
		t.Fatal("pod web deleted before the eviction timeout")
	}

	advance(time.Second)
	if f.pod("web").DeletionTimestamp == nil {
		t.Error("pod web not deleted after the eviction timeout")
	}
	if f.pod("static-a").DeletionTimestamp != nil {
		t.Error("mirror pod deleted")
	}
	if f.pod("other").DeletionTimestamp != nil {
		t.Error("pod of the healthy node deleted")
	}
	ev := f.events()
	for _, want := range []string{"a NodeUnreachable", "web NodeNotReady", "static-a NodeNotReady", "web TaintManagerEviction"} {
		if countOf(ev, want) != 1 {
			t.Errorf("events %q: want one %q", ev, want)
		}
	}
	if countOf(ev, "static-a TaintManagerEviction") != 0 {
		t.Errorf("events %q: the mirror pod was evicted", ev)
	}

	f.beat("a")
	pass()
	if a := f.node("a"); nodeReady(a) != api.ConditionTrue || len(a.Spec.Taints) != 0 {
		t.Errorf("node a back: Ready %s, taints %v", nodeReady(a), taintStrings(a.Spec.Taints))
	}
	if countOf(f.events(), "a NodeReady") != 1 {
		t.Errorf("events %q: want one a NodeReady", f.events())
	}
	// Level-triggered: another pass writes nothing.
	rev := f.store.Revision()
	pass()
	if f.store.Revision() != rev {
		t.Error("a pass with nothing to do wrote")
	}
}

// TestReconcileFullDisruption: when every node goes dark at once, nothing
// is evicted, and each node gets one event for the transition.
// TestReconcileLeaseRenewals: nodes whose agents renew their Leases and
// never post status again stay Ready; the one that stops renewing is
// marked unreachable once the grace period has passed.
func TestReconcileLeaseRenewals(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addNode("b")
	r := NewReconciler(f.store, Options{Clock: f.clock, GracePeriod: 40 * time.Second, EvictionTimeout: 5 * time.Second})
	for i := 0; i < 12; i++ { // two minutes, a renewal every 10s
		f.renew("b")
		if i < 3 {
			f.renew("a")
		}
		if _, err := r.Reconcile(context.Background(), passKey); err != nil {
			t.Fatal(err)
		}
		f.clock.Step(10 * time.Second)
	}
	if b := f.node("b"); nodeReady(b) != api.ConditionTrue || len(b.Spec.Taints) != 0 {
		t.Errorf("b, renewing: Ready=%s taints %v", nodeReady(b), b.Spec.Taints)
	}
	if a := f.node("a"); nodeReady(a) != api.ConditionUnknown {
		t.Errorf("a, silent for 90s: Ready=%s", nodeReady(a))
	}
}

func TestReconcileFullDisruption(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addNode("b")
	f.addPod("web-a", "a")
	f.addPod("web-b", "b")
	r := NewReconciler(f.store, Options{Clock: f.clock})
	for range 7 {
		f.clock.Step(10 * time.Second)
		if _, err := r.Reconcile(context.Background(), passKey); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b"} {
		n := f.node(name)
		if nodeReady(n) != api.ConditionUnknown {
			t.Errorf("node %s Ready %s", name, nodeReady(n))
		}
		if got := taintStrings(n.Spec.Taints); len(got) != 1 || len(noExecuteTaints(n.Spec.Taints, true)) != 0 {
			t.Errorf("node %s taints %v: want NoSchedule only", name, got)
		}
		if p := f.pod("web-" + name); p.DeletionTimestamp != nil {
			t.Errorf("pod web-%s deleted", name)
		}
	}
	ev := f.events()
	if countOf(ev, "a FullDisruption") != 1 || countOf(ev, "b FullDisruption") != 1 {
		t.Errorf("events %q: want one FullDisruption per node", ev)
	}

	// b comes back: a is tainted NoExecute afresh and evicted only after
	// the eviction timeout from now.
	f.beat("b")
	if _, err := r.Reconcile(context.Background(), passKey); err != nil {
		t.Fatal(err)
	}
	if f.pod("web-a").DeletionTimestamp != nil {
		t.Error("pod web-a deleted as soon as the disruption ended")
	}
	f.clock.Step(5 * time.Second)
	f.beat("b")
	if _, err := r.Reconcile(context.Background(), passKey); err != nil {
		t.Fatal(err)
	}
	if f.pod("web-a").DeletionTimestamp == nil {
		t.Error("pod web-a not deleted after the eviction timeout")
	}
	if countOf(f.events(), "a FullDisruptionEnded") != 1 {
		t.Errorf("events %q: want one a FullDisruptionEnded", f.events())
	}
}

// TestReconcileConflictRetries: a heartbeat that lands between the
// controller's read and its write wins; the pass reports the conflict so it
// is retried, and the retry sees the fresh heartbeat.
func TestReconcileConflictRetries(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addNode("b")
	r := NewReconciler(f.store, Options{Clock: f.clock})
	if _, err := r.Reconcile(context.Background(), passKey); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(41 * time.Second)
	f.beat("b")
	snap := f.store.Snapshot()
	objs, err := snap.List(nodeKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*api.Node
	for _, o := range objs {
		nodes = append(nodes, o.(*api.Node))
	}
	plan := assess(nodes, nil, func(string) []*api.Pod { return nil }, f.clock.Now(), r.cfg, r.state)
	f.beat("a") // the agent got through just in time
	var errs []error
	for _, a := range plan.Actions {
		errs = append(errs, r.apply(context.Background(), a))
	}
	if err := errors.Join(errs...); !store.IsConflict(err) {
		t.Fatalf("apply over a fresh heartbeat: %v, want a conflict", err)
	}
	if _, err := r.Reconcile(context.Background(), passKey); err != nil {
		t.Fatal(err)
	}
	if a := f.node("a"); nodeReady(a) != api.ConditionTrue || len(a.Spec.Taints) != 0 {
		t.Errorf("node a: Ready %s, taints %v", nodeReady(a), taintStrings(a.Spec.Taints))
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events of a write that did not happen: %q", ev)
	}
}

// TestReconcileAfterRestart: a control plane that was down longer than
// the grace period gives every node a full grace period when it starts,
// rather than finding every heartbeat stale at once.
func TestReconcileAfterRestart(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addNode("b")
	f.addPod("web", "b")
	f.clock.Step(10 * time.Minute)
	r := NewReconciler(f.store, Options{Clock: f.clock})
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), passKey); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	for _, name := range []string{"a", "b"} {
		if n := f.node(name); nodeReady(n) != api.ConditionTrue || len(n.Spec.Taints) != 0 {
			t.Errorf("node %s marked at start: Ready %s, taints %v", name, nodeReady(n), taintStrings(n.Spec.Taints))
		}
	}
	// a's agent reconnects; b's does not.
	f.clock.Step(20 * time.Second)
	f.beat("a")
	pass()
	f.clock.Step(21 * time.Second)
	f.beat("a")
	pass()
	if n := f.node("b"); nodeReady(n) != api.ConditionUnknown {
		t.Errorf("node b silent for the grace period: Ready %s", nodeReady(n))
	}
	if n := f.node("a"); nodeReady(n) != api.ConditionTrue {
		t.Errorf("node a heartbeating: Ready %s", nodeReady(n))
	}
}

func TestNodeKeys(t *testing.T) {
	ready := testNode("n", api.ConditionTrue, 0)
	beat := testNode("n", api.ConditionTrue, -10*time.Second)
	notReady := testNode("n", api.ConditionFalse, 0)
	tainted := testNode("n", api.ConditionTrue, 0, withTaints(api.Taint{Key: api.TaintNodeNotReady, Effect: api.TaintEffectNoSchedule}))
	userTaint := testNode("n", api.ConditionTrue, 0, withTaints(api.Taint{Key: "dedicated", Value: "db", Effect: api.TaintEffectNoSchedule}))
	tests := []struct {
		name string
		e    store.Event
		pass bool
	}{
		{"joins Ready", store.Event{Type: store.Added, Object: ready}, false},
		{"joins Ready with a taint of its own", store.Event{Type: store.Added, Object: userTaint}, false},
		{"joins not Ready", store.Event{Type: store.Added, Object: notReady}, true},
		{"joins without status", store.Event{Type: store.Added, Object: testNode("n", "", 0, neverPosted(time.Minute))}, true},
		{"joins Ready with a stale not-ready taint", store.Event{Type: store.Added, Object: tainted}, true},
		{"heartbeat", store.Event{Type: store.Modified, Object: beat, Old: ready}, false},
		{"goes not Ready", store.Event{Type: store.Modified, Object: notReady, Old: ready}, true},
		{"joins cordoned", store.Event{Type: store.Added, Object: testNode("n", api.ConditionTrue, 0, cordoned)}, true},
		{"cordoned", store.Event{Type: store.Modified, Object: testNode("n", api.ConditionTrue, 0, cordoned), Old: ready}, true},
		{"uncordoned", store.Event{Type: store.Modified, Object: ready, Old: testNode("n", api.ConditionTrue, 0, cordoned)}, true},
		{"under memory pressure", store.Event{Type: store.Modified, Object: testNode("n", api.ConditionTrue, 0, pressure(api.NodeMemoryPressure)), Old: ready}, true},
		{"leaves", store.Event{Type: store.Deleted, Object: ready, Old: ready}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(nodeKeys(tt.e)) > 0; got != tt.pass {
				t.Errorf("pass %v, want %v", got, tt.pass)
			}
		})
	}
}

// TestReconcileOperatorNoExecuteTaint: an operator's NoExecute taint on a
// healthy node (kubectl taint node a maintenance=now:NoExecute) is stamped
// and drains the node as Kubernetes' taint manager does: a pod that does
// not tolerate it at once, one that tolerates it for 30s after 30s, one
// that tolerates it for good never; removing the taint stops what is left.
func TestReconcileOperatorNoExecuteTaint(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addPod("plain", "a")
	f.addPod("for30s", "a", tolerates("maintenance", seconds(30)))
	f.addPod("for60s", "a", tolerates("maintenance", seconds(60)))
	f.addPod("forever", "a", tolerates("maintenance", nil))
	n := f.node("a").DeepCopy()
	n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: "maintenance", Value: "now", Effect: api.TaintEffectNoExecute})
	if _, err := f.store.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	r := NewReconciler(f.store, Options{Clock: f.clock, GracePeriod: 40 * time.Second, EvictionTimeout: 5 * time.Second})
	pass := func() reconcile.Result {
		t.Helper()
		f.beat("a")
		res, err := r.Reconcile(context.Background(), passKey)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// gone: deleted, gracefully (the agent finishes it).
	gone := func(name string) bool {
		obj, err := f.store.Get(podKind, "default", name)
		return store.IsNotFound(err) || (err == nil && obj.(*api.Pod).DeletionTimestamp != nil)
	}
	res := pass()
	if ts := f.node("a").Spec.Taints; len(ts) != 1 || ts[0].TimeAdded == nil || !ts[0].TimeAdded.Time.Equal(f.clock.Now().Truncate(time.Second)) {
		t.Fatalf("taints %+v: want the operator's, stamped now", ts)
	}
	if !gone("plain") || gone("for30s") || gone("forever") {
		t.Fatalf("after the first pass: plain gone %v, for30s %v, forever %v", gone("plain"), gone("for30s"), gone("forever"))
	}
	if res.RequeueAfter != 30*time.Second {
		t.Errorf("requeue after %v, want 30s", res.RequeueAfter)
	}
	f.clock.Step(30 * time.Second)
	pass()
	if !gone("for30s") || gone("for60s") || gone("forever") {
		t.Fatalf("after 30s: for30s gone %v, for60s %v, forever %v", gone("for30s"), gone("for60s"), gone("forever"))
	}
	n = f.node("a").DeepCopy()
	n.Spec.Taints = nil
	if _, err := f.store.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Minute)
	pass()
	if gone("for60s") || gone("forever") {
		t.Errorf("after the taint was removed: for60s gone %v, forever %v", gone("for60s"), gone("forever"))
	}
	if ev := f.events(); countOf(ev, "plain TaintManagerEviction") != 1 || countOf(ev, "for30s TaintManagerEviction") != 1 {
		t.Errorf("events %q", ev)
	}
}
