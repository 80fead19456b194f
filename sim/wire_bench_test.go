package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// BenchmarkAgentWire measures the floor under berth sim's CPU per pod:
// what the conversation between the hollow agents and the API costs when
// the server does nothing but that conversation. No store, scheduler,
// controller, authentication or admission runs; the server keeps the
// bound pods in a map. Per pod, as in the sim:
//
//   - the server encodes the bound pod and sends it on its node's watch
//     (one HTTP/2 stream per agent, AgentsPerTransport agents to a TLS
//     connection, as StartFleet shares them);
//   - the agent decodes the event and PUTs the pod's Running status;
//   - the server decodes the body into a Pod, encodes the pod with its new
//     status as the answer, and sends the same bytes on the watch as the
//     echo, which the agent decodes too.
//
// wire=json runs the sim's own agents (watchPods, reportRunning) with
// encoding/json on the server; wire=bytes sends bodies and events of the
// same sizes that nobody encodes or decodes: TLS and HTTP/2 alone.
// cpu-µs/pod is the process's CPU time (user and system) per pod, both
// ends of the conversation together, which is what the sim pays for it
// on top of the control plane's own work.
//
//	go test -run XXX -bench AgentWire -benchtime 100000x ./sim/
func BenchmarkAgentWire(b *testing.B) {
	b.Run("wire=json", func(b *testing.B) { benchmarkWire(b, false) })
	b.Run("wire=bytes", func(b *testing.B) { benchmarkWire(b, true) })
}

// wireServer is the API reduced to the hollow agents' conversation.
type wireServer struct {
	raw bool
	// watches are the nodes' watch streams, by agent index.
	watches []chan []byte
	// bound holds the bound pods by name; rv numbers their versions.
	bound sync.Map
	rv    atomic.Int64
	// Sizes of the bytes-only conversation (raw), taken from the JSON one.
	answer, echo, boundLine []byte
	running                 atomic.Int64
	want                    int64
	done                    chan struct{}
}

func (s *wireServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.serveWatch(w, r)
		return
	}
	node := s.nodeOf(r.URL.Query().Get("node"))
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var answer, echo []byte
	if s.raw {
		answer, echo = s.answer, s.echo
	} else {
		var in api.Pod
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		v, ok := s.bound.Load(in.Name)
		if !ok {
			http.Error(w, "no pod "+in.Name, http.StatusNotFound)
			return
		}
		p := *v.(*api.Pod)
		node = s.nodeOf(p.Spec.NodeName)
		p.Status = in.Status
		p.ResourceVersion = strconv.FormatInt(s.rv.Add(1), 10)
		if answer, err = json.Marshal(&p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		echo = watchLine(client.Modified, answer)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
	s.watches[node] <- echo
	if s.running.Add(1) == s.want {
		close(s.done)
	}
}

func (s *wireServer) serveWatch(w http.ResponseWriter, r *http.Request) {
	sel := r.URL.Query().Get("fieldSelector")
	node := s.nodeOf(strings.TrimPrefix(sel, "spec.nodeName="))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case line := <-s.watches[node]:
			if _, err := w.Write(line); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// nodeOf is the agent index of a node name (hollow-00042) or of a bare
// index (the bytes-only agents name themselves so).
func (s *wireServer) nodeOf(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "hollow-"))
	return n
}

// watchLine is one watch event as the API server writes it.
func watchLine(t client.EventType, obj []byte) []byte {
	line := make([]byte, 0, len(obj)+32)
	line = append(line, `{"type":"`...)
	line = append(line, t...)
	line = append(line, `","object":`...)
	line = append(line, obj...)
	return append(line, "}\n"...)
}

// runningPod is the pod as a hollow agent's report leaves it, for the
// sizes of the bytes-only conversation.
func runningPod(p *api.Pod) *api.Pod {
	now := metav1.Now()
	r := *p
	r.Status = *p.Status.DeepCopy()
	r.Status.Phase = api.PodRunning
	r.Status.HostIP, r.Status.PodIP = "127.0.0.1", "127.1.0.1"
	r.Status.PodIPs = []api.PodIP{{IP: "127.1.0.1"}}
	r.Status.StartTime = &now
	for _, t := range []api.PodConditionType{api.PodInitialized, api.ContainersReady, api.PodReady} {
		setPodCondition(&r.Status, api.PodCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: now})
	}
	started := true
	r.Status.ContainerStatuses = []api.ContainerStatus{{
		Name: "web", Image: "web:1.0", ImageID: "hollow://web:1.0", Ready: true, Started: &started,
		ContainerID: "hollow://" + string(p.UID) + "/web",
		State:       api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: now}},
	}}
	return &r
}

func benchmarkWire(b *testing.B, raw bool) {
	const nodes = 5000
	if b.N < nodes {
		// The first, probing run (b.N is 1), or too few pods to say
		// anything: every node needs pods.
		return
	}
	o := &Options{Nodes: nodes, Pods: b.N}
	if err := o.defaults(); err != nil {
		b.Fatal(err)
	}
	pods := make([]*api.Pod, b.N)
	now := metav1.Now()
	for i := range pods {
		p := makePod(i, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d", i%50), UID: types.UID(fmt.Sprintf("rs-uid-%d", i%50))}, o)
		p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		p.CreationTimestamp = now
		p.Spec.NodeName = fmt.Sprintf("hollow-%05d", i%nodes)
		p.Status.Conditions = []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionTrue, LastTransitionTime: now}}
		pods[i] = p
	}
	s := &wireServer{raw: raw, watches: make([]chan []byte, nodes), want: int64(b.N), done: make(chan struct{})}
	for i := range s.watches {
		s.watches[i] = make(chan []byte, 64)
	}
	ran, err := json.Marshal(runningPod(pods[0]))
	if err != nil {
		b.Fatal(err)
	}
	s.answer, s.echo = ran, watchLine(client.Modified, ran)
	bound, err := json.Marshal(pods[0])
	if err != nil {
		b.Fatal(err)
	}
	s.boundLine = watchLine(client.Added, bound)
	status, err := json.Marshal(&api.Pod{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Name}, Status: runningPod(pods[0]).Status})
	if err != nil {
		b.Fatal(err)
	}

	srv := httptest.NewUnstartedServer(s)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	transports, err := newTransports((nodes+AgentsPerTransport-1)/AgentsPerTransport, ca)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
	}()
	sh := &agentShared{server: srv.URL, transports: transports, clock: clock.RealClock{}, log: slog.New(slog.DiscardHandler)}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	ready := make(chan error, nodes)
	for i := range nodes {
		a := newAgent(sh, i, i/AgentsPerTransport)
		a.c, err = client.New(&client.Config{Server: srv.URL, Token: "hollow", Transport: a.transport()})
		if err != nil {
			b.Fatal(err)
		}
		if raw {
			wg.Go(func() { rawAgent(ctx, a, status, ready) })
			continue
		}
		var once sync.Once
		wg.Go(func() { a.watchPods(ctx, func(err error) { once.Do(func() { ready <- err }) }) })
	}
	for range nodes {
		if err := <-ready; err != nil {
			b.Fatal(err)
		}
	}

	b.ReportAllocs()
	b.ResetTimer()
	cpu0, start := processCPU(), time.Now()
	go func() {
		for i, p := range pods {
			s.bound.Store(p.Name, p)
			var line []byte
			if raw {
				line = s.boundLine
			} else {
				obj, err := json.Marshal(p)
				if err != nil {
					panic(err)
				}
				line = watchLine(client.Added, obj)
			}
			select {
			case s.watches[i%nodes] <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	select {
	case <-s.done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d of %d pods running after 10 minutes", s.running.Load(), b.N)
	}
	cpu, wall := processCPU()-cpu0, time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/pod")
	b.ReportMetric(float64(b.N)/wall.Seconds(), "pods/s")
	b.ReportMetric(float64(len(s.answer)), "pod-B")
	if errs := sh.errors.Load(); errs > 0 {
		b.Fatalf("%d failed calls", errs)
	}
}

// rawAgent answers every bound pod of its watch with a status PUT of the
// JSON one's size, and passes over the echoes: the conversation's bytes
// without their encoding.
func rawAgent(ctx context.Context, a *agent, status []byte, ready chan<- error) {
	path := client.ResourcePath(podKind, "default", "p", "status")
	q := map[string][]string{"node": {strconv.Itoa(a.index)}}
	resp, err := a.c.Do(ctx, http.MethodGet, client.ResourcePath(podKind, "", "", ""), map[string][]string{
		"watch": {"true"}, "fieldSelector": {"spec.nodeName=" + strconv.Itoa(a.index)},
	}, nil, "")
	ready <- err
	if err != nil {
		return
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 512)
	var buf []byte
	for {
		buf = buf[:0]
		line, err := r.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			buf = append(buf, line...)
			line, err = r.ReadSlice('\n')
		}
		if err != nil {
			return
		}
		buf = append(buf, line...)
		if !bytes.HasPrefix(buf, []byte(`{"type":"ADDED"`)) {
			continue // the echo of a report
		}
		out, err := a.c.Do(ctx, http.MethodPut, path, q, status, "application/json")
		if err != nil {
			if ctx.Err() == nil {
				a.sh.fail(a.name, "status", err)
			}
			return
		}
		_, _ = io.Copy(io.Discard, out.Body)
		out.Body.Close()
	}
}
