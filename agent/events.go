package agent

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// EventComponent is the source.component of the agent's events.
const EventComponent = "berth-agent"

// maxCorrelatedEvents bounds the events the correlator remembers; past it
// the oldest are forgotten and their next repeat starts a new Event.
const maxCorrelatedEvents = 4096

// correlator remembers the last Event written for each object, type,
// reason and message, so that a repeat bumps its count instead of making a
// new one, as the kubelet's event correlator does. It is in memory: the
// node authorizer does not let a node read events, and after an agent
// restart a repeat starts a new Event.
type correlator struct {
	mu     sync.Mutex
	events map[correlationKey]*api.Event
	order  []correlationKey
}

type correlationKey struct {
	client                     *client.Client
	uid, kind, namespace, name string
	eventType, reason, message string
}

var eventCorrelator = &correlator{events: map[correlationKey]*api.Event{}}

func (c *correlator) get(k correlationKey) *api.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.events[k]; ok {
		return e.DeepCopy()
	}
	return nil
}

func (c *correlator) put(k correlationKey, e *api.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.events[k]; !ok {
		c.order = append(c.order, k)
		if len(c.order) > maxCorrelatedEvents {
			delete(c.events, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.events[k] = e.DeepCopy()
}

// RecordEvent records a v1 Event about obj in its namespace (default for
// a Node), from component berth-agent on the node obj is (a Node) or runs
// on (a Pod), so that `berth describe` shows what the agent did and why.
// A repeat of the same type, reason and message bumps the count and
// lastTimestamp of the Event already written.
func RecordEvent(ctx context.Context, c *client.Client, obj api.Object, eventType, reason, message string) error {
	k := api.KindOf(obj)
	if k == nil {
		return fmt.Errorf("record event %s: %T is not a registered kind", reason, obj)
	}
	host := ""
	switch o := obj.(type) {
	case *api.Node:
		host = o.Name
	case *api.Pod:
		host = o.Spec.NodeName
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = api.NamespaceDefault
	}
	key := correlationKey{c, string(obj.GetUID()), k.GVK.Kind, obj.GetNamespace(), obj.GetName(), eventType, reason, message}
	now := metav1.NewTime(time.Now())
	if prev := eventCorrelator.get(key); prev != nil {
		prev.Count++
		prev.LastTimestamp = now
		updated, err := c.Update(ctx, prev)
		if err == nil {
			eventCorrelator.put(key, updated.(*api.Event))
			return nil
		}
		if !client.IsNotFound(err) && !client.IsConflict(err) {
			return fmt.Errorf("record event %s on %s %s/%s: %w", reason, k.GVK.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	ev := &api.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      obj.GetName() + "." + strconv.FormatInt(now.UnixNano(), 16),
			Namespace: ns,
		},
		InvolvedObject: api.ObjectReference{
			Kind:            k.GVK.Kind,
			APIVersion:      k.APIVersion(),
			Namespace:       obj.GetNamespace(),
			Name:            obj.GetName(),
			UID:             string(obj.GetUID()),
			ResourceVersion: obj.GetResourceVersion(),
		},
		Reason:         reason,
		Message:        message,
		Source:         api.EventSource{Component: EventComponent, Host: host},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           eventType,
	}
	created, err := c.Create(ctx, ev)
	for try := int64(1); client.IsAlreadyExists(err) && try < 4; try++ {
		// Two events of one object in one nanosecond: the name is taken.
		ev.Name = obj.GetName() + "." + strconv.FormatInt(now.UnixNano()+try, 16)
		created, err = c.Create(ctx, ev)
	}
	if err != nil {
		return fmt.Errorf("record event %s on %s %s/%s: %w", reason, k.GVK.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	eventCorrelator.put(key, created.(*api.Event))
	return nil
}
