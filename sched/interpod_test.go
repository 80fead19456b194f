package sched

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

const zoneKey = api.LabelTopologyZone

// coreTerm is a pod affinity term selecting kv by key.
func coreTerm(key string, kv ...string) corev1.PodAffinityTerm {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		sel.MatchLabels[kv[i]] = kv[i+1]
	}
	return corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: key}
}

func withAffinity(f func(*api.Affinity)) func(*api.Pod) {
	return func(p *api.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &api.Affinity{}
		}
		f(p.Spec.Affinity)
	}
}

func podAffinity(terms ...corev1.PodAffinityTerm) func(*api.Pod) {
	return withAffinity(func(a *api.Affinity) {
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	})
}

func podAntiAffinity(terms ...corev1.PodAffinityTerm) func(*api.Pod) {
	return withAffinity(func(a *api.Affinity) {
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &api.PodAntiAffinity{}
		}
		for _, t := range terms {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, api.PodAffinityTerm{
				LabelSelector: t.LabelSelector, Namespaces: t.Namespaces, TopologyKey: t.TopologyKey,
				NamespaceSelector: t.NamespaceSelector, MatchLabelKeys: t.MatchLabelKeys, MismatchLabelKeys: t.MismatchLabelKeys,
			})
		}
	})
}

func preferAffinity(weight int32, t corev1.PodAffinityTerm) func(*api.Pod) {
	return withAffinity(func(a *api.Affinity) {
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	})
}

func preferAntiAffinity(weight int32, t corev1.PodAffinityTerm) func(*api.Pod) {
	return withAffinity(func(a *api.Affinity) {
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &api.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	})
}

func inNamespace(ns string) func(*api.Pod) { return func(p *api.Pod) { p.Namespace = ns } }

func zoned(zone string) func(*api.Node) { return nodeLabels(zoneKey, zone) }

// explain returns each node's reasons for pod, "" where it passes, as a
// cycle over nodes finds them.
func explain(t *testing.T, nodes *Nodes, pod *api.Pod) []string {
	t.Helper()
	sts, err := NewFramework(FrameworkOptions{}).Explain(NewPodInfo(pod), nodes)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = reasonsOf(st)
	}
	return out
}

// The expectations follow kube-scheduler's InterPodAffinity filter
// (plugins/interpodaffinity/filtering.go) case by case.
func TestInterPodAffinityFilter(t *testing.T) {
	const (
		aff      = "[node(s) didn't match pod affinity rules]"
		anti     = "[node(s) didn't match pod anti-affinity rules]"
		existing = "[node(s) didn't satisfy existing pods anti-affinity rules]"
	)
	web := func(name string, opts ...func(*api.Pod)) *api.Pod {
		return makePod(name, append([]func(*api.Pod){podLabels("app", "web")}, opts...)...)
	}
	three := func(a, b, c []*api.Pod) *Nodes {
		return cluster(on(makeNode("a", zoned("z1")), a...), on(makeNode("b", zoned("z1")), b...), on(makeNode("c", zoned("z2")), c...))
	}
	blueTerm := coreTerm(zoneKey, "app", "web")
	blueTerm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}
	versioned := coreTerm(zoneKey, "app", "web")
	versioned.MatchLabelKeys = []string{"version"}
	tenanted := coreTerm(zoneKey, "app", "web")
	tenanted.MismatchLabelKeys = []string{"tenant"}
	tests := []struct {
		name  string
		nodes *Nodes
		pod   *api.Pod
		want  []string
	}{
		{"affinity by zone", three([]*api.Pod{web("w")}, nil, nil),
			makePod("p", podAffinity(coreTerm(zoneKey, "app", "web"))), []string{"", "", aff}},
		{"affinity by hostname", three([]*api.Pod{web("w")}, nil, nil),
			makePod("p", podAffinity(coreTerm(api.LabelHostname, "app", "web"))), []string{"", aff, aff}},
		{"affinity to no pod, pod matches itself: the first of its group", three(nil, nil, nil),
			web("p", podAffinity(coreTerm(zoneKey, "app", "web"))), []string{"", "", ""}},
		{"affinity to no pod, pod does not match itself", three(nil, nil, nil),
			makePod("p", podAffinity(coreTerm(zoneKey, "app", "web"))), []string{aff, aff, aff}},
		{"affinity, node without the topology label", cluster(on(makeNode("a", zoned("z1"))), on(makeNode("b"))),
			web("p", podAffinity(coreTerm(zoneKey, "app", "web"))), []string{"", aff}},
		{"affinity, every term must select one pod", three([]*api.Pod{web("w")}, []*api.Pod{makePod("d", podLabels("tier", "db"))}, nil),
			makePod("p", podAffinity(coreTerm(zoneKey, "app", "web"), coreTerm(zoneKey, "tier", "db"))), []string{aff, aff, aff}},
		{"anti-affinity by zone", three([]*api.Pod{web("w")}, nil, nil),
			makePod("p", podAntiAffinity(coreTerm(zoneKey, "app", "web"))), []string{anti, anti, ""}},
		{"existing pod's anti-affinity by zone", three([]*api.Pod{makePod("x", podAntiAffinity(coreTerm(zoneKey, "app", "web")))}, nil, nil),
			web("p"), []string{existing, existing, ""}},
		{"existing pod's anti-affinity, pod not selected", three([]*api.Pod{makePod("x", podAntiAffinity(coreTerm(zoneKey, "app", "web")))}, nil, nil),
			makePod("p"), []string{"", "", ""}},
		{"namespaceSelector", func() *Nodes {
			ns := three(nil, nil, []*api.Pod{web("w", inNamespace("blue"))})
			ns.SetNamespace("blue", map[string]string{"team": "blue"})
			return ns
		}(), makePod("p", podAffinity(blueTerm)), []string{aff, aff, ""}},
		{"namespaceSelector, namespace not selected", three(nil, nil, []*api.Pod{web("w", inNamespace("red"))}),
			makePod("p", podAffinity(blueTerm)), []string{aff, aff, aff}},
		{"matchLabelKeys, other version", three([]*api.Pod{web("w", podLabels("version", "v1"))}, nil, nil),
			web("p", podLabels("version", "v2"), podAntiAffinity(versioned)), []string{"", "", ""}},
		{"matchLabelKeys, same version", three([]*api.Pod{web("w", podLabels("version", "v2"))}, nil, nil),
			web("p", podLabels("version", "v2"), podAntiAffinity(versioned)), []string{anti, anti, ""}},
		{"mismatchLabelKeys", three([]*api.Pod{web("w", podLabels("tenant", "t1"))}, nil, []*api.Pod{web("v", podLabels("tenant", "t2"))}),
			makePod("p", podLabels("tenant", "t1"), podAffinity(tenanted)), []string{aff, aff, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := explain(t, tt.nodes, tt.pod); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInterPodAffinityMessage(t *testing.T) {
	nodes := cluster(
		on(makeNode("a", zoned("z1")), makePod("w", podLabels("app", "web"))),
		on(makeNode("b", zoned("z1"))),
		on(makeNode("c", zoned("z2")), makePod("x", podLabels("app", "cache"), podAntiAffinity(coreTerm(zoneKey, "app", "db")))),
	)
	pod := makePod("p", podLabels("app", "db"), podAntiAffinity(coreTerm(zoneKey, "app", "web")))
	_, err := NewFramework(FrameworkOptions{}).Schedule(NewPodInfo(pod), nodes)
	want := "0/3 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, 2 node(s) didn't match pod anti-affinity rules."
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// The expectations follow kube-scheduler's InterPodAffinity scoring
// (plugins/interpodaffinity/scoring.go): sums per domain, then min-max
// to 0..100.
func TestInterPodAffinityScore(t *testing.T) {
	nodes := cluster(
		on(makeNode("a", zoned("z1")), makePod("w", podLabels("app", "web"))),
		// y requires to be with pods labelled role=new on its node:
		// hardPodAffinityWeight 1 for b.
		on(makeNode("b", zoned("z1")), makePod("y", podAffinity(coreTerm(api.LabelHostname, "role", "new")))),
		// x would rather not share its zone with role=new: -7 for z2.
		on(makeNode("c", zoned("z2")), makePod("x", preferAntiAffinity(7, coreTerm(zoneKey, "role", "new")))),
		on(makeNode("d", zoned("z3"))),
	)
	pod := makePod("p", podLabels("role", "new"),
		preferAffinity(10, coreTerm(zoneKey, "app", "web")),
		preferAntiAffinity(5, coreTerm(api.LabelHostname, "app", "web")))
	info := NewPodInfo(pod)
	state := NewCycleState(nodes)
	if (interPodScore{}).SkipScore(state, info) {
		t.Fatal("skipped")
	}
	got := make([]int64, len(nodes.List()))
	interPodScore{}.PreScore(state, info, nodes.List())
	interPodScore{}.scoreNodes(state, info, nodes.List(), got)
	// a: 10 - 5 = 5; b: 10 + 1 = 11; c: -7; d: 0.
	if want := []int64{5, 11, -7, 0}; !slices.Equal(got, want) {
		t.Fatalf("raw %v, want %v", got, want)
	}
	interPodScore{}.Normalize(state, info, nodes.List(), got)
	// (s + 7) / 18 × 100, floored.
	if want := []int64{66, 100, 0, 38}; !slices.Equal(got, want) {
		t.Fatalf("normalised %v, want %v", got, want)
	}
	plain := NewPodInfo(makePod("q"))
	if !(interPodScore{}).SkipScore(NewCycleState(NewNodes(makeNode("a"))), plain) {
		t.Error("a plain pod among pods without scoring terms should skip the score")
	}
}
