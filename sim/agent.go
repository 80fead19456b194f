package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// HeartbeatInterval is how often a hollow agent renews its node's Lease,
// as the agent does.
const HeartbeatInterval = node.DefaultHeartbeatPeriod

// StatusReportInterval is how often a hollow agent writes its Node's status
// though nothing in it changed, as the agent does.
const StatusReportInterval = node.DefaultStatusReportPeriod

// Label every node carries, as in Kubernetes.
const hostnameLabel = "kubernetes.io/hostname"

var (
	nodeKind = api.KindOf(&api.Node{})
	podKind  = api.KindOf(&api.Pod{})
)

// agentShared is what every hollow agent of a run shares: the API, one
// connection pool, the node shape and the clock.
type agentShared struct {
	server    string
	nodeToken string
	// transports are shared by the agents, AgentsPerTransport each.
	transports []*http.Transport
	capacity   api.ResourceList
	clock      clock.WithTicker
	// podIPs numbers the fake pod addresses.
	podIPs atomic.Uint32
	// errors counts failed API calls (after retries) of every agent.
	errors atomic.Int64
	log    *slog.Logger
	// mix gives the nodes the labels and taints of Options.Mix.
	mix bool
}

// fail counts a failed API call and logs the first few.
func (sh *agentShared) fail(node, what string, err error) {
	if n := sh.errors.Add(1); n <= 5 {
		sh.log.Warn("hollow agent: "+what+" failed", "node", node, "err", err)
	}
}

// agent is one hollow agent: a node that heartbeats and reports the pods
// bound to it Running without starting a process.
type agent struct {
	sh    *agentShared
	index int
	// tr numbers the shared transport the agent uses.
	tr   int
	name string
	ip   string
	c    *client.Client
	// uid is the registered Node's. The agent keeps no copy of the Node
	// (5,000 of them were 13.5 MB): a status write, due every five
	// minutes, reads it first.
	uid types.UID
	// started is set once the node is registered: the heartbeat loop
	// skips it until then. beating is set while a heartbeat is under way.
	started, beating atomic.Bool
	// What the heartbeats keep, read and written by one heartbeat at a
	// time (beating orders them): the Lease as last written, and when the
	// status is due besides.
	beat node.Heartbeat
}

// newAgent is the agent of node hollow-<index>, on the shared transport
// numbered tr.
func newAgent(sh *agentShared, index, tr int) *agent {
	return &agent{
		sh:    sh,
		index: index,
		tr:    tr,
		name:  fmt.Sprintf("hollow-%05d", index),
		// Addresses are data only: nothing ever dials them.
		ip: fmt.Sprintf("127.0.%d.%d", (index>>8)&255, index&255),
	}
}

func (a *agent) transport() *http.Transport {
	return a.sh.transports[a.tr]
}

// start joins the cluster and registers the Node.
func (a *agent) start(ctx context.Context) error {
	tok, err := a.join(ctx)
	if err != nil {
		return fmt.Errorf("%s: join: %w", a.name, err)
	}
	a.c, err = client.New(&client.Config{Server: a.sh.server, Token: tok, Transport: a.transport(), UserAgent: "berth-sim/" + a.name})
	if err != nil {
		return err
	}
	a.beat = node.Heartbeat{
		Lease:       node.LeaseRenewer{Client: a.c, Node: a.name, Owner: func() types.UID { return a.uid }},
		WriteStatus: a.writeStatus,
		Period:      HeartbeatInterval, ReportPeriod: StatusReportInterval, Clock: a.sh.clock,
	}
	if err := a.register(ctx); err != nil {
		return fmt.Errorf("%s: register: %w", a.name, err)
	}
	return nil
}

// join trades the node token for the node's own credential.
func (a *agent) join(ctx context.Context) (string, error) {
	jc, err := client.New(&client.Config{Server: a.sh.server, Token: a.sh.nodeToken, Transport: a.transport(), UserAgent: "berth-sim/" + a.name})
	if err != nil {
		return "", err
	}
	resp, err := jc.Join(ctx, api.JoinRequest{NodeName: a.name})
	if err != nil {
		return "", err
	}
	return resp.Token, nil
}

func (a *agent) register(ctx context.Context) error {
	now := metav1.NewTime(a.sh.clock.Now())
	n := &api.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   a.name,
			Labels: map[string]string{hostnameLabel: a.name},
		},
		Status: api.NodeStatus{
			Capacity:    a.sh.capacity.DeepCopy(),
			Allocatable: a.sh.capacity.DeepCopy(),
			Conditions: []api.NodeCondition{{
				Type: api.NodeReady, Status: api.ConditionTrue,
				LastHeartbeatTime: now, LastTransitionTime: now,
				Reason: "AgentReady", Message: "hollow agent is posting ready status",
			}},
			Addresses: []api.NodeAddress{
				{Type: api.NodeInternalIP, Address: a.ip},
				{Type: api.NodeHostName, Address: a.name},
			},
			NodeInfo: api.NodeSystemInfo{
				MachineID: a.name, BootID: a.name, KubeletVersion: "hollow",
				OperatingSystem: "linux", Architecture: "amd64", OSImage: "hollow",
				ContainerRuntimeVersion: "hollow://0",
			},
		},
	}
	if a.sh.mix {
		mixNode(n, a.index)
	}
	obj, err := a.c.Create(ctx, n)
	switch {
	case client.IsAlreadyExists(err):
		if err := a.writeStatus(ctx); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		a.uid = obj.GetUID()
	}
	return a.beat.Registered(ctx, now.Time)
}

// writeStatus writes the Node's status as it stands, its Ready
// condition's heartbeat time renewed.
func (a *agent) writeStatus(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		obj, err := a.c.Get(ctx, nodeKind, "", a.name)
		if err != nil {
			return err
		}
		n := obj.(*api.Node).DeepCopy()
		a.uid = n.UID
		now := metav1.NewTime(a.sh.clock.Now())
		found := false
		for i := range n.Status.Conditions {
			if c := &n.Status.Conditions[i]; c.Type == api.NodeReady {
				c.LastHeartbeatTime = now
				if c.Status != api.ConditionTrue {
					c.Status, c.LastTransitionTime = api.ConditionTrue, now
				}
				found = true
			}
		}
		if !found {
			n.Status.Conditions = append(n.Status.Conditions, api.NodeCondition{
				Type: api.NodeReady, Status: api.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now,
			})
		}
		if _, err := a.c.UpdateStatus(ctx, n); err == nil || !client.IsConflict(err) || attempt >= 3 {
			return err
		}
	}
}

// heartbeatLoop renews the heartbeat of every started agent of a group
// once every HeartbeatInterval, one agent after another, spread evenly
// over the interval: one goroutine for the group rather than one an agent.
// Each heartbeat is sent from a goroutine of its own that ends with it, so
// that a slow answer (a busy API server) delays that agent only, not the
// agents after it; an agent whose previous heartbeat is still under way
// is skipped.
func heartbeatLoop(ctx context.Context, c clock.WithTicker, agents []*agent) {
	if len(agents) == 0 {
		return
	}
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	t := c.NewTicker(max(HeartbeatInterval/time.Duration(len(agents)), time.Millisecond))
	defer t.Stop()
	next := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		a := agents[next]
		next = (next + 1) % len(agents)
		if !a.started.Load() || !a.beating.CompareAndSwap(false, true) {
			continue
		}
		inFlight.Go(func() {
			defer a.beating.Store(false)
			if err := a.beat.Beat(ctx); err != nil && ctx.Err() == nil {
				a.sh.fail(a.name, "heartbeat", err)
			}
		})
	}
}

// hollowPod is what a hollow agent reads of a pod from its watch: enough
// to report it Running or finish its deletion. Decoding only this, rather
// than the whole pod, keeps the agents' share of the CPU small.
type hollowPod struct {
	Metadata struct {
		Name              string       `json:"name"`
		Namespace         string       `json:"namespace"`
		UID               types.UID    `json:"uid"`
		ResourceVersion   string       `json:"resourceVersion"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName      string            `json:"nodeName"`
		RestartPolicy api.RestartPolicy `json:"restartPolicy"`
		Containers    []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	// Status is decoded only for a pod to report Running.
	Status json.RawMessage `json:"status"`
}

// hollowOf is the part of a pod a hollow agent reads.
func hollowOf(p *api.Pod) (*hollowPod, error) {
	st, err := json.Marshal(&p.Status)
	if err != nil {
		return nil, err
	}
	h := &hollowPod{Status: st}
	h.Metadata.Name, h.Metadata.Namespace, h.Metadata.UID = p.Name, p.Namespace, p.UID
	h.Metadata.ResourceVersion, h.Metadata.DeletionTimestamp = p.ResourceVersion, p.DeletionTimestamp
	h.Spec.NodeName, h.Spec.RestartPolicy = p.Spec.NodeName, p.Spec.RestartPolicy
	for _, c := range p.Spec.Containers {
		h.Spec.Containers = append(h.Spec.Containers, struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		}{c.Name, c.Image})
	}
	return h, nil
}

// watchEvent is one event of the watch stream, decoded in one pass: the
// object is a pod as hollowPod reads it, a bookmark (its
// resourceVersion) or, for an ERROR, a Status (its code).
type watchEvent struct {
	Type   client.EventType `json:"type"`
	Object struct {
		hollowPod
		Code int32 `json:"code"`
	} `json:"object"`
}

// watchPods watches the pods bound to the node and reports each new one
// Running, and finishes the deletion of each one marked for deletion.
// ready is called once the first watch is established (or it failed to
// be). It reads the watch stream itself, in the agent's one goroutine.
func (a *agent) watchPods(ctx context.Context, ready func(error)) {
	rv := ""
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		q := url.Values{}
		q.Set("watch", "true")
		q.Set("allowWatchBookmarks", "true")
		q.Set("fieldSelector", "spec.nodeName="+a.name)
		if rv != "" {
			q.Set("resourceVersion", rv)
		}
		resp, err := a.c.Do(ctx, http.MethodGet, client.ResourcePath(podKind, "", "", ""), q, nil, "")
		if err != nil {
			if ready != nil {
				ready(fmt.Errorf("%s: watch pods: %w", a.name, err))
				return
			}
			if client.IsGone(err) {
				rv = ""
			}
			select {
			case <-ctx.Done():
				return
			case <-a.sh.clock.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		if ready != nil {
			ready(nil)
			ready = nil
		}
		rv = a.follow(ctx, resp.Body, rv, func() { backoff = 100 * time.Millisecond })
		resp.Body.Close()
	}
	if ready != nil {
		ready(ctx.Err())
	}
}

// follow handles the events of one watch stream until it ends and returns
// the resourceVersion to watch from next ("" after a 410 Gone).
func (a *agent) follow(ctx context.Context, body io.Reader, rv string, progressed func()) string {
	events := eventLines{r: bufio.NewReaderSize(body, 512)}
	for {
		var ev watchEvent
		if err := events.decode(&ev); err != nil {
			return rv
		}
		progressed()
		pod := &ev.Object.hollowPod
		switch ev.Type {
		case "ERROR":
			if ev.Object.Code == http.StatusGone {
				return ""
			}
			return rv
		case client.Bookmark:
			if pod.Metadata.ResourceVersion != "" {
				rv = pod.Metadata.ResourceVersion
			}
			continue
		case client.Added, client.Modified, client.Deleted:
		default:
			continue
		}
		if pod.Metadata.ResourceVersion != "" {
			rv = pod.Metadata.ResourceVersion
		}
		if ev.Type == client.Deleted {
			continue
		}
		if pod.Metadata.DeletionTimestamp != nil {
			if err := a.finishDeletion(ctx, pod); err != nil && ctx.Err() == nil {
				a.sh.fail(a.name, "pod deletion", err)
			}
			continue
		}
		if err := a.reportRunning(ctx, pod); err != nil && ctx.Err() == nil {
			a.sh.fail(a.name, "pod status", err)
		}
	}
}

// eventLines reads the events of a watch stream, one JSON object a line
// as the API server writes them. Between events it holds no more than a
// small buffer of its own, and it reads an event longer than that into a
// buffer the agents share while they decode: a json.Decoder each would
// keep one the size of the largest event seen, 22 MB over 5,000 agents.
type eventLines struct {
	r *bufio.Reader
}

var eventBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// maxPooledEvent bounds the buffers eventLines gives back: one grown by a
// rare huge event is left to the collector.
const maxPooledEvent = 64 << 10

// decode reads the next event into v. A stream that ends inside an event
// is io.ErrUnexpectedEOF; one that ends between events, io.EOF.
func (l *eventLines) decode(v any) error {
	line, err := l.r.ReadSlice('\n')
	if err == nil {
		return json.Unmarshal(line, v)
	}
	if err != bufio.ErrBufferFull {
		return partial(err, len(line))
	}
	bp := eventBuffers.Get().(*[]byte)
	buf := append((*bp)[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = l.r.ReadSlice('\n')
		buf = append(buf, line...)
	}
	if err == nil {
		// Decoding copies what it keeps (strings, the raw status).
		err = json.Unmarshal(buf, v)
	} else {
		err = partial(err, len(buf))
	}
	if cap(buf) <= maxPooledEvent {
		*bp = buf[:0]
		eventBuffers.Put(bp)
	}
	return err
}

// partial turns the end of a stream after n bytes of an event into
// io.ErrUnexpectedEOF.
func partial(err error, n int) error {
	if err == io.EOF && n > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// reportRunning writes the status a running pod gets from its agent,
// unless the pod already has it or is going away.
func (a *agent) reportRunning(ctx context.Context, pod *hollowPod) error {
	for attempt := 0; ; attempt++ {
		if pod.Metadata.DeletionTimestamp != nil || pod.Spec.NodeName != a.name {
			return nil
		}
		// Most events are of pods already reported (the echo of the
		// report): read the phase alone before the whole status.
		var phase struct {
			Phase api.PodPhase `json:"phase"`
		}
		if len(pod.Status) > 0 {
			if err := json.Unmarshal(pod.Status, &phase); err != nil {
				return fmt.Errorf("decode status: %w", err)
			}
		}
		if phase.Phase != api.PodPending && phase.Phase != "" {
			return nil
		}
		var st api.PodStatus
		if len(pod.Status) > 0 {
			if err := json.Unmarshal(pod.Status, &st); err != nil {
				return fmt.Errorf("decode status: %w", err)
			}
		}
		now := metav1.NewTime(a.sh.clock.Now())
		n := a.sh.podIPs.Add(1)
		ip := fmt.Sprintf("127.%d.%d.%d", 1+(n>>16)&127, (n>>8)&255, n&255)
		st.Phase = api.PodRunning
		st.HostIP = a.ip
		st.PodIP = ip
		st.PodIPs = []api.PodIP{{IP: ip}}
		st.StartTime = &now
		for _, t := range []api.PodConditionType{api.PodInitialized, api.ContainersReady, api.PodReady} {
			setPodCondition(&st, api.PodCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: now})
		}
		st.ContainerStatuses = st.ContainerStatuses[:0]
		// A pod that runs to completion (a Job's) has nothing to run in a
		// hollow container: it ends at once, Succeeded.
		ends := pod.Spec.RestartPolicy == api.RestartPolicyNever || pod.Spec.RestartPolicy == api.RestartPolicyOnFailure
		if ends {
			st.Phase = api.PodSucceeded
			for _, t := range []api.PodConditionType{api.ContainersReady, api.PodReady} {
				setPodCondition(&st, api.PodCondition{Type: t, Status: api.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now})
			}
		}
		started := !ends
		for _, c := range pod.Spec.Containers {
			cs := api.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "hollow://" + c.Image, Ready: !ends, Started: &started,
				ContainerID: "hollow://" + string(pod.Metadata.UID) + "/" + c.Name,
				State:       api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: now}},
			}
			if ends {
				cs.State = api.ContainerState{Terminated: &api.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: cs.ContainerID}}
			}
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		}
		err := a.putStatus(ctx, pod, &st)
		if err == nil || client.IsNotFound(err) {
			return nil
		}
		if !client.IsConflict(err) || attempt >= 3 {
			return err
		}
		obj, err := a.c.Get(ctx, podKind, pod.Metadata.Namespace, pod.Metadata.Name)
		if err != nil {
			if client.IsNotFound(err) {
				return nil
			}
			return err
		}
		p, ok := obj.(*api.Pod)
		if !ok {
			return errors.New("get pod: not a pod")
		}
		if pod, err = hollowOf(p); err != nil {
			return err
		}
	}
}

// putStatus writes a pod's status as the agent does, but sends only what
// a status write reads (the identity, the resourceVersion it is based on,
// the status: the server keeps the stored spec) and does not decode the
// answer, which the hollow agent has no use for. A hollow agent shares
// the control plane's CPUs, so its own work is kept to what the API
// requires.
func (a *agent) putStatus(ctx context.Context, pod *hollowPod, st *api.PodStatus) error {
	m := &pod.Metadata
	body, err := json.Marshal(&api.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		},
		Status: *st,
	})
	if err != nil {
		return err
	}
	resp, err := a.c.Do(ctx, http.MethodPut, client.ResourcePath(podKind, m.Namespace, m.Name, "status"), nil, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// finishDeletion deletes a pod marked for deletion at once, as the agent
// does once its containers have stopped: a hollow pod has none.
func (a *agent) finishDeletion(ctx context.Context, pod *hollowPod) error {
	if pod.Spec.NodeName != a.name {
		return nil
	}
	uid := pod.Metadata.UID
	_, err := a.c.Delete(ctx, podKind, pod.Metadata.Namespace, pod.Metadata.Name, &metav1.DeleteOptions{
		GracePeriodSeconds: ptr(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if client.IsNotFound(err) || client.IsConflict(err) {
		return nil
	}
	return err
}

func setPodCondition(st *api.PodStatus, c api.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				return
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// NodeCapacity is the capacity (and allocatable) of every hollow node.
func NodeCapacity(cpu, memory resource.Quantity, pods int) api.ResourceList {
	return api.ResourceList{
		api.ResourceCPU:              cpu,
		api.ResourceMemory:           memory,
		api.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		api.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}
