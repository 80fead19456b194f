package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// behindReplica is a follower's view of a replicated backend that is
// one commit behind the cluster: it loads a Deployment of one replica,
// and only delivers the commit that scaled it to three once a quorum
// read asks how far the commits go (ReadIndex), as a follower whose
// watch lags learns of the newest commit from the quorum.
type behindReplica struct {
	objs    []api.Object
	next    store.Op
	asked   chan struct{}
	askOnce sync.Once
}

func (b *behindReplica) Load(fn func(api.Object) error) (uint64, error) {
	for _, o := range b.objs {
		if err := fn(o); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

func (b *behindReplica) Commit(uint64, []store.Op) error { return store.ErrNotLeader }
func (b *behindReplica) Close() error                    { return nil }
func (b *behindReplica) Lost() <-chan struct{}           { return nil }

func (b *behindReplica) Campaign(ctx context.Context, _ string) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (b *behindReplica) Follow(ctx context.Context, apply func(uint64, []store.Op) error) error {
	select {
	case <-ctx.Done():
		return nil
	case <-b.asked:
	}
	if err := apply(b.next.Revision, []store.Op{b.next}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (b *behindReplica) ReadIndex(_ context.Context, leading bool) (uint64, error) {
	if leading {
		return 0, errors.New("the test's store follows")
	}
	b.askOnce.Do(func() { close(b.asked) })
	return b.next.Revision, nil
}

// A GET of a scale subresource without a resourceVersion is a read of
// the most recent object, as a GET of the object is: through a follower
// whose copy lags, it waits for the commit every server may already have
// answered, rather than answer the replicas it held before. One at
// resourceVersion=0 is served from the copy.
func TestScaleGetReadsTheLatest(t *testing.T) {
	deploy := func(replicas int32, rv string) *api.Deployment {
		return &api.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: rv},
			Spec: api.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			},
		}
	}
	b := &behindReplica{
		objs: []api.Object{
			&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", ResourceVersion: "1"}},
			deploy(1, "1"),
		},
		next:  store.Op{Kind: api.MustLookupResource("deployments"), Namespace: "default", Name: "web", Object: deploy(3, "2"), Revision: 2},
		asked: make(chan struct{}),
	}
	e := newEnv(t, withBackend(b))
	replicas := func(query string) int32 {
		t.Helper()
		code, _, body := e.do(http.MethodGet, "/apis/apps/v1/namespaces/default/deployments/web/scale"+query, adminToken, "", "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET scale%s: %d %s", query, code, body)
		}
		var sc struct {
			Spec struct {
				Replicas int32 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(body, &sc); err != nil {
			t.Fatal(err)
		}
		return sc.Spec.Replicas
	}
	if n := replicas("?resourceVersion=0"); n != 1 {
		t.Fatalf("scale at resourceVersion=0: %d replicas, want the copy's 1", n)
	}
	if n := replicas(""); n != 3 {
		t.Fatalf("scale read through a follower behind: %d replicas, want the latest 3", n)
	}
}
