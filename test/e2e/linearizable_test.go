package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// TestLinearizable records every request and answer of clients that
// create, update, delete and read ConfigMaps through each of three
// servers on one etcd, while the test kills, freezes (SIGSTOP), stops
// and restarts servers and cuts one off from etcd (a proxy on loopback
// between it and etcd that stops passing bytes, as a partition does),
// then checks the history against the API's sequential specification
// (kvModel) with porcupine. A 503 or 429, or a dial refused, is taken
// as a request not carried out; a timeout, a 504 or a lost connection as
// one that may or may not have been. A short run injects each fault
// once; with BERTH_E2E_MEASURE=1 it injects BERTH_LINEARIZABILITY_FAULTS
// (default 100).
func TestLinearizable(t *testing.T) {
	faults := len(linFaults)
	if os.Getenv("BERTH_E2E_MEASURE") == "1" {
		faults = 100
	}
	if v := os.Getenv("BERTH_LINEARIZABILITY_FAULTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BERTH_LINEARIZABILITY_FAULTS=%q: want a positive number", v)
		}
		faults = n
	}
	ep := strings.TrimPrefix(etcdtest.Start(t), "http://")
	c := &linCluster{}
	for i := range 3 {
		p := testtool.StartStallProxy(t, ep)
		args := []string{"--store", "etcd://" + p.Addr}
		s := startServer(t, args...)
		n := &linNode{server: s, proxy: p, args: args}
		n.connect(t)
		c.nodes = append(c.nodes, n)
		if i == 0 {
			waitFor(t, 30*time.Second, "the first server to lead", func() error {
				if c.leader() == nil {
					return errors.New("not yet")
				}
				return nil
			})
		}
	}

	h := &linHistory{start: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		for j := range 2 {
			id := 2*i + j
			wg.Go(func() { h.run(ctx, &n.client, id) })
		}
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	// The names move on every second.
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				h.nextEpoch()
			}
		}
	})

	for f := range faults {
		h.waitWrites(t, "writes before the fault")
		kind := linFaults[f%len(linFaults)]
		t.Logf("fault %d: %s (load %s)", f+1, kind, loadAverage())
		c.inject(t, kind)
	}
	h.waitWrites(t, "writes after the last fault")
	cancel()
	wg.Wait()
	h.mu.Lock()
	for msg, n := range h.unknown {
		t.Logf("%d of unknown outcome: %s", n, msg)
	}
	h.mu.Unlock()

	ops := h.operations()
	unknown := 0
	for _, op := range ops {
		if op.Output.(kvOutput).result == resUnknown {
			unknown++
		}
	}
	t.Logf("%d operations over %d faults (%d of unknown outcome, %d not carried out), load %s",
		len(ops), faults, unknown, h.refused.Load(), loadAverage())
	model := kvModel.ToModel()
	checking := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, 3*time.Minute)
	t.Logf("porcupine's check: %s in %s", res, time.Since(checking).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("berth-linearizability-%d.html", time.Now().Unix()))
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Errorf("the history is not linearizable; see %s", path)
		for _, line := range h.illegal(model, ops) {
			t.Log(line)
		}
	default:
		t.Errorf("the check did not finish: %s", res)
	}
}

// linFault is a fault the test injects.
type linFault string

const (
	faultFreeze            linFault = "SIGSTOP of the leader for 6s"
	faultPartition         linFault = "the leader cut off from etcd for 6s"
	faultKill              linFault = "SIGKILL of the leader, started again"
	faultTerm              linFault = "SIGTERM of the leader, started again"
	faultFreezeFollower    linFault = "SIGSTOP of a follower for 4s"
	faultPartitionFollower linFault = "a follower cut off from etcd for 4s"
)

// linFaults are the faults in the order the test injects them.
var linFaults = []linFault{faultFreeze, faultPartition, faultKill, faultTerm, faultFreezeFollower, faultPartitionFollower}

// linCluster is three servers on one etcd, each reaching it through a
// proxy of its own.
type linCluster struct {
	nodes []*linNode
}

type linNode struct {
	server *server
	proxy  *testtool.StallProxy
	args   []string
	// client sends to this server alone; a server started again on
	// another port gets a new one.
	client atomic.Pointer[client.Client]
}

// connect points the node's client at its server.
func (n *linNode) connect(t *testing.T) {
	t.Helper()
	cfg, err := client.LoadKubeconfig(n.server.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server = n.server.url // each client through one server
	cfg.Timeout = 3 * time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.client.Store(cl)
}

// restart starts the node's stopped server again on its data dir, at
// its address unless another process took the port meanwhile (the
// machine is shared): then at a new one, with a new client.
func (n *linNode) restart(t *testing.T) {
	t.Helper()
	addr := strings.TrimPrefix(n.server.url, "https://")
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
	} else {
		addr = fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1"))
	}
	n.server = startServerIn(t, n.server.dataDir, append(slices.Clone(n.args), "--listen", addr)...)
	n.connect(t)
}

// leader is the node whose server says last that it leads, nil for none.
func (c *linCluster) leader() *linNode {
	for _, n := range c.nodes {
		select {
		case <-n.server.done:
			continue
		default:
		}
		if leadsNow(n.server.Output()) {
			return n
		}
	}
	return nil
}

// follower is a running node other than the leader.
func (c *linCluster) follower(lead *linNode) *linNode {
	for _, n := range c.nodes {
		if n != lead {
			return n
		}
	}
	return nil
}

func (c *linCluster) inject(t *testing.T, kind linFault) {
	t.Helper()
	var lead *linNode
	waitFor(t, 30*time.Second, "a leader", func() error {
		if lead = c.leader(); lead == nil {
			return errors.New("none leads")
		}
		return nil
	})
	switch kind {
	case faultFreeze:
		lead.server.signal(syscall.SIGSTOP)
		time.Sleep(6 * time.Second) // the fault's length
		lead.server.signal(syscall.SIGCONT)
	case faultFreezeFollower:
		f := c.follower(lead)
		f.server.signal(syscall.SIGSTOP)
		time.Sleep(4 * time.Second) // the fault's length
		f.server.signal(syscall.SIGCONT)
	case faultPartition:
		lead.proxy.Stall()
		time.Sleep(6 * time.Second) // the fault's length
		lead.proxy.Resume()
	case faultPartitionFollower:
		f := c.follower(lead)
		f.proxy.Stall()
		time.Sleep(4 * time.Second) // the fault's length
		f.proxy.Resume()
	case faultKill, faultTerm:
		sig := syscall.SIGKILL
		if kind == faultTerm {
			sig = syscall.SIGTERM
		}
		lead.server.signal(sig)
		select {
		case <-lead.server.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the leader did not stop after %s", sig)
		}
		lead.restart(t)
	}
	// A server a fault deposed steps down and follows: none stops.
	for _, n := range c.nodes {
		select {
		case <-n.server.done:
			t.Errorf("%s exited after the fault: %v", n.server.url, n.server.err)
			n.restart(t)
		default:
		}
	}
}

// linHistory records the operations of the clients.
type linHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// epoch numbers the names the clients use now (see keysPerEpoch);
	// acked counts the writes acknowledged.
	epoch int
	acked int
	// refused counts the answers that said a request was not carried
	// out, which the history leaves out; unknown counts the others that
	// did not say what became of the request, by what they said.
	refused atomic.Int64
	unknown map[string]int
}

// keysPerEpoch is how many object names the clients share in an epoch:
// few, so that they meet on them; each epoch (a second) takes new ones,
// so that the check's work, which grows with the writes of unknown
// outcome on a name, stays bounded.
const keysPerEpoch = 3

func (h *linHistory) nextEpoch() {
	h.mu.Lock()
	h.epoch++
	h.mu.Unlock()
}

func (h *linHistory) now() int64 { return int64(time.Since(h.start)) }

// waitWrites waits for writes sent from now on to be acknowledged.
func (h *linHistory) waitWrites(t *testing.T, what string) {
	t.Helper()
	h.mu.Lock()
	from := h.acked
	h.mu.Unlock()
	waitFor(t, 60*time.Second, what, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.acked < from+5 {
			return fmt.Errorf("%d acknowledged", h.acked-from)
		}
		return nil
	})
}

// run is one client: operations on the epoch's names, one at a time,
// until ctx ends.
func (h *linHistory) run(ctx context.Context, through *atomic.Pointer[client.Client], id int) {
	rng := rand.New(rand.NewPCG(uint64(id), 42))
	rvs := map[string]string{} // the last resourceVersion this client saw of a name
	k := api.MustLookupResource("configmaps")
	for seq := 0; ctx.Err() == nil; seq++ {
		h.mu.Lock()
		epoch := h.epoch
		h.mu.Unlock()
		key := fmt.Sprintf("lin-%d-%d", epoch, rng.IntN(keysPerEpoch))
		in := kvInput{key: key, value: fmt.Sprintf("c%d-%d", id, seq)}
		switch p := rng.IntN(100); {
		case p < 35:
			in.op = opGet
		case p < 55:
			in.op = opCreate
		case p < 85:
			in.op = opUpdate
			in.rv = rvs[key]
			if in.rv == "" {
				in.op = opGet
			}
		default:
			in.op = opDelete
		}
		cl := through.Load()
		call := h.now()
		var (
			obj api.Object
			err error
		)
		switch in.op {
		case opGet:
			obj, err = cl.Get(ctx, k, "default", key)
		case opCreate:
			obj, err = cl.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key}, Data: map[string]string{"v": in.value}})
		case opUpdate:
			obj, err = cl.Update(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key, ResourceVersion: in.rv}, Data: map[string]string{"v": in.value}})
		case opDelete:
			obj, err = cl.Delete(ctx, k, "default", key, nil)
		}
		ret := h.now()
		if ctx.Err() != nil && err != nil {
			ret = unknownReturn // cut off by the test's end
		}
		out, done := kvAnswer(obj, err)
		if !done {
			h.refused.Add(1)
			// Paced, so that a server down is not asked thousands
			// of times a second.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if out.result == resUnknown {
			h.noteUnknown(in.op, err)
			if in.op == opGet {
				continue // a read that did not answer changed nothing
			}
			ret = unknownReturn
		}
		if out.rv != "" {
			rvs[key] = out.rv
		}
		h.mu.Lock()
		h.ops = append(h.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
		if in.op != opGet && out.result == resOK {
			h.acked++
		}
		h.mu.Unlock()
	}
}

// kvAnswer reads an answer of the API; done is false for one that says
// the request was not carried out (a 503 or 429).
func kvAnswer(obj api.Object, err error) (out kvOutput, done bool) {
	if err == nil {
		cm := obj.(*api.ConfigMap)
		return kvOutput{result: resOK, value: cm.Data["v"], rv: cm.ResourceVersion}, true
	}
	var op *net.OpError
	switch code := client.Code(err); {
	case code == http.StatusServiceUnavailable, code == http.StatusTooManyRequests:
		return kvOutput{}, false
	case errors.As(err, &op) && op.Op == "dial":
		return kvOutput{}, false // nothing was sent
	case client.IsNotFound(err):
		return kvOutput{result: resNotFound}, true
	case client.IsAlreadyExists(err):
		return kvOutput{result: resExists}, true
	case client.IsConflict(err):
		return kvOutput{result: resConflict}, true
	}
	return kvOutput{result: resUnknown}, true
}

// noteUnknown counts an answer of unknown outcome by what it said, for
// the test's log.
func (h *linHistory) noteUnknown(op kvOp, err error) {
	msg := string(op) + ": " + err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unknown == nil {
		h.unknown = map[string]int{}
	}
	h.unknown[msg]++
}

func (h *linHistory) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// illegal describes the operations on the names whose history is not
// linearizable, in call order, for the test's log.
func (h *linHistory) illegal(model porcupine.Model, ops []porcupine.Operation) []string {
	var out []string
	for _, part := range model.Partition(ops) {
		if porcupine.CheckOperations(model, part) {
			continue
		}
		out = append(out, "operations on "+part[0].Input.(kvInput).key+":")
		for _, op := range part {
			ret := "…"
			if op.Return != unknownReturn {
				ret = time.Duration(op.Return).String()
			}
			out = append(out, fmt.Sprintf("  client %d [%s, %s] %s", op.ClientId, time.Duration(op.Call), ret, model.DescribeOperation(op.Input, op.Output)))
		}
	}
	return out
}
