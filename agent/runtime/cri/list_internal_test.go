package cri

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/testtool"
)

// countingService answers ListContainers with one container whose name
// is the number of the call, each call held until release lets it go.
type countingService struct {
	internalapi.RuntimeService
	mu      sync.Mutex
	calls   int
	release chan struct{}
}

func (s *countingService) ListContainers(ctx context.Context, _ *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []*runtimeapi.Container{{
		Id:       fmt.Sprintf("c%d", n),
		Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("call-%d", n)},
		Labels:   map[string]string{labelManaged: "true", labelPodUID: "uid", labelContainerName: fmt.Sprintf("call-%d", n)},
		State:    runtimeapi.ContainerState_CONTAINER_RUNNING,
	}}, nil
}

func (s *countingService) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil
}

func (s *countingService) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func newListRuntime(rs internalapi.RuntimeService) *Runtime {
	return &Runtime{rs: rs, runs: map[runtime.ID]*run{}, byCRI: map[string]*run{}, exited: make(chan runtime.ID, 8), lister: make(chan struct{}, 1)}
}

// TestListCallsShareARound: List calls made while a ListContainers is
// under way do not each list again, nor take that listing's answer (it
// began before them): they share the next one.
func TestListCallsShareARound(t *testing.T) {
	rs := &countingService{release: make(chan struct{})}
	r := newListRuntime(rs)
	ctx := context.Background()

	first := make(chan string, 1)
	go func() {
		out, err := r.List(ctx)
		if err != nil || len(out) != 1 {
			first <- fmt.Sprint(out, err)
			return
		}
		first <- out[0].ID.Name
	}()
	testtool.WaitFor(t, 10*time.Second, "the first listing under way", func() error {
		if rs.count() != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	const later = 50
	got := make(chan string, later)
	for range later {
		go func() {
			out, err := r.List(ctx)
			if err != nil || len(out) != 1 {
				got <- fmt.Sprint(out, err)
				return
			}
			got <- out[0].ID.Name
		}()
	}
	// Each later call waits in the next round.
	testtool.WaitFor(t, 10*time.Second, "the later calls waiting", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.nextList == nil || r.nextList.joined != later {
			return errors.New("not all in the next round")
		}
		return nil
	})
	close(rs.release)
	if name := <-first; name != "call-1" {
		t.Errorf("the first call: %s, want call-1", name)
	}
	for range later {
		if name := <-got; name != "call-2" {
			t.Errorf("a later call: %s, want call-2, the listing after it", name)
		}
	}
	if n := rs.count(); n != 2 {
		t.Errorf("%d ListContainers for %d List calls, want 2", n, later+1)
	}
}

// TestListAfterAGivenUpRound: a call whose round failed only because the
// call listing for it gave up lists again rather than fail.
func TestListAfterAGivenUpRound(t *testing.T) {
	rs := &countingService{release: make(chan struct{})}
	r := newListRuntime(rs)
	leaderCtx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() { _, err := r.List(leaderCtx); leader <- err }()
	testtool.WaitFor(t, 10*time.Second, "the leader listing", func() error {
		if rs.count() != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	// A second call joins while the leader lists, then the leader gives
	// up; the second is let through on its own listing.
	second := make(chan error, 1)
	go func() { _, err := r.List(context.Background()); second <- err }()
	testtool.WaitFor(t, 10*time.Second, "the second call waiting", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.nextList == nil {
			return errors.New("no round pending")
		}
		return nil
	})
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Errorf("the leader: %v, want its own cancellation", err)
	}
	close(rs.release)
	if err := <-second; err != nil {
		t.Errorf("the second call failed with the leader's cancellation: %v", err)
	}
}
