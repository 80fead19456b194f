package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
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

// TestApplyTakesOverTheObjectsOfADeletedSource: an object whose
// berth.dev/source names a Source that no longer exists is no longer
// that source's, and apply updates it and makes it its own.
func TestApplyTakesOverTheObjectsOfADeletedSource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig := startControlPlane(t)
	cfg, err := client.LoadKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	left := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "left", Annotations: map[string]string{api.AnnotationSource: "gone"}}, Data: map[string]string{"k": "old"}}
	testtool.WaitFor(t, 10*time.Second, "the control plane to take a ConfigMap", func() error {
		_, err := c.Create(t.Context(), left)
		return err
	})
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: left}\ndata: {k: new}\n"
	// diff shows the same: the claim changes hands, with no note that
	// apply would refuse.
	d := runBerth(t, manifest, "diff", "-f", "-", "--kubeconfig", kubeconfig)
	if d.code != exitFailure || !strings.Contains(d.stdout, "+    berth.dev/source: api") || strings.Contains(d.stderr, "owned by") {
		t.Errorf("diff: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	r := runBerth(t, manifest, "apply", "-f", "-", "--kubeconfig", kubeconfig)
	if r.code != exitOK || r.stdout != "configmap/left configured\n" {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	obj, err := c.Get(t.Context(), api.KindOf(&api.ConfigMap{}), "default", "left")
	if err != nil {
		t.Fatal(err)
	}
	if cm := obj.(*api.ConfigMap); cm.Annotations[api.AnnotationSource] != "api" || cm.Data["k"] != "new" {
		t.Errorf("after apply: %v %v", cm.Annotations, cm.Data)
	}
}
