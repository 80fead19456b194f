package agent

import (
	"context"
	"log/slog"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// podEventQueue bounds the pod events waiting for the API; past it they
// are dropped, not waited for.
const podEventQueue = 256

// apiPodEvents records pod events through the API with RecordEvent, from
// a goroutine of its own (Run), with this node as the events' host.
type apiPodEvents struct {
	node   string
	client func() *client.Client // nil while not connected
	log    *slog.Logger
	queue  chan podEvent
}

type podEvent struct {
	pod                        *api.Pod
	eventType, reason, message string
}

func newAPIPodEvents(node string, c func() *client.Client, log *slog.Logger) *apiPodEvents {
	return &apiPodEvents{node: node, client: c, log: log, queue: make(chan podEvent, podEventQueue)}
}

// PodEvent queues the event; a full queue drops it.
func (e *apiPodEvents) PodEvent(pod *api.Pod, eventType, reason, message string) {
	ref := &api.Pod{ObjectMeta: pod.ObjectMeta}
	ref.ManagedFields, ref.Annotations, ref.Labels = nil, nil, nil
	ref.Spec.NodeName = e.node
	select {
	case e.queue <- podEvent{pod: ref, eventType: eventType, reason: reason, message: message}:
	default:
		e.log.Debug("pod event dropped: queue full", "pod", pod.Namespace+"/"+pod.Name, "reason", reason)
	}
}

// Run records queued events until ctx ends. Events queued while the agent
// is not connected are dropped.
func (e *apiPodEvents) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-e.queue:
			c := e.client()
			if c == nil {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, client.DefaultTimeout)
			err := RecordEvent(rctx, c, ev.pod, ev.eventType, ev.reason, ev.message)
			switch {
			case err == nil, ctx.Err() != nil:
			case client.IsNamespaceTerminating(err) || client.IsNotFound(err):
				// The pod's namespace is going or gone (the pod's
				// containers stop as it is deleted): nowhere to record.
				e.log.Debug("pod event not recorded: its namespace is going", "pod", ev.pod.Namespace+"/"+ev.pod.Name, "reason", ev.reason, "err", err)
			default:
				e.log.Warn("record pod event", "pod", ev.pod.Namespace+"/"+ev.pod.Name, "reason", ev.reason, "err", err)
			}
			cancel()
		}
	}
}

// connectedClient is the agent's API client, nil until it has joined.
func (a *Agent) connectedClient() *client.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}
