package daemonset

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/history"
	"github.com/berth-dev/berth/store"
)

var t0 = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)

type env struct {
	t     *testing.T
	s     *store.Store
	clock *testclock.FakeClock
	r     *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := testclock.NewFakeClock(t0)
	s, err := store.New(store.Memory{}, store.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &env{t: t, s: s, clock: c, r: NewReconciler(s, c, nil)}
}

func logs(opts ...func(*api.DaemonSet)) *api.DaemonSet {
	ds := &api.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "logs"},
		Spec: api.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "logs"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "logs"}},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "ship", Image: "v1"}}},
			},
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

func (e *env) create(obj api.Object) {
	e.t.Helper()
	api.Default(obj)
	if errs := api.Validate(obj); len(errs) > 0 {
		e.t.Fatal(errs)
	}
	if _, err := e.s.Create(context.Background(), obj); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) node(name string, labels map[string]string, taints ...api.Taint) {
	e.t.Helper()
	e.create(&api.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: api.NodeSpec{Taints: taints}})
}

func (e *env) updateNode(name string, change func(*api.Node)) {
	e.t.Helper()
	obj, err := e.s.Get(nodeKind, "", name)
	if err != nil {
		e.t.Fatal(err)
	}
	n := obj.(*api.Node).DeepCopy()
	change(n)
	if _, err := e.s.Update(context.Background(), n); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) sync() {
	e.t.Helper()
	if _, err := e.r.Reconcile(context.Background(), "default/logs"); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) ds() *api.DaemonSet {
	e.t.Helper()
	obj, err := e.s.Get(dsKind, "default", "logs")
	if err != nil {
		e.t.Fatal(err)
	}
	return obj.(*api.DaemonSet)
}

func (e *env) update(change func(*api.DaemonSet)) {
	e.t.Helper()
	ds := e.ds().DeepCopy()
	change(ds)
	api.Default(ds)
	if _, err := e.s.Update(context.Background(), ds); err != nil {
		e.t.Fatal(err)
	}
}

// pods returns the DaemonSet's pods by node, each node's sorted by image.
func (e *env) pods() map[string][]*api.Pod {
	e.t.Helper()
	objs, _, err := e.s.List(podKind, store.Filter{Namespace: "default"})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]*api.Pod{}
	for _, o := range objs {
		p := o.(*api.Pod)
		if p.DeletionTimestamp == nil {
			out[targetNode(p)] = append(out[targetNode(p)], p)
		}
	}
	return out
}

// images is what each node runs: "n1=v1,v2" entries, sorted.
func (e *env) images() []string {
	var out []string
	for node, pods := range e.pods() {
		var imgs []string
		for _, p := range pods {
			imgs = append(imgs, p.Spec.Containers[0].Image)
		}
		slices.Sort(imgs)
		s := node + "="
		for i, img := range imgs {
			if i > 0 {
				s += ","
			}
			s += img
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// ready binds every pod of the DaemonSet to its node and marks it ready.
func (e *env) readyAll() {
	e.t.Helper()
	for node, pods := range e.pods() {
		for _, p := range pods {
			if p.Ready() {
				continue
			}
			c := p.DeepCopy()
			c.Spec.NodeName = node
			c.Status.Phase = api.PodRunning
			c.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: metav1.NewTime(e.clock.Now())}}
			if _, err := e.s.Update(context.Background(), c); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// finishDeletions plays the agents: pods being deleted go.
func (e *env) finishDeletions() {
	e.t.Helper()
	objs, _, _ := e.s.List(podKind, store.Filter{Namespace: "default"})
	for _, o := range objs {
		if o.GetDeletionTimestamp() != nil {
			zero := int64(0)
			if _, err := e.s.Delete(context.Background(), podKind, "default", o.GetName(), store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

func want(t *testing.T, what string, got []string, w ...string) {
	t.Helper()
	if !slices.Equal(got, w) {
		t.Fatalf("%s: %v, want %v", what, got, w)
	}
}

// TestNodesJoinAndLeave: every node gets a pod placed by node affinity
// with the default tolerations; a node joining gets one, a node leaving
// loses it; a failed pod is replaced.
func TestNodesJoinAndLeave(t *testing.T) {
	e := newEnv(t)
	e.node("n1", nil)
	e.node("n2", nil)
	e.create(logs())
	e.sync()
	want(t, "two nodes", e.images(), "n1=v1", "n2=v1")
	p := e.pods()["n1"][0]
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != "n1" {
		t.Errorf("node affinity %+v", terms)
	}
	if p.Spec.NodeName != "" {
		t.Errorf("nodeName set: %s; the scheduler places daemon pods", p.Spec.NodeName)
	}
	for _, key := range []string{api.TaintNodeNotReady, api.TaintNodeUnreachable, api.TaintNodeDiskPressure, api.TaintNodeMemoryPressure, api.TaintNodePIDPressure, api.TaintNodeUnschedulable} {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(t api.Toleration) bool { return t.Key == key && t.Operator == api.TolerationOpExists }) {
			t.Errorf("no toleration of %s: %+v", key, p.Spec.Tolerations)
		}
	}
	ds := e.ds()
	if ref := api.ControllerOf(p); ref == nil || ref.UID != ds.UID {
		t.Errorf("owner %+v", ref)
	}
	revs, _ := history.Owned(e.s, ds)
	if len(revs) != 1 || p.Labels[api.LabelControllerRevisionHash] != revs[0].Labels[api.LabelControllerRevisionHashKey] {
		t.Errorf("pod hash %q, revisions %v", p.Labels[api.LabelControllerRevisionHash], revs)
	}

	e.node("n3", nil)
	e.sync()
	want(t, "n3 joined", e.images(), "n1=v1", "n2=v1", "n3=v1")
	e.readyAll()
	e.sync()
	st := e.ds().Status
	if st.DesiredNumberScheduled != 3 || st.CurrentNumberScheduled != 3 || st.NumberReady != 3 || st.NumberAvailable != 3 || st.UpdatedNumberScheduled != 3 || st.NumberMisscheduled != 0 {
		t.Fatalf("status %+v", st)
	}

	if _, err := e.s.Delete(context.Background(), nodeKind, "", "n2", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.sync()
	e.finishDeletions()
	want(t, "n2 left", e.images(), "n1=v1", "n3=v1")

	failed := e.pods()["n3"][0].DeepCopy()
	failed.Status.Phase = api.PodFailed
	if _, err := e.s.Update(context.Background(), failed); err != nil {
		t.Fatal(err)
	}
	e.sync()
	e.finishDeletions()
	e.sync()
	if ps := e.pods()["n3"]; len(ps) != 1 || ps[0].Name == failed.Name {
		t.Fatalf("failed pod not replaced: %v", ps)
	}
}

// TestPlacement: the node selector, required node affinity and taints
// decide; the default tolerations admit a cordoned or pressured node, and
// a NoExecute taint not tolerated evicts the pod.
func TestPlacement(t *testing.T) {
	e := newEnv(t)
	e.node("linux", map[string]string{"os": "linux"})
	e.node("cordoned", map[string]string{"os": "linux"}, api.Taint{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule},
		api.Taint{Key: api.TaintNodeDiskPressure, Effect: api.TaintEffectNoSchedule})
	e.node("gpu", map[string]string{"os": "linux"}, api.Taint{Key: "gpu", Value: "yes", Effect: api.TaintEffectNoSchedule})
	e.node("tolerated", map[string]string{"os": "linux"}, api.Taint{Key: "dedicated", Value: "logs", Effect: api.TaintEffectNoExecute})
	e.node("windows", map[string]string{"os": "windows"})
	e.node("excluded", map[string]string{"os": "linux", "logs": "off"})
	e.create(logs(func(ds *api.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector = map[string]string{"os": "linux"}
		ds.Spec.Template.Spec.Tolerations = []api.Toleration{{Key: "dedicated", Operator: api.TolerationOpEqual, Value: "logs", Effect: api.TaintEffectNoExecute}}
		ds.Spec.Template.Spec.Affinity = &api.Affinity{NodeAffinity: &api.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &api.NodeSelector{
			NodeSelectorTerms: []api.NodeSelectorTerm{{MatchExpressions: []api.NodeSelectorRequirement{{Key: "logs", Operator: api.NodeSelectorOpDoesNotExist}}}},
		}}}
	}))
	e.sync()
	want(t, "placed", e.images(), "cordoned=v1", "linux=v1", "tolerated=v1")
	// A NoSchedule taint added later leaves the pod; NoExecute evicts it.
	e.updateNode("linux", func(n *api.Node) { n.Spec.Taints = []api.Taint{{Key: "maint", Effect: api.TaintEffectNoSchedule}} })
	e.sync()
	want(t, "NoSchedule keeps", e.images(), "cordoned=v1", "linux=v1", "tolerated=v1")
	if st := e.ds().Status; st.DesiredNumberScheduled != 2 || st.NumberMisscheduled != 1 {
		t.Fatalf("status %+v", st)
	}
	e.updateNode("linux", func(n *api.Node) { n.Spec.Taints = []api.Taint{{Key: "maint", Effect: api.TaintEffectNoExecute}} })
	e.sync()
	want(t, "NoExecute evicts", e.images(), "cordoned=v1", "tolerated=v1")
	// not-ready NoExecute is tolerated by default.
	e.updateNode("cordoned", func(n *api.Node) {
		n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: api.TaintNodeNotReady, Effect: api.TaintEffectNoExecute})
	})
	e.sync()
	want(t, "not-ready tolerated", e.images(), "cordoned=v1", "tolerated=v1")
	// The node label changes to one the selector refuses.
	// network-unavailable keeps a pod off, unless it has hostNetwork.
	e.node("nonet", map[string]string{"os": "linux"}, api.Taint{Key: api.TaintNodeNetworkUnavailable, Effect: api.TaintEffectNoSchedule})
	e.sync()
	want(t, "no network", e.images(), "cordoned=v1", "tolerated=v1")
	e.update(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true })
	e.sync()
	if ps := e.pods()["nonet"]; len(ps) != 1 || !slices.ContainsFunc(ps[0].Spec.Tolerations, func(t api.Toleration) bool { return t.Key == api.TaintNodeNetworkUnavailable }) {
		t.Fatalf("hostNetwork pod on nonet: %v", ps)
	}
	if _, err := e.s.Delete(context.Background(), nodeKind, "", "nonet", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.update(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = false })
	e.sync()
	e.updateNode("tolerated", func(n *api.Node) { n.Labels["logs"] = "off" })
	e.sync()
	want(t, "affinity no longer admits", e.images(), "cordoned=v1")
}

// TestRollingUpdateMaxUnavailable: without surge, old pods go one node at
// a time (maxUnavailable 1), each when the nodes before have an available
// new pod.
func TestRollingUpdateMaxUnavailable(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		e.node(n, nil)
	}
	e.create(logs())
	e.sync()
	e.readyAll()
	e.update(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "v2" })
	e.sync()
	want(t, "one node at a time", e.images(), "n2=v1", "n3=v1")
	e.sync()
	want(t, "n1 gets v2", e.images(), "n1=v2", "n2=v1", "n3=v1")
	e.sync()
	want(t, "waits for n1's pod", e.images(), "n1=v2", "n2=v1", "n3=v1")
	for range 4 {
		e.readyAll()
		e.sync()
	}
	want(t, "rolled out", e.images(), "n1=v2", "n2=v2", "n3=v2")
	e.readyAll()
	e.sync()
	if st := e.ds().Status; st.UpdatedNumberScheduled != 3 || st.NumberAvailable != 3 {
		t.Fatalf("status %+v", st)
	}
	revs, _ := history.Owned(e.s, e.ds())
	if len(revs) != 2 {
		t.Fatalf("%d revisions", len(revs))
	}
}

// TestSurgeRollout: with maxSurge 1 and maxUnavailable 0 a new pod starts
// beside the old one on one node at a time, and the old one goes once the
// new one is available.
func TestSurgeRollout(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"n1", "n2"} {
		e.node(n, nil)
	}
	e.create(logs(func(ds *api.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &api.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))}
	}))
	e.sync()
	e.readyAll()
	e.update(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "v2" })
	e.sync()
	want(t, "surge onto n1", e.images(), "n1=v1,v2", "n2=v1")
	e.sync()
	want(t, "waits for the new pod", e.images(), "n1=v1,v2", "n2=v1")
	if st := e.ds().Status; st.NumberAvailable != 2 {
		t.Fatalf("availability dropped during a surge: %+v", st)
	}
	e.readyAll()
	e.sync()
	want(t, "old pod of n1 goes, n2 surges", e.images(), "n1=v2", "n2=v1,v2")
	e.readyAll()
	e.sync()
	want(t, "rolled out", e.images(), "n1=v2", "n2=v2")
}

// TestOnDelete: a new template replaces no pod until it is deleted.
func TestOnDelete(t *testing.T) {
	e := newEnv(t)
	e.node("n1", nil)
	e.node("n2", nil)
	e.create(logs(func(ds *api.DaemonSet) {
		ds.Spec.UpdateStrategy = api.DaemonSetUpdateStrategy{Type: api.OnDeleteDaemonSetStrategyType}
	}))
	e.sync()
	e.readyAll()
	e.update(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "v2" })
	e.sync()
	e.sync()
	want(t, "nothing replaced", e.images(), "n1=v1", "n2=v1")
	p := e.pods()["n2"][0]
	if _, err := e.s.Delete(context.Background(), podKind, "default", p.Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.finishDeletions()
	e.sync()
	want(t, "the deleted one", e.images(), "n1=v1", "n2=v2")
}

func ptr[T any](v T) *T { return &v }
