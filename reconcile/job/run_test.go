package job

import (
	"context"
	"sync"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// TestControllerRuns runs the controller on a real store, fed by its
// watches alone, while the test plays the agents: every pod it makes
// succeeds, and the Job of 5 completions, 2 at a time, completes.
func TestControllerRuns(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{Admit}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	j := newJob("pi", 5, 2)
	api.Default(j)
	if _, err := s.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	c := NewController(s, Options{})
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	most := 0
	waitFor(t, "the job complete", func() bool {
		objs, _, _ := s.List(podKind, store.Filter{Namespace: "default"})
		running := 0
		for _, o := range objs {
			p := o.(*api.Pod)
			if finished(p) || p.DeletionTimestamp != nil {
				continue
			}
			running++
			p = p.DeepCopy()
			p.Status.Phase = api.PodSucceeded
			_, _ = s.Update(ctx, p)
		}
		most = max(most, running)
		obj, _ := s.Get(jobKind, "default", "pi")
		return api.JobFinished(obj.(*api.Job)) != nil
	})
	obj, _ := s.Get(jobKind, "default", "pi")
	j = obj.(*api.Job)
	if c := api.JobFinished(j); c.Type != api.JobComplete || j.Status.Succeeded != 5 {
		t.Errorf("finished %+v, status %+v", c, j.Status)
	}
	if most > 2 {
		t.Errorf("%d pods ran at once", most)
	}
	objs, _, _ := s.List(podKind, store.Filter{Namespace: "default"})
	if len(objs) != 5 {
		t.Errorf("%d pods made, want 5", len(objs))
	}
}
