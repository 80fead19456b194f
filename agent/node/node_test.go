package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// stepTicker waits until the clock has a ticker or timer waiting, moves it
// on by d and returns the new time.
func stepTicker(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) time.Time {
	t.Helper()
	testtool.WaitFor(t, 5*time.Second, "the heartbeat ticker", func() error {
		if !clk.HasWaiters() {
			return errors.New("no ticker yet")
		}
		return nil
	})
	clk.Step(d)
	return clk.Now()
}

func condition(n *api.Node, ct api.NodeConditionType) api.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	return api.NodeCondition{}
}

// taintKeys lists the node's taints but the node lifecycle controller's
// (node.kubernetes.io/…), which come and go with the node's conditions.
func taintKeys(n *api.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			continue
		}
		out = append(out, t.Key+"="+t.Value+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

func TestNodeRegistrationAndHeartbeat(t *testing.T) {
	c := startCluster(t)
	nc := c.Join(t, "n1")
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	capacity, err := node.ParseCapacity("cpu=4,memory=8Gi,pods=110,ephemeral-storage=100Gi")
	if err != nil {
		t.Fatal(err)
	}
	opts := node.Options{
		Client: nc, Name: "n1", IP: "10.1.2.3",
		Labels:       map[string]string{"zone": "a"},
		Taints:       []api.Taint{{Key: "dedicated", Value: "gpu", Effect: api.TaintEffectNoSchedule}},
		Capacity:     capacity,
		Port:         10250,
		Capabilities: runtime.Capabilities{Cgroup: "v2", MemoryLimit: true},
		Version:      "v1.2.3",
		Clock:        clk,
	}
	nm := node.New(opts)
	if err := nm.Register(ctx); err != nil {
		t.Fatal(err)
	}
	n := c.Node(t, "n1")
	for k, v := range map[string]string{api.LabelHostname: "n1", api.LabelOS: "linux", "zone": "a", api.LabelArch: n.Labels[api.LabelArch]} {
		if n.Labels[k] != v || v == "" {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if got := taintKeys(n); !slices.Equal(got, []string{"dedicated=gpu:NoSchedule"}) {
		t.Errorf("taints %v", got)
	}
	if n.Annotations[node.AnnotationCgroup] != "v2" || n.Annotations[node.AnnotationMemoryLimit] != "true" || n.Annotations[node.AnnotationCPULimit] != "false" {
		t.Errorf("annotations %v", n.Annotations)
	}
	if q := n.Status.Capacity[api.ResourceMemory]; q.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("capacity memory %s", q.String())
	}
	if q := n.Status.Allocatable[api.ResourceMemory]; q.Cmp(resource.MustParse("7992Mi")) != 0 {
		t.Errorf("allocatable memory %s", q.String())
	}
	wantAddrs := []api.NodeAddress{{Type: api.NodeInternalIP, Address: "10.1.2.3"}, {Type: api.NodeHostName, Address: "n1"}}
	if !slices.Equal(n.Status.Addresses, wantAddrs) {
		t.Errorf("addresses %v", n.Status.Addresses)
	}
	info := n.Status.NodeInfo
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || info.KubeletVersion != "v"+api.KubernetesVersion+"+berth.1.2.3" ||
		info.ContainerRuntimeVersion != "exec://berth" || info.KernelVersion == "" || info.OperatingSystem != "linux" || info.Architecture == "" {
		t.Errorf("endpoints %v, nodeInfo %+v", n.Status.DaemonEndpoints, info)
	}
	ready := condition(n, api.NodeReady)
	t0 := clk.Now()
	if ready.Status != api.ConditionTrue || ready.Reason != "AgentReady" || ready.Message != "berth agent is posting ready status" || !ready.LastHeartbeatTime.Time.Equal(t0) {
		t.Errorf("ready %+v", ready)
	}
	for ct, reason := range map[api.NodeConditionType]string{
		api.NodeMemoryPressure: "AgentHasSufficientMemory", api.NodeDiskPressure: "AgentHasNoDiskPressure", api.NodePIDPressure: "AgentHasSufficientPID",
	} {
		if cond := condition(n, ct); cond.Status != api.ConditionFalse || cond.Reason != reason {
			t.Errorf("%s %+v", ct, cond)
		}
	}

	// The node holds its Lease, owned by the Node.
	lease := c.Lease(t, "n1")
	if h := lease.Spec.HolderIdentity; h == nil || *h != "n1" || lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.Time.Equal(t0) ||
		lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease spec %+v", lease.Spec)
	}
	if refs := lease.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != n.UID {
		t.Errorf("lease owners %+v, want the Node %s", refs, n.UID)
	}

	// A node credential writes only its own Node.
	if _, err := nc.Create(ctx, &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}); !client.IsForbidden(err) {
		t.Errorf("node n1 creating n2: %v, want forbidden", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- nm.Run(runCtx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	defer stop()
	stepBy := func(d time.Duration) { t.Helper(); stepTicker(t, clk, d) }
	step := func() { t.Helper(); stepBy(10 * time.Second) }
	waitNode := func(what string, cond func(n *api.Node) error) *api.Node {
		t.Helper()
		var n *api.Node
		testtool.WaitFor(t, 10*time.Second, what, func() error {
			n = c.Node(t, "n1")
			return cond(n)
		})
		return n
	}

	// A beat renews the Lease and leaves the Node alone.
	step()
	t1 := clk.Now()
	testtool.WaitFor(t, 10*time.Second, "a renewal", func() error {
		if l := c.Lease(t, "n1"); !l.Spec.RenewTime.Time.Equal(t1) {
			return fmt.Errorf("renewed at %v, want %v", l.Spec.RenewTime, t1)
		}
		return nil
	})
	if got := c.Node(t, "n1"); got.ResourceVersion != n.ResourceVersion {
		t.Errorf("a beat wrote the Node: resourceVersion %s, was %s", got.ResourceVersion, n.ResourceVersion)
	}

	// A condition change is written at once, without waiting for a beat.
	nm.SetCondition(api.NodeMemoryPressure, true, eviction.ReasonInsufficientMemory, "low")
	n = waitNode("memory pressure", func(n *api.Node) error {
		if m := condition(n, api.NodeMemoryPressure); m.Status != api.ConditionTrue || m.Reason != eviction.ReasonInsufficientMemory {
			return fmt.Errorf("memory pressure %+v", m)
		}
		return nil
	})
	if m := condition(n, api.NodeMemoryPressure); !m.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("memory pressure transition %v, want %v", m.LastTransitionTime, t1)
	}

	// The agent stalls past a beat; meanwhile the lifecycle controller
	// marks the node Unknown and taints it (as it would after the grace
	// period) and the operator cordons it. The late beat writes the status
	// again, Ready; the operator's settings stay.
	testtool.WaitFor(t, 10*time.Second, "the node marked Unknown", func() error {
		n := c.Node(t, "n1")
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == api.NodeReady {
				n.Status.Conditions[i].Status = api.ConditionUnknown
				n.Status.Conditions[i].Reason = "NodeStatusUnknown"
			}
		}
		_, err := c.Admin.UpdateStatus(ctx, n)
		return err
	})
	testtool.WaitFor(t, 10*time.Second, "the operator's cordon", func() error {
		// The lifecycle controller may write the node meanwhile: read again.
		n := c.Node(t, "n1")
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: api.TaintNodeUnreachable, Effect: api.TaintEffectNoExecute}, api.Taint{Key: "ops", Value: "x", Effect: api.TaintEffectNoSchedule})
		_, err := c.Admin.Update(ctx, n)
		return err
	})
	stepBy(30 * time.Second)
	t2 := clk.Now()
	waitNode("ready again", func(n *api.Node) error {
		r := condition(n, api.NodeReady)
		if r.Status != api.ConditionTrue || !r.LastHeartbeatTime.Time.Equal(t2) || !r.LastTransitionTime.Time.Equal(t2) {
			return fmt.Errorf("ready %+v", r)
		}
		return nil
	})

	// A restart with other flags takes over the Node: its own labels
	// change, the operator's stay; its taints, set when the Node was
	// registered, are no longer the node's to change (NodeRestriction), so
	// the Node keeps the ones it has, with their timeAdded.
	stamped := metav1.NewTime(clk.Now().Truncate(time.Second))
	testtool.WaitFor(t, 10*time.Second, "the agent's taint stamped", func() error {
		n := c.Node(t, "n1")
		for i := range n.Spec.Taints {
			if n.Spec.Taints[i].Key == "dedicated" {
				n.Spec.Taints[i].TimeAdded = &stamped
			}
		}
		_, err := c.Admin.Update(ctx, n)
		return err
	})
	stop()
	opts.Taints = append(opts.Taints, api.Taint{Key: "edge", Effect: api.TaintEffectPreferNoSchedule})
	opts.Labels = map[string]string{"zone": "b"}
	if err := node.New(opts).Register(ctx); err != nil {
		t.Fatal(err)
	}
	n = c.Node(t, "n1")
	if !n.Spec.Unschedulable {
		t.Error("re-registration lost spec.unschedulable")
	}
	want := []string{"dedicated=gpu:NoSchedule", "ops=x:NoSchedule"}
	if got := taintKeys(n); !slices.Equal(got, want) {
		t.Errorf("taints %v, want %v", got, want)
	}
	for _, tn := range n.Spec.Taints {
		if tn.Key == "dedicated" && (tn.TimeAdded == nil || !tn.TimeAdded.Equal(&stamped)) {
			t.Errorf("the kept taint's timeAdded %v, want %v", tn.TimeAdded, stamped)
		}
	}
	if n.Labels["zone"] != "b" {
		t.Errorf("zone label %q", n.Labels["zone"])
	}
}

// TestNodeStatusReportPeriod: with nothing changed, the status is written
// once a report period and the Lease at every beat; a Lease deleted under
// the agent is made again.
func TestNodeStatusReportPeriod(t *testing.T) {
	c := startCluster(t)
	nc := c.Join(t, "n1")
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	nm := node.New(node.Options{Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk, StatusReportPeriod: 30 * time.Second})
	if err := nm.Register(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now()
	testtool.Run(t, "the node manager", nm.Run)
	beat := func() time.Time {
		t.Helper()
		now := stepTicker(t, clk, 10*time.Second)
		testtool.WaitFor(t, 10*time.Second, "a renewal", func() error {
			obj, err := c.Admin.Get(ctx, api.KindOf(&api.Lease{}), api.NamespaceNodeLease, "n1")
			if err != nil {
				return err
			}
			if l := obj.(*api.Lease); !l.Spec.RenewTime.Time.Equal(now) {
				return fmt.Errorf("renewed at %v, want %v", l.Spec.RenewTime, now)
			}
			return nil
		})
		return now
	}
	heartbeat := func() time.Time { return condition(c.Node(t, "n1"), api.NodeReady).LastHeartbeatTime.Time }
	beat()
	beat()
	if hb := heartbeat(); !hb.Equal(t0) {
		t.Errorf("status written at %v within the report period, want only at registration (%v)", hb, t0)
	}
	t3 := beat()
	testtool.WaitFor(t, 10*time.Second, "the periodic report", func() error {
		if hb := heartbeat(); !hb.Equal(t3) {
			return fmt.Errorf("status heartbeat %v, want %v", hb, t3)
		}
		return nil
	})

	if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Lease{}), api.NamespaceNodeLease, "n1", nil); err != nil {
		t.Fatal(err)
	}
	beat()
	if refs := c.Lease(t, "n1").OwnerReferences; len(refs) != 1 || refs[0].UID != c.Node(t, "n1").UID {
		t.Errorf("new lease owners %+v", refs)
	}
}

// TestNodeHeartbeatWithoutLease: when the server will not take the node's
// Lease (here its namespace is gone; a server from before leases answers
// alike), the agent registers all the same and writes its status at every
// beat instead, so the node stays alive.
func TestNodeHeartbeatWithoutLease(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	nsKind := api.KindOf(&api.Namespace{})
	if _, err := c.Admin.Delete(ctx, nsKind, "", api.NamespaceNodeLease, nil); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 20*time.Second, "kube-node-lease gone", func() error {
		if _, err := c.Admin.Get(ctx, nsKind, "", api.NamespaceNodeLease); !client.IsNotFound(err) {
			return fmt.Errorf("namespace: %v", err)
		}
		return nil
	})
	nc := c.Join(t, "n1")
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	nm := node.New(node.Options{Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk})
	if err := nm.Register(ctx); err != nil {
		t.Fatalf("register without a lease: %v", err)
	}
	testtool.Run(t, "the node manager", nm.Run)
	for range 2 {
		now := stepTicker(t, clk, 10*time.Second)
		testtool.WaitFor(t, 10*time.Second, "the status as heartbeat", func() error {
			if hb := condition(c.Node(t, "n1"), api.NodeReady).LastHeartbeatTime.Time; !hb.Equal(now) {
				return fmt.Errorf("heartbeat %v, want %v", hb, now)
			}
			return nil
		})
	}
}

func TestNodeRegisteredAgainAfterDeletion(t *testing.T) {
	c := startCluster(t)
	nc := c.Join(t, "n1")
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	nm := node.New(node.Options{Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk})
	if err := nm.Register(ctx); err != nil {
		t.Fatal(err)
	}
	uid := c.Node(t, "n1").UID
	if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Node{}), "", "n1", nil); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- nm.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testtool.WaitFor(t, 10*time.Second, "the node registered again", func() error {
		if clk.HasWaiters() {
			clk.Step(10 * time.Second)
		}
		obj, err := c.Admin.Get(ctx, api.KindOf(&api.Node{}), "", "n1")
		if err != nil {
			return err
		}
		if obj.GetUID() == uid {
			return errors.New("same node")
		}
		if r := condition(obj.(*api.Node), api.NodeReady); r.Status != api.ConditionTrue {
			return fmt.Errorf("ready %+v", r)
		}
		return nil
	})
}

// refuseOnce answers 500 to the first request that match accepts (a
// failure the client does not send again, as it does a 503), and passes
// every other to next.
type refuseOnce struct {
	next    http.RoundTripper
	match   func(*http.Request) bool
	refused atomic.Bool
}

func (r *refuseOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.match(req) && r.refused.CompareAndSwap(false, true) {
		return &http.Response{
			StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req,
		}, nil
	}
	return r.next.RoundTrip(req)
}

// TestNodeRegisteredLoggedOnceStatusWritten: "created node" means the
// registration is done, status included: a status write that fails leaves
// it unsaid (the agent retries, and watches no pod yet), and the retry
// that succeeds says it once.
func TestNodeRegisteredLoggedOnceStatusWritten(t *testing.T) {
	c := startCluster(t)
	token, ca := c.JoinSecrets(t)
	joiner, err := client.New(&client.Config{Server: c.URL, Token: token, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := joiner.Join(context.Background(), api.JoinRequest{NodeName: "n1"})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	tr, err := client.NewTransport(&client.Config{Server: c.URL, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	rt := &refuseOnce{next: tr, match: func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/nodes/n1/status")
	}}
	nc, err := client.New(&client.Config{Server: c.URL, Token: resp.Token, CAData: ca, Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	var logged testtool.Buffer
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	nm := node.New(node.Options{
		Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(&logged, nil)),
	})
	ctx := context.Background()
	if err := nm.Register(ctx); err == nil {
		t.Fatal("register with its status refused: no error")
	}
	if strings.Contains(logged.String(), "created node") {
		t.Fatalf("created node logged before its status was written:\n%s", logged.String())
	}
	if err := nm.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logged.String(), `"msg":"created node"`); n != 1 {
		t.Fatalf("created node logged %d times, want once:\n%s", n, logged.String())
	}
	if condition(c.Node(t, "n1"), api.NodeReady).Status != api.ConditionTrue {
		t.Error("the node is not Ready after its registration")
	}
}

// A control plane that takes the heartbeat's requests and never answers
// (stopped, or cut off with its connections open) costs one beat: the
// request gets a period at most, and the next beat goes to the next
// server, long before the node's grace period runs out.
func TestNodeHeartbeatMovesOnFromAServerThatDoesNotAnswer(t *testing.T) {
	c := startCluster(t)
	token, ca := c.JoinSecrets(t)
	joiner, err := client.New(&client.Config{Server: c.URL, Token: token, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := joiner.Join(context.Background(), api.JoinRequest{NodeName: "n1"})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	frozen := testtool.StartStallProxy(t, strings.TrimPrefix(c.URL, "https://"))
	nc, err := client.New(&client.Config{Server: "https://" + frozen.Addr + "," + c.URL, Token: resp.Token, CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	// Each request gets a period of real time at most: long enough for
	// one to the server that answers on a loaded machine, well short of
	// the client's default bound.
	period := 2 * time.Second
	nm := node.New(node.Options{Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk, HeartbeatPeriod: period})
	ctx := context.Background()
	if err := nm.Register(ctx); err != nil {
		t.Fatal(err)
	}
	registered := clk.Now()
	frozen.Stall()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- nm.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testtool.WaitFor(t, client.DefaultTimeout*2/3, "the lease renewed through the second server", func() error {
		if clk.HasWaiters() {
			clk.Step(period)
		}
		if renewed := c.Lease(t, "n1").Spec.RenewTime; renewed == nil || !renewed.After(registered) {
			return fmt.Errorf("lease renewed at %v", renewed)
		}
		return nil
	})
	if nc.Server() != c.URL {
		t.Fatalf("the agent sends to %s, want %s", nc.Server(), c.URL)
	}
}
