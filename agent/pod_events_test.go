package agent

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

func TestAPIPodEventsNeverBlock(t *testing.T) {
	e := newAPIPodEvents("n1", func() *client.Client { return nil }, slog.New(slog.DiscardHandler))
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	for range 2 * podEventQueue {
		e.PodEvent(p, api.EventTypeNormal, pods.ReasonStarted, "Started container app")
	}
	if n := len(e.queue); n != podEventQueue {
		t.Fatalf("queue holds %d, want %d", n, podEventQueue)
	}
	got := <-e.queue
	if got.pod.Spec.NodeName != "n1" || got.pod.Name != "web" || got.pod.UID != "u1" {
		t.Errorf("queued pod %+v: want this node as host", got.pod.ObjectMeta)
	}
	// Not connected: Run drops what is queued and stops with its context.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	testtool.WaitFor(t, 5*time.Second, "the queue drained", func() error {
		if n := len(e.queue); n != 0 {
			return fmt.Errorf("%d queued", n)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
