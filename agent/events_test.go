package agent_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

func (c *cluster) events(t *testing.T, namespace string) []*api.Event {
	t.Helper()
	objs, _, err := c.Admin.List(context.Background(), api.KindOf(&api.Event{}), namespace, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*api.Event, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Event)
	}
	return out
}

func TestRecordEvent(t *testing.T) {
	c := startCluster(t)
	nc := c.Join(t, "n1")
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	if err := node.New(node.Options{Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk}).Register(ctx); err != nil {
		t.Fatal(err)
	}
	web := staticPod(t, "web", "nginx", "n1")
	if err := agent.NewMirrorManager(nc, "n1", nil).Sync(ctx, []*api.Pod{web}); err != nil {
		t.Fatal(err)
	}
	obj, err := c.Admin.Get(ctx, api.KindOf(&api.Pod{}), "default", "web-n1")
	if err != nil {
		t.Fatal(err)
	}
	mirror := obj.(*api.Pod)

	for range 3 {
		if err := agent.RecordEvent(ctx, nc, mirror, api.EventTypeWarning, "BackOff", "Back-off restarting failed container"); err != nil {
			t.Fatal(err)
		}
	}
	if err := agent.RecordEvent(ctx, nc, mirror, api.EventTypeNormal, "Started", "Started container main"); err != nil {
		t.Fatal(err)
	}
	evs := c.events(t, "default")
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(evs), evs)
	}
	counts := map[string]int32{}
	for _, e := range evs {
		counts[e.Reason] = e.Count
		io := e.InvolvedObject
		if io.Kind != "Pod" || io.Name != "web-n1" || io.Namespace != "default" || io.UID != string(mirror.UID) || io.APIVersion != "v1" {
			t.Errorf("involvedObject %+v", io)
		}
		if e.Source.Component != "berth-agent" || e.Source.Host != "n1" || e.FirstTimestamp.IsZero() || e.LastTimestamp.Before(&e.FirstTimestamp) {
			t.Errorf("event %s: source %+v, first %v, last %v", e.Name, e.Source, e.FirstTimestamp, e.LastTimestamp)
		}
	}
	if counts["BackOff"] != 3 || counts["Started"] != 1 {
		t.Errorf("counts %v, want BackOff 3, Started 1", counts)
	}

	// An event about the Node goes to the default namespace.
	node := c.Node(t, "n1")
	if err := agent.RecordEvent(ctx, nc, node, api.EventTypeNormal, "NodeReady", "Node n1 status is now: NodeReady"); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range c.events(t, "default") {
		if e.Reason == "NodeReady" {
			found = e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == "n1" && e.InvolvedObject.Namespace == "" && e.Source.Host == "n1" && e.Count == 1
		}
	}
	if !found {
		t.Errorf("node event not recorded as expected: %+v", c.events(t, "default"))
	}

	// An event deleted under the correlator starts again at one.
	for _, e := range c.events(t, "default") {
		if e.Reason == "Started" {
			if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Event{}), "default", e.Name, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := agent.RecordEvent(ctx, nc, mirror, api.EventTypeNormal, "Started", "Started container main"); err != nil {
		t.Fatal(err)
	}
	for _, e := range c.events(t, "default") {
		if e.Reason == "Started" && e.Count != 1 {
			t.Errorf("recreated event count %d", e.Count)
		}
	}
}
