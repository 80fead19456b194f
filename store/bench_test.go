package store_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

var (
	podKind, _   = api.LookupResource("pods")
	eventKind, _ = api.LookupResource("events")
)

// BenchmarkCreatePods measures batched creation on the memory backend; the
// bolt backend's twin is in store/bolt.
func BenchmarkCreatePods(b *testing.B) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := storetest.CreatePods(b, s, storetest.MakePods(b.N, 5000), 1000, 2)
	b.ReportMetric(float64(b.N)/d.Seconds(), "pods/s")
}

func loadNodes(b *testing.B, s *store.Store, pods, nodes int) {
	b.Helper()
	load(b, s, pods, func(i int) api.Object { return storetest.Pod(i, storetest.NodeName(i, nodes)) })
}

// load creates n objects made by object, in transactions of 1,000.
func load(b *testing.B, s *store.Store, n int, object func(i int) api.Object) {
	b.Helper()
	ctx := context.Background()
	for lo := 0; lo < n; lo += 1000 {
		_, err := s.Txn(ctx, func(tx *store.Txn) error {
			for i := lo; i < min(lo+1000, n); i++ {
				if _, err := tx.Create(object(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListPodsOfNode lists the 20 pods of one node among 100,000.
func BenchmarkListPodsOfNode(b *testing.B) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	loadNodes(b, s, 100000, 5000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		objs, _, err := s.List(podKind, store.Filter{Index: store.IndexNode, Value: fmt.Sprintf("node-%d", i%5000)})
		if err != nil || len(objs) != 20 {
			b.Fatalf("%d pods, %v", len(objs), err)
		}
	}
}

// BenchmarkWatchFanout runs 5,000 watchers, one per node, and 100,000 pod
// updates spread over the nodes. Each watcher must see exactly its node's
// updates; the metric is updates delivered per second.
func BenchmarkWatchFanout(b *testing.B) {
	const nodes, pods, updates = 5000, 20000, 100000
	for b.Loop() {
		b.StopTimer()
		s, err := store.New(store.Memory{}, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		loadNodes(b, s, pods, nodes)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		counts := make([]int, nodes)
		for n := range nodes {
			w, err := s.Watch(ctx, store.WatchOptions{Kind: podKind, Filter: store.Filter{Index: store.IndexNode, Value: fmt.Sprintf("node-%d", n)}})
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				for counts[n] < updates/nodes {
					e, err := w.Next(ctx)
					if err != nil {
						return
					}
					if e.Object.(*api.Pod).Spec.NodeName != fmt.Sprintf("node-%d", n) {
						b.Errorf("watcher of node-%d woken by a pod of %s", n, e.Object.(*api.Pod).Spec.NodeName)
					}
					counts[n]++
				}
			})
		}
		snap := s.Snapshot()
		current := make([]*api.Pod, pods)
		for i := range pods {
			o, _ := snap.Get(podKind, "default", storetest.PodName(i))
			current[i] = o.(*api.Pod)
		}
		b.StartTimer()
		start := time.Now()
		for lo := 0; lo < updates; lo += 500 {
			_, err := s.Txn(ctx, func(tx *store.Txn) error {
				for u := lo; u < lo+500; u++ {
					p := current[u%pods].DeepCopyObject().(*api.Pod)
					p.Status.Phase = api.PodRunning
					p.Status.Message = fmt.Sprint(u)
					out, err := tx.Update(p)
					if err != nil {
						return err
					}
					current[u%pods] = out.(*api.Pod)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		for n, c := range counts {
			if c != updates/nodes {
				b.Fatalf("node-%d saw %d updates, want %d", n, c, updates/nodes)
			}
		}
		b.ReportMetric(updates/elapsed.Seconds(), "updates/s")
		cancel()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkMemoryPerPod reports the heap the store holds per pod beyond
// the pod objects themselves: memdb rows, indexes and bookkeeping.
func BenchmarkMemoryPerPod(b *testing.B) {
	const n = 100000
	for b.Loop() {
		b.StopTimer()
		pods := make([]*api.Pod, n)
		for i := range pods {
			pods[i] = storetest.Pod(i, storetest.NodeName(i, 5000))
			pods[i].UID = types.UID(fmt.Sprintf("11111111-0000-0000-0000-%012d", i))
			pods[i].ResourceVersion = "1000000"
		}
		before := heapInUse()
		s, err := store.New(store.Memory{}, store.Options{History: 1})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for lo := 0; lo < n; lo += 1000 {
			s.Txn(ctx, func(tx *store.Txn) error {
				for _, p := range pods[lo : lo+1000] {
					tx.Create(p)
				}
				return nil
			})
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/n, "store-bytes/pod")
		runtime.KeepAlive(pods)
		s.Close()
		b.StartTimer()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStatusUpdates writes the status of pods among 100,000, one pod
// a transaction (as the API server's status writes are) and 16 a
// transaction (as the scheduler's bindings are under load).
func BenchmarkStatusUpdates(b *testing.B) {
	for _, per := range []int{1, 16} {
		b.Run(fmt.Sprintf("per-txn=%d", per), func(b *testing.B) {
			s, err := store.New(store.Memory{}, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			loadNodes(b, s, 100000, 5000)
			objs, _, err := s.List(podKind, store.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += per {
				_, err := s.Txn(context.Background(), func(tx *store.Txn) error {
					for k := range per {
						// A stride prime to the pod count visits them all.
						p := *objs[(i+k)*7919%len(objs)].(*api.Pod)
						p.Status.Phase, p.Status.HostIP = api.PodRunning, "10.0.0.1"
						p.ResourceVersion = ""
						if _, err := tx.Update(&p); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListEventsOfObject finds the events of one pod among 100,000
// events of a namespace, as a describe's field selector on
// involvedObject.uid does: there is no index by involved object, so it
// scans the namespace.
func BenchmarkListEventsOfObject(b *testing.B) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const events = 100000
	load(b, s, events, func(i int) api.Object {
		pod := storetest.Pod(i, storetest.NodeName(i, 5000))
		return &api.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: pod.Namespace, Name: fmt.Sprintf("%s.%x", pod.Name, i)},
			InvolvedObject: api.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: fmt.Sprintf("uid-%d", i)},
			Reason:         "Scheduled", Message: "Successfully assigned " + pod.Name, Type: api.EventTypeNormal, Count: 1,
		}
	})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		uid := fmt.Sprintf("uid-%d", i%events)
		objs, _, err := s.List(eventKind, store.Filter{Namespace: "default", Predicate: func(o api.Object) bool {
			return o.(*api.Event).InvolvedObject.UID == uid
		}})
		if err != nil || len(objs) != 1 {
			b.Fatalf("%d events, %v", len(objs), err)
		}
	}
}
