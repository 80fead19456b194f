package pods

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/testtool"
)

func TestClockTimeoutRunsOnTheInjectedClock(t *testing.T) {
	clk := testingclock.NewFakeClock(testEpoch)
	ctx, cancel := clockTimeout(context.Background(), clk, time.Second)
	defer cancel()
	clk.Step(999 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("timed out early")
	}
	clk.Step(time.Millisecond)
	testtool.WaitFor(t, 5*time.Second, "timeout", func() error {
		if ctx.Err() == nil {
			return errors.New("the context is not done")
		}
		return nil
	})

	// Cancelling first stops the timer: nothing waits on the clock.
	_, cancel2 := clockTimeout(context.Background(), clk, time.Second)
	cancel2()
	cancel()
	if clk.HasWaiters() {
		t.Error("timer left on the clock")
	}
}
