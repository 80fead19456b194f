package sched

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// benchNode is a node as berth sim makes them: 32 cpu, 128Gi.
func benchNode(i int) *api.Node {
	return makeNode(fmt.Sprintf("node-%05d", i), func(n *api.Node) {
		n.Status.Allocatable = api.ResourceList{
			api.ResourceCPU:              resource.MustParse("32"),
			api.ResourceMemory:           resource.MustParse("128Gi"),
			api.ResourceEphemeralStorage: resource.MustParse("100Gi"),
			api.ResourcePods:             resource.MustParse("250"),
		}
		n.Labels["kubernetes.io/os"] = "linux"
	})
}

// benchPod is a ReplicaSet's pod, as berth sim makes them: 100m and
// 128Mi, labels and an owner, no ports.
func benchPod(i, owners int) *api.Pod {
	t := true
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      fmt.Sprintf("web-%07d", i),
			UID:       types.UID(fmt.Sprintf("pod-%07d", i)),
			Labels:    map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprint("web-", i%owners),
				UID: types.UID(fmt.Sprintf("rs-%04d", i%owners)), Controller: &t,
			}},
		},
		Spec: api.PodSpec{
			Containers: []api.Container{{
				Name:  "web",
				Image: "web:1.0",
				Resources: api.ResourceRequirements{Requests: api.ResourceList{
					api.ResourceCPU:    resource.MustParse("100m"),
					api.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
			RestartPolicy: api.RestartPolicyAlways,
		},
	}
}

// BenchmarkScheduleCore is the pure core at 5,000 nodes: filter a 10%
// sample from the rotating offset, score it, pick, and place the pod so
// the cluster fills as it would. ns/op is the time per pod.
func BenchmarkScheduleCore(b *testing.B) { benchScheduleCore(b, false) }

// BenchmarkScheduleCoreZones is BenchmarkScheduleCore with the nodes in
// ten zones, which spreading then counts the owner's pods over.
func BenchmarkScheduleCoreZones(b *testing.B) { benchScheduleCore(b, true) }

// BenchmarkScheduleCoreConstraints is BenchmarkScheduleCoreZones with a
// quarter of the pods (placed and scheduled) carrying a DoNotSchedule
// zone spread constraint over their ReplicaSet's pods and a preferred
// anti-affinity to them by hostname.
func BenchmarkScheduleCoreConstraints(b *testing.B) { benchScheduleCore(b, true, withConstraints) }

// withConstraints gives every fourth pod a spread constraint and a
// preferred anti-affinity term over the pods of its ReplicaSet.
func withConstraints(i int, p *api.Pod) {
	if i%4 != 0 {
		return
	}
	rs := p.OwnerReferences[0].Name
	p.Labels = map[string]string{"app": "web", "rs": rs}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"rs": rs}}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: api.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
	}}
	p.Spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: api.LabelHostname},
		}},
	}}
}

// BenchmarkScheduleCoreHostSpread is BenchmarkScheduleCoreZones with the
// constraints berth sim --spread gives: every fourth pod spread by
// hostname (maxSkew 1, DoNotSchedule) with a preferred anti-affinity to
// its ReplicaSet's pods by zone.
func BenchmarkScheduleCoreHostSpread(b *testing.B) { benchScheduleCore(b, true, withHostSpread) }

func withHostSpread(i int, p *api.Pod) {
	if i%4 != 0 {
		return
	}
	rs := p.OwnerReferences[0].Name
	p.Labels = map[string]string{"app": "web", "rs": rs}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"rs": rs}}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: api.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
	}}
	p.Spec.Affinity = &api.Affinity{PodAntiAffinity: &api.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: api.LabelTopologyZone},
		}},
	}}
}

func benchScheduleCore(b *testing.B, zones bool, change ...func(int, *api.Pod)) {
	pod := func(i, owners int) *api.Pod {
		p := benchPod(i, owners)
		for _, c := range change {
			c(i, p)
		}
		return p
	}
	const numNodes, owners = 5000, 20
	nodes := NewNodes()
	for i := range numNodes {
		node := benchNode(i)
		if zones {
			node.Labels[api.LabelTopologyZone] = fmt.Sprint("zone-", i%10)
		}
		n, _ := nodes.Set(node)
		// ten pods of various owners already there
		for j := range 10 {
			nodes.AddPod(n.Name(), NewPodInfo(pod(i*10+j, owners)).placed())
		}
	}
	pods := make([]*PodInfo, 4096)
	for i := range pods {
		pods[i] = NewPodInfo(pod(1_000_000+i, owners))
	}
	fw := NewFramework(FrameworkOptions{Seed: 1})
	b.ReportAllocs()
	cpu := startCPU()
	i := 0
	for ; b.Loop(); i++ {
		p := pods[i%len(pods)]
		res, err := fw.Schedule(p, nodes)
		if err != nil {
			b.Fatal(err)
		}
		nodes.AddPod(res.Node, p.placed())
	}
	cpu.report(b, i)
}

// BenchmarkNewPodInfo is the per-pod preparation the loop adds to the core.
func BenchmarkNewPodInfo(b *testing.B) {
	pod := benchPod(1, 20)
	b.ReportAllocs()
	for b.Loop() {
		NewPodInfo(pod)
	}
}

// BenchmarkSchedulerThroughput runs the whole scheduler over a memory
// store: 5,000 nodes, then 20,000 pods created in transactions of 1,000
// while it runs. pods/s is the number of pods over the time from the first
// creation to the last binding. Run it with -benchtime 1x.
func BenchmarkSchedulerThroughput(b *testing.B) {
	const numNodes, numPods, batch, owners = 5000, 20000, 1000, 20
	for b.Loop() {
		b.StopTimer()
		s, err := store.New(store.Memory{}, store.Options{WatcherQueue: 100000})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for lo := 0; lo < numNodes; lo += batch {
			_, err := s.Txn(ctx, func(tx *store.Txn) error {
				for i := lo; i < lo+batch; i++ {
					if _, err := tx.Create(benchNode(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		pods := make([]*api.Pod, numPods)
		for i := range pods {
			pods[i] = benchPod(i, owners)
			api.Default(pods[i])
		}
		sc := New(s, Options{Seed: 1})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- sc.Run(runCtx) }()
		b.StartTimer()

		cpu := startCPU()
		start := time.Now()
		for lo := 0; lo < numPods; lo += batch {
			_, err := s.Txn(ctx, func(tx *store.Txn) error {
				for _, p := range pods[lo : lo+batch] {
					if _, err := tx.Create(p); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		created := time.Since(start)
		for sc.Stats().Bound < numPods {
			time.Sleep(time.Millisecond)
		}
		elapsed := time.Since(start)
		cpu.report(b, numPods)

		b.StopTimer()
		st := sc.Stats()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.ReportMetric(float64(numPods)/elapsed.Seconds(), "pods/s")
		b.ReportMetric(created.Seconds(), "create-s")
		if st.Errors > 0 || st.Unschedulable > 0 {
			b.Errorf("stats %+v", st)
		}
		b.StartTimer()
	}
}
