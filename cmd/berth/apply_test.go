package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/berth-dev/berth/api"
)

// racingAPI is the real client with another writer in it: after each of
// the first `races` reads of Deployment web, it writes the Deployment
// itself (an annotation, as a controller writes its status) before apply
// can write its merge, so apply's update carries a stale resourceVersion.
type racingAPI struct {
	apiClient
	mu     sync.Mutex
	races  int
	reads  int
	writes int
}

func (r *racingAPI) Get(ctx context.Context, k *api.Kind, ns, name string) (api.Object, error) {
	obj, err := r.apiClient.Get(ctx, k, ns, name)
	d, ok := obj.(*api.Deployment)
	if err != nil || !ok || name != "web" {
		return obj, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.writes == r.races {
		return obj, nil
	}
	r.writes++
	other := d.DeepCopy()
	if other.Annotations == nil {
		other.Annotations = map[string]string{}
	}
	other.Annotations["test.berth.dev/writer"] = fmt.Sprint(r.writes)
	if _, err := r.apiClient.Update(ctx, k, ns, other); err != nil {
		return nil, fmt.Errorf("the other writer: %w", err)
	}
	return obj, nil
}

// TestApplyRetriesConflict applies to a Deployment that another writer
// changes between apply's read and its write: apply backs off, reads again
// and merges anew, keeping the other writer's change, and gives up after
// conflictAttempts with the server's Conflict.
func TestApplyRetriesConflict(t *testing.T) {
	berth := berthAgainstServer(t)
	if r := berth("apply", "-f", "testdata/apply/app.yaml"); r.code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	racing := func(races int) *racingAPI {
		t.Helper()
		real := connectAPI
		r := &racingAPI{races: races}
		connectAPI = func(g *globalOptions) (apiClient, error) {
			c, err := real(g)
			r.apiClient = c
			return r, err
		}
		t.Cleanup(func() { connectAPI = real })
		return r
	}

	waits := recordConflictWaits(t)
	r := racing(conflictAttempts - 1)
	res := berth("apply", "-f", "testdata/apply/app-v2.yaml")
	if res.code != exitOK || !strings.Contains(res.stdout, "deployment.apps/web configured\n") {
		t.Fatalf("apply v2 against a writer: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if r.reads != conflictAttempts {
		t.Errorf("apply read the deployment %d times, want %d", r.reads, conflictAttempts)
	}
	if len(*waits) != conflictAttempts-1 {
		t.Errorf("apply waited %v between its attempts, want %d back-offs", *waits, conflictAttempts-1)
	}
	out := berth("get", "deploy/web", "-n", "shop", "-o", "yaml")
	for _, want := range []string{"replicas: 3\n", "image: nginx:1.28\n", fmt.Sprintf("test.berth.dev/writer: %q\n", fmt.Sprint(conflictAttempts-1))} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("after apply: no %q in\n%s", want, out.stdout)
		}
	}

	r = racing(conflictAttempts)
	res = berth("apply", "-f", "testdata/apply/app.yaml")
	if res.code != exitFailure || !strings.Contains(res.stderr, "Error from server (Conflict)") {
		t.Errorf("apply against a writer that always wins: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if r.reads != conflictAttempts {
		t.Errorf("apply read the deployment %d times, want %d", r.reads, conflictAttempts)
	}
}
