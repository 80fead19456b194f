package workload

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestReplicaSetControllerRuns runs the controller on a real store: it
// creates the pods, replaces one that is deleted, and scales down.
func TestReplicaSetControllerRuns(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	rs := mustCreate(t, s, replicaSet("web", 3))
	c := NewReplicaSetController(s, Options{})
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	waitFor(t, "3 pods", func() bool { return len(activeOwned(pods(t, s), rs)) == 3 })

	victim := activeOwned(pods(t, s), rs)[0]
	if _, err := s.Delete(ctx, podKind, "default", victim, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod replaced", func() bool {
		owned := activeOwned(pods(t, s), rs)
		return len(owned) == 3 && owned[0] != victim && owned[1] != victim && owned[2] != victim
	})
	waitFor(t, "status.replicas 3", func() bool {
		obj, _ := s.Get(replicaSetKind, "default", "web")
		return obj.(*api.ReplicaSet).Status.Replicas == 3
	})

	scaleReplicaSet(t, s, "web", 1)
	waitFor(t, "1 pod and status.replicas 1", func() bool {
		obj, _ := s.Get(replicaSetKind, "default", "web")
		st := obj.(*api.ReplicaSet).Status
		return len(pods(t, s)) == 1 && st.Replicas == 1 && st.ObservedGeneration == 2
	})
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}
