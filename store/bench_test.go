package store

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// benchPod is a pod as a ReplicaSet makes it: labels, an owner, one
// container with requests, a port and an environment variable.
func benchPod(i int, node string) *api.Pod {
	t := true
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      fmt.Sprintf("web-7d4b9c8f6-%06d", i),
			Labels:    map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6",
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i%100)), Controller: &t, BlockOwnerDeletion: &t,
			}},
		},
		Spec: api.PodSpec{
			NodeName: node,
			Containers: []api.Container{{
				Name:    "web",
				Image:   "web:1.0",
				Command: []string{"/bin/web", "--listen", "$(POD_IP):8080"},
				Env:     []api.EnvVar{{Name: "POD_IP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports:   []api.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: api.ProtocolTCP}},
				Resources: api.ResourceRequirements{Requests: api.ResourceList{
					api.ResourceCPU:    resource.MustParse("100m"),
					api.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
			RestartPolicy: api.RestartPolicyAlways,
		},
	}
}

// createPods writes n pods in transactions of batch pods from workers
// goroutines and returns how long it took.
func createPods(b *testing.B, s *Store, n, batch, workers int) time.Duration {
	ctx := context.Background()
	pods := make([]*api.Pod, n)
	for i := range pods {
		pods[i] = benchPod(i, fmt.Sprintf("node-%d", i%5000))
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for lo := range next {
				hi := min(lo+batch, n)
				_, err := s.Txn(ctx, func(tx *Txn) error {
					for _, p := range pods[lo:hi] {
						if _, err := tx.Create(p); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	for lo := 0; lo < n; lo += batch {
		next <- lo
	}
	close(next)
	wg.Wait()
	return time.Since(start)
}

// BenchmarkCreatePods measures batched creation on the memory backend; the
// bolt backend's twin is in store/bolt.
func BenchmarkCreatePods(b *testing.B) {
	s, err := New(Memory{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := createPods(b, s, b.N, 1000, 2)
	b.ReportMetric(float64(b.N)/d.Seconds(), "pods/s")
}

func loadNodes(b *testing.B, s *Store, pods, nodes int) {
	b.Helper()
	ctx := context.Background()
	for lo := 0; lo < pods; lo += 1000 {
		_, err := s.Txn(ctx, func(tx *Txn) error {
			for i := lo; i < min(lo+1000, pods); i++ {
				if _, err := tx.Create(benchPod(i, fmt.Sprintf("node-%d", i%nodes))); err != nil {
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
	s, err := New(Memory{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	loadNodes(b, s, 100000, 5000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		objs, _, err := s.List(podKind, Filter{Index: IndexNode, Value: fmt.Sprintf("node-%d", i%5000)})
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
		s, err := New(Memory{}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		loadNodes(b, s, pods, nodes)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		counts := make([]int, nodes)
		for n := range nodes {
			w, err := s.Watch(ctx, WatchOptions{Kind: podKind, Filter: Filter{Index: IndexNode, Value: fmt.Sprintf("node-%d", n)}})
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
			o, _ := snap.Get(podKind, "default", fmt.Sprintf("web-7d4b9c8f6-%06d", i))
			current[i] = o.(*api.Pod)
		}
		b.StartTimer()
		start := time.Now()
		for lo := 0; lo < updates; lo += 500 {
			_, err := s.Txn(ctx, func(tx *Txn) error {
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
			pods[i] = benchPod(i, fmt.Sprintf("node-%d", i%5000))
			pods[i].UID = types.UID(fmt.Sprintf("11111111-0000-0000-0000-%012d", i))
			pods[i].ResourceVersion = "1000000"
		}
		before := heapInUse()
		s, err := New(Memory{}, Options{History: 1})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for lo := 0; lo < n; lo += 1000 {
			s.Txn(ctx, func(tx *Txn) error {
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
