package node_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// TestAgentRefusesANodeAnotherAgentRegistered: a second agent given the
// name of a node that another agent runs is refused at registration, with
// an error that says what to do, and leaves the Node alone; the first
// agent, restarted on its data dir, takes its Node back; once the Node is
// deleted (its machine gone), the second agent may register it.
func TestAgentRefusesANodeAnotherAgentRegistered(t *testing.T) {
	c := startCluster(t)
	token, ca := c.JoinSecrets(t)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	ctx := context.Background()
	firstDir, secondDir := t.TempDir(), t.TempDir()
	// start runs an agent as node "twin" until stop is called, which
	// returns Run's error, or until it ends by itself, which closes done.
	start := func(dataDir, ip string) (stop func() error, done <-chan struct{}) {
		a, err := agent.New(agent.Config{
			Server: c.URL, JoinToken: token, CAData: ca,
			NodeName: "twin", NodeIP: ip, Listen: "127.0.0.1:0",
			DataDir: dataDir, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		ended := make(chan struct{})
		var runErr error
		go func() {
			defer close(ended)
			runErr = a.Run(runCtx)
		}()
		stop = func() error {
			cancel()
			<-ended
			return runErr
		}
		t.Cleanup(func() { _ = stop() })
		return stop, ended
	}
	nodeID := func(dataDir string) string {
		b, err := os.ReadFile(filepath.Join(dataDir, "node-id"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	registered := func(id, ip string, heartbeat time.Time) {
		t.Helper()
		testtool.WaitFor(t, 20*time.Second, "node twin registered by "+id, func() error {
			obj, err := c.Admin.Get(ctx, api.KindOf(&api.Node{}), "", "twin")
			if err != nil {
				return err
			}
			n := obj.(*api.Node)
			if got := n.Annotations[node.AnnotationNodeID]; got != id {
				return fmt.Errorf("node ID %q", got)
			}
			if len(n.Status.Addresses) == 0 || n.Status.Addresses[0].Address != ip {
				return fmt.Errorf("addresses %v", n.Status.Addresses)
			}
			if hb := condition(n, api.NodeReady).LastHeartbeatTime.Time; !hb.Equal(heartbeat) {
				return fmt.Errorf("heartbeat %v, want %v", hb, heartbeat)
			}
			return nil
		})
	}

	stopFirst, _ := start(firstDir, "127.0.0.1")
	registered(nodeID(firstDir), "127.0.0.1", clk.Now())

	stopSecond, refused := start(secondDir, "127.0.0.2")
	testtool.WaitFor(t, 30*time.Second, "the second agent to be refused", func() error {
		select {
		case <-refused:
			return nil
		default:
			return errors.New("still running")
		}
	})
	// The join token joins no live node: the server refuses the second
	// agent a credential for the first one's node.
	err := stopSecond()
	if !client.IsForbidden(err) {
		t.Fatalf("second agent ended with %v, want the join refused", err)
	}
	for _, want := range []string{`node "twin" is live`, "--node-name", "berth delete node twin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(secondDir, "node-credential")); err == nil {
		t.Error("the refused agent kept a credential")
	}
	registered(nodeID(firstDir), "127.0.0.1", clk.Now())

	// The first agent's credential, kept in its data dir for root alone,
	// is bound to its Node within a minute of registering it.
	cred := filepath.Join(firstDir, "node-credential")
	testtool.WaitFor(t, 20*time.Second, "the credential bound to the Node", func() error {
		clk.Step(30 * time.Second)
		return credentialBoundTo(cred, c.Node(t, "twin").UID)
	})
	if st, err := os.Stat(cred); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("node credential file: %v %v", st, err)
	}

	// The first agent restarts on its data dir while its node is live:
	// its own credential renews itself, and the Node is its own.
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	stopFirst, _ = start(firstDir, "127.0.0.1")
	registered(nodeID(firstDir), "127.0.0.1", clk.Now())

	// Its machine is gone: the operator deletes the Node, and the second
	// agent registers it.
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Node{}), "", "twin", nil); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	start(secondDir, "127.0.0.2")
	registered(nodeID(secondDir), "127.0.0.2", clk.Now())
}

// TestIsNodeClaimed: the refusal is found however it was wrapped or
// joined on its way up.
func TestIsNodeClaimed(t *testing.T) {
	claimed := &node.ClaimedError{Node: "n1", ID: "other", Own: "mine"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection refused"), false},
		{claimed, true},
		{fmt.Errorf("register: %w", claimed), true},
		{errors.Join(errors.New("renew lease: conflict"), claimed), true},
	} {
		if got := node.IsClaimed(tc.err); got != tc.want {
			t.Errorf("IsClaimed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestNodeManagerStopsWhenAnotherAgentRegistersItsNode: a Node deleted
// under a running agent and registered by another agent ends the first
// one's Run at its next heartbeat, long before its next status write: it
// does not renew the Lease the other agent holds, which would hide that
// agent's silence from the node lifecycle controller.
func TestNodeManagerStopsWhenAnotherAgentRegistersItsNode(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	opts := node.Options{Client: c.Join(t, "n1"), Name: "n1", IP: "10.0.0.1", ID: "first", Clock: clk, StatusReportPeriod: time.Hour}
	first := node.New(opts)
	if err := first.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Node{}), "", "n1", nil); err != nil {
		t.Fatal(err)
	}
	// The garbage collector deletes the Lease with its Node; the second
	// agent makes its own.
	testtool.WaitFor(t, 10*time.Second, "the first agent's Lease deleted", func() error {
		_, err := c.Admin.Get(ctx, api.KindOf(&api.Lease{}), api.NamespaceNodeLease, "n1")
		if client.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("lease: %v", err)
	})
	opts.ID, opts.IP = "second", "10.0.0.2"
	if err := node.New(opts).Register(ctx); err != nil {
		t.Fatal(err)
	}
	held := c.Lease(t, "n1")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- first.Run(runCtx) }()
	var err error
	testtool.WaitFor(t, 10*time.Second, "the first agent's Run to end", func() error {
		select {
		case err = <-done:
			return nil
		default:
		}
		if clk.HasWaiters() && clk.Since(held.Spec.RenewTime.Time) < time.Minute {
			clk.Step(node.DefaultHeartbeatPeriod)
		}
		return errors.New("still running")
	})
	var claimed *node.ClaimedError
	if !errors.As(err, &claimed) || claimed.ID != "second" || claimed.Own != "first" {
		t.Fatalf("Run ended with %v, want a ClaimedError", err)
	}
	if addr := c.Node(t, "n1").Status.Addresses[0].Address; addr != "10.0.0.2" {
		t.Errorf("node address %s, want the second agent's", addr)
	}
	// The first agent wrote nothing to it (a write of its own, owned by its
	// deleted Node, would also have had it deleted as garbage).
	if obj, err := c.Admin.Get(ctx, api.KindOf(&api.Lease{}), api.NamespaceNodeLease, "n1"); err != nil || obj.GetResourceVersion() != held.ResourceVersion {
		t.Errorf("the second agent's Lease was written after it was made: %v %v", obj, err)
	}
}

// TestLeaseRenewerRefusesAnotherAgentsLease: the Lease names the node as
// its holder, as the kubelet's does, and the agent's node ID beside; a
// renewer of another node ID refuses it when it cannot look at the Node
// (no Lost), and one with none (a hollow agent of berth sim) renews it.
func TestLeaseRenewerRefusesAnotherAgentsLease(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	nc := c.Join(t, "n1")
	now := time.Now()
	first := node.LeaseRenewer{Client: nc, Node: "n1", ID: "first"}
	if err := first.Renew(ctx, now); err != nil {
		t.Fatal(err)
	}
	l := c.Lease(t, "n1")
	if *l.Spec.HolderIdentity != "n1" || l.Annotations[node.AnnotationNodeID] != "first" {
		t.Fatalf("lease held by %s, node ID %q", *l.Spec.HolderIdentity, l.Annotations[node.AnnotationNodeID])
	}
	second := node.LeaseRenewer{Client: nc, Node: "n1", ID: "second"}
	err := second.Renew(ctx, now.Add(time.Second))
	var claimed *node.ClaimedError
	if !errors.As(err, &claimed) || claimed.ID != "first" || claimed.Own != "second" {
		t.Fatalf("second renewer: %v, want a ClaimedError", err)
	}
	if got := c.Lease(t, "n1"); got.ResourceVersion != l.ResourceVersion {
		t.Fatalf("the refused renewer wrote the Lease: %v", got.Annotations)
	}
	hollow := node.LeaseRenewer{Client: nc, Node: "n1"}
	if err := hollow.Renew(ctx, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// TestNodeManagerTakesALeaseLeftFromTheNodeBefore: a Lease that names
// another agent, left from a Node deleted before the garbage collector
// deleted it too, is taken over by the agent that registered the Node
// since: the Node, not the Lease, says whose the node is.
func TestNodeManagerTakesALeaseLeftFromTheNodeBefore(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	holder := "n1"
	left := &api.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceNodeLease, Name: "n1", Annotations: map[string]string{node.AnnotationNodeID: "gone"}}}
	left.Spec.HolderIdentity = &holder
	if _, err := c.Admin.Create(ctx, left); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	nm := node.New(node.Options{Client: c.Join(t, "n1"), Name: "n1", IP: "10.0.0.1", ID: "first", Clock: clk})
	if err := nm.Register(ctx); err != nil {
		t.Fatal(err)
	}
	l := c.Lease(t, "n1")
	if l.Annotations[node.AnnotationNodeID] != "first" || !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Fatalf("lease of node ID %q renewed at %v, want the agent's at %v", l.Annotations[node.AnnotationNodeID], l.Spec.RenewTime, clk.Now())
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != c.Node(t, "n1").UID {
		t.Fatalf("lease owners %v", l.OwnerReferences)
	}
}

// credentialBoundTo checks that the node credential in file is bound to
// the Node of uid.
func credentialBoundTo(file string, uid types.UID) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var c auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(strings.TrimSpace(string(b)), &c); err != nil {
		return err
	}
	if c.Node == nil || c.Node.UID != string(uid) {
		return fmt.Errorf("credential bound to %+v, want uid %s", c.Node, uid)
	}
	return nil
}
