package daemonset

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestControllerFollowsNodes runs the controller with its watches: a node
// joining gets its pod, a node leaving loses it, with no sync called by
// hand.
func TestControllerFollowsNodes(t *testing.T) {
	e := newEnv(t)
	e.node("n1", nil)
	e.create(logs())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	c := NewController(e.s, Options{})
	wg.Go(func() {
		if err := c.Run(ctx, 1); err != nil {
			t.Error(err)
		}
	})
	until := func(what string, want ...string) {
		t.Helper()
		testtool.WaitFor(t, 10*time.Second, what, func() error {
			if got := e.images(); fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("%v", got)
			}
			return nil
		})
	}
	until("n1's pod", "n1=v1")
	e.node("n2", nil)
	until("n2's pod", "n1=v1", "n2=v1")
	if _, err := e.s.Delete(ctx, nodeKind, "", "n1", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until("n1's pod gone", "n2=v1")
}
