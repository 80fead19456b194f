package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// HeartbeatInterval is how often a hollow agent renews its Ready
// condition, as the agent does.
const HeartbeatInterval = 10 * time.Second

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
	name  string
	ip    string
	c     *client.Client
	node  *api.Node
}

func newAgent(sh *agentShared, index int) *agent {
	return &agent{
		sh:    sh,
		index: index,
		name:  fmt.Sprintf("hollow-%05d", index),
		// Addresses are data only: nothing ever dials them.
		ip: fmt.Sprintf("127.0.%d.%d", (index>>8)&255, index&255),
	}
}

func (a *agent) transport() *http.Transport {
	return a.sh.transports[a.index/AgentsPerTransport]
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
	obj, err := a.c.Create(ctx, n)
	if client.IsAlreadyExists(err) {
		if obj, err = a.c.Get(ctx, nodeKind, "", a.name); err == nil {
			a.node = obj.(*api.Node)
			return a.heartbeat(ctx)
		}
	}
	if err != nil {
		return err
	}
	a.node = obj.(*api.Node)
	return nil
}

// heartbeat renews the Ready condition's heartbeat time.
func (a *agent) heartbeat(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		n := a.node.DeepCopy()
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
		obj, err := a.c.UpdateStatus(ctx, n)
		if err == nil {
			a.node = obj.(*api.Node)
			return nil
		}
		if !client.IsConflict(err) || attempt >= 3 {
			return err
		}
		if obj, err = a.c.Get(ctx, nodeKind, "", a.name); err != nil {
			return err
		}
		a.node = obj.(*api.Node)
	}
}

// heartbeats renews the heartbeat every HeartbeatInterval until ctx ends.
func (a *agent) heartbeats(ctx context.Context) {
	t := a.sh.clock.NewTicker(HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := a.heartbeat(ctx); err != nil && ctx.Err() == nil {
				a.sh.fail(a.name, "heartbeat", err)
			}
		}
	}
}

// watchPods watches the pods bound to the node and reports each new one
// Running. ready is called once the first watch is established (or it
// failed to be).
func (a *agent) watchPods(ctx context.Context, ready func(error)) {
	opts := client.WatchOptions{
		ListOptions:    client.ListOptions{FieldSelector: "spec.nodeName=" + a.name},
		AllowBookmarks: true,
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := a.c.Watch(ctx, podKind, "", opts)
		if err != nil {
			if ready != nil {
				ready(fmt.Errorf("%s: watch pods: %w", a.name, err))
				return
			}
			if client.IsGone(err) {
				opts.ResourceVersion = ""
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
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				w.Stop()
				if client.IsGone(err) {
					opts.ResourceVersion = ""
				}
				break
			}
			backoff = 100 * time.Millisecond
			if rv := ev.ResourceVersion(); rv != "" {
				opts.ResourceVersion = rv
			}
			if ev.Type != client.Added && ev.Type != client.Modified {
				continue
			}
			if pod, ok := ev.Object.(*api.Pod); ok {
				if err := a.reportRunning(ctx, pod); err != nil && ctx.Err() == nil {
					a.sh.fail(a.name, "pod status", err)
				}
			}
		}
	}
	if ready != nil {
		ready(ctx.Err())
	}
}

// reportRunning writes the status a running pod gets from its agent,
// unless the pod already has it or is going away.
func (a *agent) reportRunning(ctx context.Context, pod *api.Pod) error {
	for attempt := 0; ; attempt++ {
		if (pod.Status.Phase != api.PodPending && pod.Status.Phase != "") || pod.DeletionTimestamp != nil || pod.Spec.NodeName != a.name {
			return nil
		}
		p := pod.DeepCopy()
		now := metav1.NewTime(a.sh.clock.Now())
		n := a.sh.podIPs.Add(1)
		ip := fmt.Sprintf("127.%d.%d.%d", 1+(n>>16)&127, (n>>8)&255, n&255)
		p.Status.Phase = api.PodRunning
		p.Status.HostIP = a.ip
		p.Status.PodIP = ip
		p.Status.PodIPs = []api.PodIP{{IP: ip}}
		p.Status.StartTime = &now
		for _, t := range []api.PodConditionType{api.PodInitialized, api.ContainersReady, api.PodReady} {
			setPodCondition(p, api.PodCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: now})
		}
		p.Status.ContainerStatuses = p.Status.ContainerStatuses[:0]
		started := true
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, api.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "hollow://" + c.Image, Ready: true, Started: &started,
				ContainerID: "hollow://" + string(p.UID) + "/" + c.Name,
				State:       api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: now}},
			})
		}
		_, err := a.c.UpdateStatus(ctx, p)
		if err == nil || client.IsNotFound(err) {
			return nil
		}
		if !client.IsConflict(err) || attempt >= 3 {
			return err
		}
		obj, err := a.c.Get(ctx, podKind, pod.Namespace, pod.Name)
		if err != nil {
			if client.IsNotFound(err) {
				return nil
			}
			return err
		}
		var ok bool
		if pod, ok = obj.(*api.Pod); !ok {
			return errors.New("get pod: not a pod")
		}
	}
}

func setPodCondition(p *api.Pod, c api.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			if p.Status.Conditions[i].Status == c.Status {
				return
			}
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

// nodeCapacity is the capacity (and allocatable) of every hollow node.
func nodeCapacity(cpu, memory resource.Quantity, pods int) api.ResourceList {
	return api.ResourceList{
		api.ResourceCPU:              cpu,
		api.ResourceMemory:           memory,
		api.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		api.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}
