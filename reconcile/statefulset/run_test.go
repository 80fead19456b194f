package statefulset

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestControllerStartsInOrder runs the controller with its watches; the
// test plays the agents, marking each pod ready as it appears, and sees
// the pods come in order.
func TestControllerStartsInOrder(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(3))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	c := NewController(e.s, Options{})
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	testtool.WaitFor(t, 10*time.Second, "3 ready pods", func() error {
		pods := e.pods()
		// A pod exists only once the one before it is ready.
		for i := 1; i < 3; i++ {
			if pods[fmt.Sprintf("web-%d", i)] != nil {
				if prev := pods[fmt.Sprintf("web-%d", i-1)]; prev == nil || !prev.Ready() {
					t.Fatalf("web-%d made before web-%d was ready", i, i-1)
				}
			}
		}
		// Then the agent makes one pod ready at a time.
		for _, n := range []string{"web-0", "web-1", "web-2"} {
			if p := pods[n]; p != nil && !p.Ready() {
				e.ready(n)
				break
			}
		}
		if st := e.set().Status; st.ReadyReplicas != 3 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
}
