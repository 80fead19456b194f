package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// seen records the keys a reconciler was called with, and what it read.
type seen struct {
	mu   sync.Mutex
	keys map[string]int
}

func (s *seen) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key]++
}

func (s *seen) has(keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if s.keys[k] == 0 {
			return false
		}
	}
	return true
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

func configMap(ns, name string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestControllerFollowsStoreWatch(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmKind, _ := api.LookupResource("configmaps")

	// An object that exists before the controller starts is listed.
	if _, err := s.Create(ctx, configMap("default", "early")); err != nil {
		t.Fatal(err)
	}
	got := &seen{keys: map[string]int{}}
	c := NewController("test", ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		got.add(key)
		return Result{}, nil
	}), Options{
		Store: s,
		Watches: []Watch{{
			Kind:   cmKind,
			Filter: store.Filter{Namespace: "default"},
		}, {
			// A change in namespace "other" concerns a key of its own.
			Kind:   cmKind,
			Filter: store.Filter{Namespace: "other"},
			Keys:   func(e store.Event) []string { return []string{"owner-of/" + e.Object.GetName()} },
		}},
	})
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()

	waitFor(t, "the listed object", func() bool { return got.has("default/early") })
	s.Create(ctx, configMap("default", "late"))
	s.Create(ctx, configMap("other", "x"))
	waitFor(t, "watched changes", func() bool { return got.has("default/late", "owner-of/x") })
	if got.has("other/x") {
		t.Fatal("the namespace filter let other/x through")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestControllerRelistsWhenItFallsBehind(t *testing.T) {
	// A watcher may hold two events and the log keeps four; a burst of
	// twenty writes overflows both, and the controller must list again
	// to see every object.
	s, err := store.New(store.Memory{}, store.Options{History: 4, WatcherQueue: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmKind, _ := api.LookupResource("configmaps")
	clk := clocktesting.NewFakeClock(time.Now())
	got := &seen{keys: map[string]int{}}
	c := NewController("test", ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
		got.add(key)
		return Result{}, nil
	}), Options{Store: s, Watches: []Watch{{Kind: cmKind}}, Clock: clk})
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()

	s.Create(ctx, configMap("default", "first"))
	waitFor(t, "the first object", func() bool { return got.has("default/first") })
	var want []string
	_, err = s.Txn(ctx, func(tx *store.Txn) error {
		for i := range 20 {
			name := fmt.Sprintf("c%d", i)
			want = append(want, "default/"+name)
			if _, err := tx.Create(configMap("default", name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A watch that fell behind is listed again at once.
	waitFor(t, "every object after the relist", func() bool { return got.has(want...) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
