package cronjob

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/job"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestControllerRuns runs the controller on a real store with a fake
// clock: it wakes itself at each minute of a */1 schedule, with no
// write to prompt it, and makes that minute's Job.
func TestControllerRuns(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	s, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: []store.AdmitFunc{job.Admit}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	cj := newCronJob("minutely", "*/1 * * * *", api.AllowConcurrent)
	api.Default(cj)
	if _, err := s.Create(ctx, cj); err != nil {
		t.Fatal(err)
	}
	c := NewController(s, Options{Clock: clk})
	wg.Go(func() {
		if err := c.Run(ctx, 1); err != nil {
			t.Error(err)
		}
	})
	for minute := 1; minute <= 3; minute++ {
		// Let the minute pass; the controller may set its timer after
		// the step, so time moves on a little at each look.
		clk.Step(time.Minute)
		want := JobName("minutely", start.Add(time.Duration(minute)*time.Minute))
		testtool.WaitFor(t, 10*time.Second, "the job of minute "+fmt.Sprint(minute), func() error {
			if _, err := s.Get(jobKind, "default", want); err != nil {
				clk.Step(100 * time.Millisecond)
				return err
			}
			return nil
		})
	}
	objs, _, _ := s.List(jobKind, store.Filter{Namespace: "default"})
	if len(objs) != 3 {
		t.Errorf("%d jobs, want 3", len(objs))
	}
}
