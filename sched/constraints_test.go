package sched

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store/storetest"
)

func spreadBy(key string, maxSkew int32, action corev1.UnsatisfiableConstraintAction, opts ...func(*corev1.TopologySpreadConstraint)) func(*api.Pod) {
	return func(p *api.Pod) {
		c := corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: action,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}
		for _, o := range opts {
			o(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func minDomains(n int32) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.MinDomains = &n }
}

func affinityPolicy(p corev1.NodeInclusionPolicy) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &p }
}

func taintsPolicy(p corev1.NodeInclusionPolicy) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &p }
}

func matchLabelKeys(keys ...string) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = keys }
}

// The expectations follow kube-scheduler's PodTopologySpread filter
// (plugins/podtopologyspread/filtering.go): skew = pods in the node's
// domain + 1 if the pod matches − the smallest domain's (0 while there
// are fewer domains than minDomains), at most maxSkew.
func TestPodTopologySpreadFilter(t *testing.T) {
	const (
		skew    = "[node(s) didn't match pod topology spread constraints]"
		nolabel = "[node(s) didn't match pod topology spread constraints (missing required label)]"
		affin   = "[node(s) didn't match Pod's node affinity/selector]"
		tainted = "[node(s) had untolerated taint {dedicated: x}]"
	)
	web := func(name string, opts ...func(*api.Pod)) *api.Pod {
		return makePod(name, append([]func(*api.Pod){podLabels("app", "web")}, opts...)...)
	}
	webs := func(prefix string, n int, opts ...func(*api.Pod)) []*api.Pod {
		var out []*api.Pod
		for i := range n {
			out = append(out, web(prefix+string(rune('0'+i)), opts...))
		}
		return out
	}
	hard := corev1.DoNotSchedule
	dedicated := taints(taint("dedicated", "x", api.TaintEffectNoSchedule))
	tests := []struct {
		name  string
		nodes *Nodes
		pod   *api.Pod
		want  []string
	}{
		{"zones 2 and 0", cluster(on(makeNode("a", zoned("z1")), webs("a", 1)...), on(makeNode("b", zoned("z1")), webs("b", 1)...), on(makeNode("c", zoned("z2")))),
			web("p", spreadBy(zoneKey, 1, hard)), []string{skew, skew, ""}},
		{"maxSkew 2", cluster(on(makeNode("a", zoned("z1")), webs("a", 1)...), on(makeNode("b", zoned("z1")), webs("b", 1)...), on(makeNode("c", zoned("z2")))),
			web("p", spreadBy(zoneKey, 2, hard)), []string{skew, skew, ""}},
		{"maxSkew 3", cluster(on(makeNode("a", zoned("z1")), webs("a", 1)...), on(makeNode("b", zoned("z1")), webs("b", 1)...), on(makeNode("c", zoned("z2")))),
			web("p", spreadBy(zoneKey, 3, hard)), []string{"", "", ""}},
		{"pod not selected by its own selector", cluster(on(makeNode("a", zoned("z1")), webs("a", 1)...), on(makeNode("c", zoned("z2")))),
			makePod("p", spreadBy(zoneKey, 1, hard)), []string{"", ""}},
		{"node without the label", cluster(on(makeNode("a", zoned("z1"))), on(makeNode("b"))),
			web("p", spreadBy(zoneKey, 1, hard)), []string{"", nolabel}},
		{"other namespaces and terminating pods do not count", cluster(
			on(makeNode("a", zoned("z1")), web("x", inNamespace("other")), web("y", func(p *api.Pod) { p.DeletionTimestamp = &metav1.Time{} })),
			on(makeNode("c", zoned("z2")))),
			web("p", spreadBy(zoneKey, 1, hard)), []string{"", ""}},
		{"minDomains above the domains: the minimum is 0", cluster(on(makeNode("a", zoned("z1")), webs("a", 1)...), on(makeNode("c", zoned("z2")), webs("c", 1)...)),
			web("p", spreadBy(zoneKey, 1, hard, minDomains(3))), []string{skew, skew}},
		{"minDomains met", cluster(on(makeNode("a", zoned("z1")), webs("a", 1)...), on(makeNode("c", zoned("z2")), webs("c", 1)...)),
			web("p", spreadBy(zoneKey, 1, hard, minDomains(2))), []string{"", ""}},
		// c is outside the pod's node affinity: with Honor (the default)
		// its empty zone is not a domain, so the minimum is 1.
		{"nodeAffinityPolicy Honor", cluster(
			on(makeNode("a", zoned("z1"), nodeLabels("disk", "ssd")), webs("a", 1)...),
			on(makeNode("b", zoned("z2"), nodeLabels("disk", "ssd")), webs("b", 2)...),
			on(makeNode("c", zoned("z3")))),
			web("p", selector("disk", "ssd"), spreadBy(zoneKey, 1, hard)), []string{"", skew, affin}},
		{"nodeAffinityPolicy Ignore", cluster(
			on(makeNode("a", zoned("z1"), nodeLabels("disk", "ssd")), webs("a", 1)...),
			on(makeNode("b", zoned("z2"), nodeLabels("disk", "ssd")), webs("b", 2)...),
			on(makeNode("c", zoned("z3")))),
			web("p", selector("disk", "ssd"), spreadBy(zoneKey, 1, hard, affinityPolicy(corev1.NodeInclusionPolicyIgnore))), []string{skew, skew, affin}},
		{"nodeTaintsPolicy Ignore (the default)", cluster(
			on(makeNode("a", zoned("z1")), webs("a", 1)...),
			on(makeNode("b", zoned("z2")), webs("b", 2)...),
			on(makeNode("c", zoned("z3"), dedicated))),
			web("p", spreadBy(zoneKey, 1, hard)), []string{skew, skew, tainted}},
		{"nodeTaintsPolicy Honor", cluster(
			on(makeNode("a", zoned("z1")), webs("a", 1)...),
			on(makeNode("b", zoned("z2")), webs("b", 2)...),
			on(makeNode("c", zoned("z3"), dedicated))),
			web("p", spreadBy(zoneKey, 1, hard, taintsPolicy(corev1.NodeInclusionPolicyHonor))), []string{"", skew, tainted}},
		{"matchLabelKeys: another revision counts apart", cluster(
			on(makeNode("a", zoned("z1")), webs("a", 3, podLabels("rev", "1"))...),
			on(makeNode("c", zoned("z2")))),
			web("p", podLabels("rev", "2"), spreadBy(zoneKey, 1, hard, matchLabelKeys("rev"))), []string{"", ""}},
		{"matchLabelKeys: the same revision", cluster(
			on(makeNode("a", zoned("z1")), webs("a", 3, podLabels("rev", "2"))...),
			on(makeNode("c", zoned("z2")))),
			web("p", podLabels("rev", "2"), spreadBy(zoneKey, 1, hard, matchLabelKeys("rev"))), []string{skew, ""}},
		{"by hostname", cluster(on(makeNode("a"), webs("a", 1)...), on(makeNode("b"))),
			web("p", spreadBy(api.LabelHostname, 1, hard)), []string{skew, ""}},
		// By hostname each node is a domain and the filter counts the node
		// it looks at; the counting stops at the first empty node, which
		// must not change what any node is told.
		{"by hostname, the empty node first", cluster(on(makeNode("b")), on(makeNode("a"), webs("a", 1)...), on(makeNode("c"), webs("c", 2)...)),
			web("p", spreadBy(api.LabelHostname, 1, hard)), []string{"", skew, skew}},
		{"by hostname, all at one", cluster(on(makeNode("a"), webs("a", 1)...), on(makeNode("b"), webs("b", 1)...)),
			web("p", spreadBy(api.LabelHostname, 1, hard)), []string{"", ""}},
		{"by hostname, minDomains above the nodes", cluster(on(makeNode("a"), webs("a", 1)...), on(makeNode("b"), webs("b", 1)...)),
			web("p", spreadBy(api.LabelHostname, 1, hard, minDomains(3))), []string{skew, skew}},
		{"by hostname, minDomains met", cluster(on(makeNode("a"), webs("a", 1)...), on(makeNode("b"), webs("b", 1)...)),
			web("p", spreadBy(api.LabelHostname, 1, hard, minDomains(2))), []string{"", ""}},
		// The empty node b is outside the pod's node affinity: not a
		// domain, so the minimum is a's 1.
		{"by hostname, nodeAffinityPolicy Honor", cluster(
			on(makeNode("b")), on(makeNode("a", nodeLabels("disk", "ssd")), webs("a", 1)...), on(makeNode("c", nodeLabels("disk", "ssd")), webs("c", 2)...)),
			web("p", selector("disk", "ssd"), spreadBy(api.LabelHostname, 1, hard)), []string{affin, "", skew}},
		{"by hostname, nodeTaintsPolicy Honor", cluster(
			on(makeNode("b", dedicated)), on(makeNode("a"), webs("a", 1)...), on(makeNode("c"), webs("c", 2)...)),
			web("p", spreadBy(api.LabelHostname, 1, hard, taintsPolicy(corev1.NodeInclusionPolicyHonor))), []string{tainted, "", skew}},
		{"by hostname and zone", cluster(
			on(makeNode("a", zoned("z1"))), on(makeNode("b", zoned("z1")), webs("b", 1)...), on(makeNode("c", zoned("z2")), webs("c", 1)...)),
			web("p", spreadBy(api.LabelHostname, 1, hard), spreadBy(zoneKey, 1, hard)), []string{"", skew, skew}},
		{"ScheduleAnyway does not filter", cluster(on(makeNode("a", zoned("z1")), webs("a", 3)...), on(makeNode("c", zoned("z2"))), on(makeNode("d"))),
			web("p", spreadBy(zoneKey, 1, corev1.ScheduleAnyway)), []string{"", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := explain(t, tt.nodes, tt.pod); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodTopologySpreadMessage(t *testing.T) {
	nodes := cluster(
		on(makeNode("a", zoned("z1")), makePod("w", podLabels("app", "web"))),
		on(makeNode("b", zoned("z1"))),
		on(makeNode("c")),
	)
	pod := makePod("p", podLabels("app", "web"), spreadBy(zoneKey, 1, corev1.DoNotSchedule, minDomains(2)))
	_, err := NewFramework(FrameworkOptions{}).Schedule(NewPodInfo(pod), nodes)
	want := "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label), 2 node(s) didn't match pod topology spread constraints."
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// The expectations follow kube-scheduler's PodTopologySpread scoring of
// ScheduleAnyway constraints (plugins/podtopologyspread/scoring.go).
func TestPodTopologySpreadRulesScore(t *testing.T) {
	web := func(name string) *api.Pod { return makePod(name, podLabels("app", "web")) }
	ssd := nodeLabels("disk", "ssd")
	nodes := cluster(
		on(makeNode("a", zoned("z1"), ssd), web("a1"), web("a2")),
		on(makeNode("b", zoned("z1"), ssd), web("b1")),
		on(makeNode("c", zoned("z2"), ssd)),
		on(makeNode("d", ssd)), // no zone: ignored, 0
		on(makeNode("e", zoned("z3"), nodeLabels("disk", "hdd")), web("e1"), web("e2"), web("e3"), web("e4")),
	)
	pod := makePod("p", podLabels("app", "web"), selector("disk", "ssd"),
		spreadBy(zoneKey, 1, corev1.ScheduleAnyway), spreadBy(api.LabelHostname, 2, corev1.ScheduleAnyway))
	info := NewPodInfo(pod)
	state := NewCycleState(nodes)
	if (podTopologySpread{}).SkipScore(state, info) {
		t.Fatal("skipped")
	}
	scored := nodes.List()[:4] // e is not feasible
	got := make([]int64, len(scored))
	podTopologySpread{}.Normalize(state, info, scored, got)
	// Zones among a, b, c: 2, weight ln 4; nodes 3, weight ln 5. e's zone
	// is not among the scored nodes' zones, and it is outside the pod's
	// node affinity anyway.
	// a: 3×1.386 + 0 + 2×1.609 + 1 = 8.38 → 8; b: 4.16 + 1.61 + 1 = 6.77
	// → 7; c: 0 + 0 + 1 = 1. 100 × (8 + 1 − s) / 8.
	if want := []int64{12, 25, 100, 0}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !(podTopologySpread{}).SkipScore(nil, NewPodInfo(makePod("q", ownedBy("rs"), spreadBy(zoneKey, 1, corev1.DoNotSchedule)))) {
		t.Error("a pod with DoNotSchedule constraints alone should skip spread scoring, default constraints included")
	}
}

// Over a store: six replicas spread over three zones with maxSkew 1 end
// two in each; a pod with required affinity joins its peer's node; one
// whose affinity term selects namespaces by label finds a pod in such a
// namespace, and waits while the namespace lacks the label.
func TestSpreadAndAffinityOverStore(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s,
		makeNode("a", zoned("z1")), makeNode("b", zoned("z1")),
		makeNode("c", zoned("z2")), makeNode("d", zoned("z2")),
		makeNode("e", zoned("z3")), makeNode("f", zoned("z3")),
		&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "blue"}},
	)
	start(t, s, Options{})
	for i := range 6 {
		create(t, s, makePod("web-"+string(rune('0'+i)), podLabels("app", "web", "idx", string(rune('0'+i))),
			spreadBy(zoneKey, 1, corev1.DoNotSchedule)))
	}
	zones := map[string]int{}
	nodeZone := map[string]string{"a": "z1", "b": "z1", "c": "z2", "d": "z2", "e": "z3", "f": "z3"}
	for i := range 6 {
		pod := waitPod(t, s, "web-"+string(rune('0'+i)), func(p *api.Pod) bool { return p.Spec.NodeName != "" })
		zones[nodeZone[pod.Spec.NodeName]]++
	}
	if zones["z1"] != 2 || zones["z2"] != 2 || zones["z3"] != 2 {
		t.Fatalf("replicas by zone: %v", zones)
	}

	web0 := waitPod(t, s, "web-0", func(p *api.Pod) bool { return p.Spec.NodeName != "" })
	create(t, s, makePod("sidecar", podAffinity(coreTerm(api.LabelHostname, "idx", "0"))))
	waitPod(t, s, "sidecar", boundTo(web0.Spec.NodeName))

	db := makePod("db", podLabels("app", "db"), inNamespace("blue"))
	create(t, s, db)
	var dbNode string
	waitFor(t, func() bool {
		obj, err := s.Get(podKind, "blue", "db")
		if err != nil {
			t.Fatal(err)
		}
		dbNode = obj.(*api.Pod).Spec.NodeName
		return dbNode != ""
	})
	term := coreTerm(zoneKey, "app", "db")
	term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}
	create(t, s, makePod("client", podAffinity(term)))
	const want = "0/6 nodes are available: 6 node(s) didn't match pod affinity rules. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
	waitPod(t, s, "client", func(p *api.Pod) bool {
		c := scheduledCondition(p)
		return c != nil && c.Message == want
	})
	obj, err := s.Get(namespaceKind, "", "blue")
	if err != nil {
		t.Fatal(err)
	}
	blue := obj.(*api.Namespace).DeepCopy()
	blue.Labels = map[string]string{"team": "blue"}
	if _, err := s.Update(context.Background(), blue); err != nil {
		t.Fatal(err)
	}
	client := waitPod(t, s, "client", func(p *api.Pod) bool { return p.Spec.NodeName != "" })
	if nodeZone[client.Spec.NodeName] != nodeZone[dbNode] {
		t.Errorf("client on %s, db on %s: not in one zone", client.Spec.NodeName, dbNode)
	}
}
