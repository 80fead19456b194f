package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/namespace"
	"github.com/berth-dev/berth/store"
)

func deployment(name string, replicas int32) *api.Deployment {
	return &api.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: webTemplate(),
		},
	}
}

type deployFixture struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	s   *store.Store
	r   *DeploymentReconciler
}

func newDeployFixture(t *testing.T, d *api.Deployment) *deployFixture {
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	mustCreate(t, s, d)
	return &deployFixture{t: t, ctx: context.Background(), clk: clk, s: s, r: NewDeploymentReconciler(s, clk)}
}

func (f *deployFixture) sync() time.Duration {
	f.t.Helper()
	res, err := f.r.Reconcile(f.ctx, "default/web")
	if err != nil {
		f.t.Fatal(err)
	}
	return res.RequeueAfter
}

func (f *deployFixture) deployment() *api.Deployment {
	f.t.Helper()
	obj, err := f.s.Get(deploymentKind, "default", "web")
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*api.Deployment)
}

// update changes the Deployment as a client does: read, change, write,
// and again when a running controller wrote it in between.
func (f *deployFixture) update(change func(d *api.Deployment)) {
	f.t.Helper()
	for {
		d := f.deployment().DeepCopy()
		change(d)
		_, err := f.s.Update(f.ctx, d)
		if store.IsConflict(err) {
			continue
		}
		if err != nil {
			f.t.Fatal(err)
		}
		return
	}
}

// rollingUpdate is a RollingUpdate strategy of maxSurge and
// maxUnavailable pods.
func rollingUpdate(surge, unavailable int32) api.DeploymentStrategy {
	s, u := intstr.FromInt32(surge), intstr.FromInt32(unavailable)
	return api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
}

// replicaSets returns the ReplicaSets by name.
func (f *deployFixture) replicaSets() map[string]*api.ReplicaSet {
	f.t.Helper()
	objs, _, err := f.s.List(replicaSetKind, store.Filter{Namespace: "default"})
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]*api.ReplicaSet{}
	for _, o := range objs {
		m[o.GetName()] = o.(*api.ReplicaSet)
	}
	return m
}

// settle plays the ReplicaSet controller: every ReplicaSet reports its
// spec.replicas as running, ready and available.
func (f *deployFixture) settle() {
	f.t.Helper()
	for _, rs := range f.replicaSets() {
		c := rs.DeepCopy()
		n := replicasOf(c.Spec.Replicas)
		c.Status = api.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: c.Generation}
		if _, err := f.s.Update(f.ctx, c); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *deployFixture) sizes() map[string]int32 {
	m := map[string]int32{}
	for name, rs := range f.replicaSets() {
		m[name] = replicasOf(rs.Spec.Replicas)
	}
	return m
}

func condition(d *api.Deployment, t string) api.WorkloadCondition {
	if c := findCondition(d.Status.Conditions, t); c != nil {
		return *c
	}
	return api.WorkloadCondition{}
}

func TestPodTemplateHash(t *testing.T) {
	a, b := webTemplate(), webTemplate()
	if PodTemplateHash(&a, nil) != PodTemplateHash(&b, nil) {
		t.Error("equal templates hash differently")
	}
	b.Spec.Containers[0].Image = "web:2"
	if PodTemplateHash(&a, nil) == PodTemplateHash(&b, nil) {
		t.Error("different templates hash the same")
	}
	one := int32(1)
	if PodTemplateHash(&a, nil) == PodTemplateHash(&a, &one) {
		t.Error("the collision count does not change the hash")
	}
	for _, r := range PodTemplateHash(&a, nil) {
		if !slices.Contains([]rune("bcdfghjklmnpqrstvwxz2456789"), r) {
			t.Errorf("hash has %q, not a SafeEncodeString character", r)
		}
	}
}

// TestTemplateHashesFollowTheGeneration: a Deployment's hash is computed
// again when its generation, collision count or UID moves, and only then.
func TestTemplateHashesFollowTheGeneration(t *testing.T) {
	var h templateHashes
	d := deployment("web", 1)
	d.UID, d.Generation = "u1", 1
	want := PodTemplateHash(&d.Spec.Template, nil)
	if got := h.of("default/web", d); got != want {
		t.Fatalf("hash %s, want %s", got, want)
	}
	// The same generation is the same template: the stored hash is used.
	unchanged := d.DeepCopy()
	unchanged.Spec.Template.Spec.Containers[0].Image = "web:cached"
	if got := h.of("default/web", unchanged); got != want {
		t.Fatalf("hash of the same generation %s, want the stored %s", got, want)
	}
	one := int32(1)
	for _, tc := range []struct {
		name   string
		change func(d *api.Deployment)
	}{
		{"new generation", func(d *api.Deployment) { d.Generation = 2; d.Spec.Template.Spec.Containers[0].Image = "web:2" }},
		{"collision", func(d *api.Deployment) { d.Status.CollisionCount = &one }},
		{"recreated", func(d *api.Deployment) { d.UID = "u2"; d.Spec.Template.Spec.Containers[0].Image = "web:3" }},
	} {
		c := d.DeepCopy()
		tc.change(c)
		if got, want := h.of("default/web", c), PodTemplateHash(&c.Spec.Template, c.Status.CollisionCount); got != want {
			t.Errorf("%s: hash %s, want %s", tc.name, got, want)
		}
		h.of("default/web", d)
	}
	h.forget("default/web")
	if _, ok := h.m["default/web"]; ok {
		t.Error("a forgotten Deployment's hash is kept")
	}
}

// TestDeploymentRollingUpdate follows a Deployment of 4 (maxSurge 1,
// maxUnavailable 1) from creation through a template change to
// completion, checking each step's writes.
func TestDeploymentRollingUpdate(t *testing.T) {
	d := deployment("web", 4)
	one := intstr.FromInt32(1)
	d.Spec.Strategy = api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}}
	f := newDeployFixture(t, d)

	f.sync()
	tmpl := f.deployment().Spec.Template
	rs1 := "web-" + PodTemplateHash(&tmpl, nil)
	rss := f.replicaSets()
	rs, ok := rss[rs1]
	if !ok || len(rss) != 1 {
		t.Fatalf("replicasets %v, want only %s", keys(rss), rs1)
	}
	if replicasOf(rs.Spec.Replicas) != 4 {
		t.Errorf("first replicaset scaled to %d, want 4", replicasOf(rs.Spec.Replicas))
	}
	hash := rs.Labels[LabelPodTemplateHash]
	if rs.Spec.Selector.MatchLabels[LabelPodTemplateHash] != hash || rs.Spec.Template.Labels[LabelPodTemplateHash] != hash || hash == "" {
		t.Errorf("pod-template-hash not on selector and template: %+v %+v", rs.Spec.Selector, rs.Spec.Template.Labels)
	}
	if rs.Annotations[AnnotationRevision] != "1" {
		t.Errorf("revision %q, want 1", rs.Annotations[AnnotationRevision])
	}
	if ref := api.ControllerOf(rs); ref == nil || ref.Kind != "Deployment" || ref.Name != "web" {
		t.Errorf("controller %+v", ref)
	}
	got := f.deployment()
	if c := condition(got, api.DeploymentProgressing); c.Status != api.ConditionTrue || c.Reason != ReasonReplicaSetUpdated {
		t.Errorf("progressing %+v", c)
	}
	if c := condition(got, api.DeploymentAvailable); c.Status != api.ConditionFalse || c.Reason != ReasonMinimumReplicasUnavailable {
		t.Errorf("available %+v", c)
	}

	f.settle()
	f.sync()
	got = f.deployment()
	if st := got.Status; st.Replicas != 4 || st.UpdatedReplicas != 4 || st.AvailableReplicas != 4 || st.ReadyReplicas != 4 || st.UnavailableReplicas != 0 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	if c := condition(got, api.DeploymentProgressing); c.Reason != ReasonNewReplicaSetAvailable {
		t.Errorf("progressing %+v", c)
	}
	if c := condition(got, api.DeploymentAvailable); c.Status != api.ConditionTrue || c.Reason != ReasonMinimumReplicasAvailable {
		t.Errorf("available %+v", c)
	}
	rv := got.ResourceVersion
	f.sync()
	if f.deployment().ResourceVersion != rv {
		t.Error("a sync with nothing to do wrote the deployment")
	}

	// Change the image: the new ReplicaSet is created at the surge (one
	// pod), and in the same sync one old pod may go (maxUnavailable 1),
	// as Kubernetes' rolloutRolling; the next sync surges into the room
	// that left, and then nothing moves until new pods are available.
	f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
	tmpl = f.deployment().Spec.Template
	rs2 := "web-" + PodTemplateHash(&tmpl, nil)
	f.sync()
	if want := map[string]int32{rs1: 3, rs2: 1}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("after the template change %v, want %v", f.sizes(), want)
	}
	if r := f.replicaSets()[rs2].Annotations[AnnotationRevision]; r != "2" {
		t.Errorf("new revision %q, want 2", r)
	}
	f.sync()
	if want := map[string]int32{rs1: 3, rs2: 2}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("second sync %v, want %v", f.sizes(), want)
	}
	f.sync()
	if want := map[string]int32{rs1: 3, rs2: 2}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("third sync, no new pod available %v, want %v", f.sizes(), want)
	}
	for range 10 {
		f.settle()
		f.sync()
	}
	if want := map[string]int32{rs1: 0, rs2: 4}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("converged to %v, want %v", f.sizes(), want)
	}
	got = f.deployment()
	if c := condition(got, api.DeploymentProgressing); c.Reason != ReasonNewReplicaSetAvailable {
		t.Errorf("progressing %+v", c)
	}
	if st := got.Status; st.Replicas != 4 || st.UpdatedReplicas != 4 || st.ObservedGeneration != 2 {
		t.Errorf("status %+v", st)
	}
}

func TestDeploymentRecreate(t *testing.T) {
	d := deployment("web", 3)
	d.Spec.Strategy = api.DeploymentStrategy{Type: api.RecreateDeploymentStrategyType}
	f := newDeployFixture(t, d)
	f.sync()
	f.settle()
	f.sync()
	rs1 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
	rs2 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	f.sync()
	// The new ReplicaSet waits, not created, as Kubernetes'
	// rolloutRecreate, until the old pods are gone.
	if want := map[string]int32{rs1: 0}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("recreate first step %v, want %v (old down, new waits)", f.sizes(), want)
	}
	f.sync()
	if want := map[string]int32{rs1: 0}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("new made while old pods still run: %v", f.sizes())
	}
	f.settle() // the old pods are gone
	f.sync()
	if want := map[string]int32{rs1: 0, rs2: 3}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("recreate second step %v, want %v", f.sizes(), want)
	}
	if r := f.replicaSets()[rs2].Annotations[AnnotationRevision]; r != "2" {
		t.Errorf("new revision %q, want 2", r)
	}
}

// TestDeploymentRecreateWaitsForTerminatingPods runs the Deployment and
// ReplicaSet controllers over a store whose pods are bound to a node, so
// that a deleted pod stays, terminating, until its agent is done: the new
// ReplicaSet is scaled up once the old pods are gone, not as soon as they
// are marked, and the last one's going brings the Deployment back.
func TestDeploymentRecreateWaitsForTerminatingPods(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, clocktesting.NewFakeClock(epoch))
	d := deployment("web", 2)
	d.Spec.Strategy = api.DeploymentStrategy{Type: api.RecreateDeploymentStrategyType}
	d.Spec.Template.Spec.NodeName = "n1"
	mustCreate(t, s, d)
	runController(t, NewReplicaSetController(s, Options{}))
	runController(t, NewDeploymentController(s, Options{}))
	f := &deployFixture{t: t, ctx: ctx, s: s}
	rs1 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	waitFor(t, "2 pods of the first template", func() bool { return len(podsOf(t, s, rs1, false)) == 2 })

	f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
	rs2 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	// The Deployment's status counts no replica once it has read the old
	// ReplicaSet's status with its pods all terminating; the sync that
	// wrote it is the one that would have scaled the new one up.
	waitFor(t, "the old pods terminating, and the Deployment to see it or scale", func() bool {
		rss := f.replicaSets()
		old, ok := rss[rs1]
		st := f.deployment().Status
		return ok && old.Status.Replicas == 0 && old.Status.TerminatingReplicas == 2 &&
			(st.ObservedGeneration == 2 && st.Replicas == 0 || rss[rs2] != nil && replicasOf(rss[rs2].Spec.Replicas) > 0)
	})
	if n := len(podsOf(t, s, rs1, true)); n != 2 {
		t.Fatalf("%d old pods terminating, want 2", n)
	}
	if want := map[string]int32{rs1: 0}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("while the old pods terminate: %v, want %v", f.sizes(), want)
	}

	// The agent is done with the old pods.
	for _, name := range podsOf(t, s, rs1, true) {
		if _, err := s.Delete(ctx, podKind, "default", name, store.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the new ReplicaSet scaled up and its pods made", func() bool {
		return mapsEqual(f.sizes(), map[string]int32{rs1: 0, rs2: 2}) && len(podsOf(t, s, rs2, false)) == 2
	})
}

// podsOf names the pods the ReplicaSet rsName controls: those being
// deleted, or the others.
func podsOf(t *testing.T, s *store.Store, rsName string, terminating bool) []string {
	t.Helper()
	var names []string
	for name, p := range pods(t, s) {
		if ref := api.ControllerOf(p); ref != nil && ref.Name == rsName && (p.DeletionTimestamp != nil) == terminating {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func TestDeploymentRevisionHistoryLimit(t *testing.T) {
	d := deployment("web", 1)
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	f := newDeployFixture(t, d)
	for i := 2; i <= 4; i++ {
		f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:" + string(rune('0'+i)) })
		for range 6 {
			f.sync()
			f.settle()
		}
	}
	f.sync()
	rss := f.replicaSets()
	if len(rss) != 2 {
		t.Fatalf("replicasets %v, want the current one and one old", keys(rss))
	}
	var revs []string
	for _, rs := range rss {
		revs = append(revs, rs.Annotations[AnnotationRevision])
	}
	slices.Sort(revs)
	if !slices.Equal(revs, []string{"2", "3"}) {
		t.Errorf("kept revisions %v, want [2 3]", revs)
	}
}

// TestDeploymentCarriesItsRevision: the Deployment's revision annotation
// follows its newest ReplicaSet's, through an update and a rollback to
// the first template, which is what kubectl rollout undo patches back.
func TestDeploymentCarriesItsRevision(t *testing.T) {
	f := newDeployFixture(t, deployment("web", 1))
	revision := func() string { return f.deployment().Annotations[AnnotationRevision] }
	steps := func() {
		for range 6 {
			f.sync()
			f.settle()
		}
	}
	steps()
	if got := revision(); got != "1" {
		t.Fatalf("revision %q after the first rollout, want 1", got)
	}
	first := f.deployment().Spec.Template.DeepCopy()
	f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
	steps()
	if got := revision(); got != "2" {
		t.Fatalf("revision %q after an update, want 2", got)
	}
	f.update(func(d *api.Deployment) { d.Spec.Template = *first })
	steps()
	if got := revision(); got != "3" {
		t.Fatalf("revision %q after rolling back, want 3", got)
	}
	// Once it carries its revision, a settled Deployment is not written.
	rv := f.deployment().ResourceVersion
	f.sync()
	if f.deployment().ResourceVersion != rv {
		t.Error("a settled deployment was written again")
	}
}

// TestDeploymentCopiesAnnotations: the new ReplicaSet carries the
// Deployment's annotations but its own, from its creation and when the
// Deployment is annotated later; an old one keeps those of its time.
func TestDeploymentCopiesAnnotations(t *testing.T) {
	d := deployment("web", 1)
	d.Annotations = map[string]string{
		"kubernetes.io/change-cause":     "create",
		api.AnnotationLastAppliedConfig:  "{}",
		api.AnnotationSource:             "api",
		api.AnnotationDeploymentRevision: "7",
	}
	f := newDeployFixture(t, d)
	f.sync()
	rs1 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	want := map[string]string{
		"kubernetes.io/change-cause": "create", AnnotationRevision: "1",
		// What it was scaled for: 1 replica, 1 more in a surge (25%).
		api.AnnotationDesiredReplicas: "1", api.AnnotationMaxReplicas: "2",
	}
	if got := f.replicaSets()[rs1].Annotations; !maps.Equal(got, want) {
		t.Fatalf("new replicaset's annotations %v, want %v", got, want)
	}
	f.update(func(d *api.Deployment) { d.Annotations["kubernetes.io/change-cause"] = "annotate" })
	f.sync()
	if got := f.replicaSets()[rs1].Annotations["kubernetes.io/change-cause"]; got != "annotate" {
		t.Errorf("change-cause %q after the Deployment was annotated, want annotate", got)
	}
	f.update(func(d *api.Deployment) {
		d.Annotations["kubernetes.io/change-cause"] = "set image web:2"
		d.Spec.Template.Spec.Containers[0].Image = "web:2"
	})
	f.sync()
	rs2 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	rss := f.replicaSets()
	if got := rss[rs2].Annotations["kubernetes.io/change-cause"]; got != "set image web:2" {
		t.Errorf("new replicaset's change-cause %q", got)
	}
	if got := rss[rs1].Annotations["kubernetes.io/change-cause"]; got != "annotate" {
		t.Errorf("old replicaset's change-cause %q, want its own kept", got)
	}
}

func TestDeploymentPaused(t *testing.T) {
	d := deployment("web", 2)
	d.Spec.Paused = true
	f := newDeployFixture(t, d)
	f.sync()
	if rss := f.replicaSets(); len(rss) != 0 {
		t.Errorf("a paused deployment created %v", keys(rss))
	}
	f.update(func(d *api.Deployment) { d.Spec.Paused = false })
	f.sync()
	rss := f.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("resumed deployment has %v", keys(rss))
	}
	rs1 := keys(rss)[0]
	f.settle()
	f.sync()

	// Paused again: a template change rolls nothing out, but a change of
	// replicas scales the one ReplicaSet.
	f.update(func(d *api.Deployment) {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "web:2"
		five := int32(5)
		d.Spec.Replicas = &five
	})
	f.sync()
	if want := map[string]int32{rs1: 5}; !mapsEqual(f.sizes(), want) {
		t.Errorf("paused scale: %v, want %v", f.sizes(), want)
	}
}

// TestDeploymentScalesProportionally: scaled in the middle of a rollout
// whose new pods never become ready, a Deployment spreads the change over
// its ReplicaSets in proportion to their sizes, as Kubernetes does, rather
// than giving it to the new one alone; paused, it does the same.
func TestDeploymentScalesProportionally(t *testing.T) {
	d := deployment("web", 4)
	d.Spec.Strategy = rollingUpdate(1, 0)
	f := newDeployFixture(t, d)
	f.sync()
	f.settle()
	f.sync()
	rs1 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:broken" })
	rs2 := "web-" + PodTemplateHash(&f.deployment().Spec.Template, nil)
	// settle plays the ReplicaSet controller, the new pods never ready.
	settle := func() {
		f.settle()
		rs := f.replicaSets()[rs2].DeepCopy()
		rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = 0, 0
		if _, err := f.s.Update(f.ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	steps := func() {
		for range 3 {
			f.sync()
			settle()
		}
	}
	scale := func(n int32) {
		f.update(func(d *api.Deployment) { d.Spec.Replicas = &n })
	}
	steps()
	if want := map[string]int32{rs1: 4, rs2: 1}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("stuck rollout %v, want %v", f.sizes(), want)
	}
	scale(8)
	steps()
	if want := map[string]int32{rs1: 7, rs2: 2}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("scaled to 8: %v, want %v", f.sizes(), want)
	}
	scale(2)
	steps()
	if want := map[string]int32{rs1: 2, rs2: 1}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("scaled to 2: %v, want %v (no more than replicas+maxSurge)", f.sizes(), want)
	}
	f.update(func(d *api.Deployment) {
		d.Spec.Paused = true
		four := int32(4)
		d.Spec.Replicas = &four
	})
	steps()
	if want := map[string]int32{rs1: 3, rs2: 2}; !mapsEqual(f.sizes(), want) {
		t.Fatalf("paused, scaled to 4: %v, want %v", f.sizes(), want)
	}
}

// TestDeploymentPausedCondition: paused, a Deployment says so in its
// Progressing condition, and once resumed, that it was, until the rollout
// moves again, as Kubernetes' does.
func TestDeploymentPausedCondition(t *testing.T) {
	d := deployment("web", 2)
	deadline := int32(600)
	d.Spec.ProgressDeadlineSeconds = &deadline
	d.Spec.Strategy = rollingUpdate(1, 0)
	f := newDeployFixture(t, d)
	f.sync()
	f.settle()
	f.sync()
	// A rollout whose new pod does not come: it can go no further.
	f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
	f.sync()
	f.sync()
	if c := condition(f.deployment(), api.DeploymentProgressing); c.Status != api.ConditionTrue || c.Reason != ReasonReplicaSetUpdated {
		t.Fatalf("progressing %+v before the pause", c)
	}
	f.update(func(d *api.Deployment) { d.Spec.Paused = true })
	f.sync()
	c := condition(f.deployment(), api.DeploymentProgressing)
	if c.Status != api.ConditionUnknown || c.Reason != ReasonDeploymentPaused || c.Message != "Deployment is paused" {
		t.Errorf("paused: progressing %+v, want Unknown %s", c, ReasonDeploymentPaused)
	}
	f.update(func(d *api.Deployment) { d.Spec.Paused = false })
	f.sync()
	c = condition(f.deployment(), api.DeploymentProgressing)
	if c.Status != api.ConditionUnknown || c.Reason != ReasonDeploymentResumed || c.Message != "Deployment is resumed" {
		t.Errorf("resumed: progressing %+v, want Unknown %s", c, ReasonDeploymentResumed)
	}
	// The new pod comes: the rollout reports its progress again.
	f.settle()
	f.sync()
	if c := condition(f.deployment(), api.DeploymentProgressing); c.Status != api.ConditionTrue || c.Reason != ReasonReplicaSetUpdated {
		t.Errorf("moving after the resumption: progressing %+v", c)
	}
}

func TestDeploymentProgressDeadline(t *testing.T) {
	d := deployment("web", 2)
	ten := int32(10)
	d.Spec.ProgressDeadlineSeconds = &ten
	f := newDeployFixture(t, d)
	if wait := f.sync(); wait != 10*time.Second {
		t.Errorf("requeue after %v, want the 10s deadline", wait)
	}
	f.clk.Step(5 * time.Second)
	if wait := f.sync(); wait != 5*time.Second {
		t.Errorf("requeue after %v, want the 5s left", wait)
	}
	f.clk.Step(6 * time.Second)
	f.sync()
	c := condition(f.deployment(), api.DeploymentProgressing)
	if c.Status != api.ConditionFalse || c.Reason != ReasonProgressDeadlineExceeded {
		t.Errorf("progressing %+v, want False %s", c, ReasonProgressDeadlineExceeded)
	}
	// Pods arriving afterwards complete it.
	f.settle()
	f.sync()
	if c := condition(f.deployment(), api.DeploymentProgressing); c.Status != api.ConditionTrue || c.Reason != ReasonNewReplicaSetAvailable {
		t.Errorf("progressing %+v after the pods came", c)
	}
}

func TestDeploymentAdoptsOrphanReplicaSet(t *testing.T) {
	f := newDeployFixture(t, deployment("web", 1))
	orphan := replicaSet("web-old", 1)
	orphan.Labels = map[string]string{"app": "web"}
	mustCreate(t, f.s, orphan)
	f.sync()
	rs := f.replicaSets()["web-old"]
	if ref := api.ControllerOf(rs); ref == nil || ref.Kind != "Deployment" {
		t.Fatalf("orphan not adopted: %+v", rs.OwnerReferences)
	}
	if keys := f.r.ReplicaSetKeys(store.Event{Type: store.Modified, Object: rs}); !slices.Equal(keys, []string{"default/web"}) {
		t.Errorf("replicaset keys %v", keys)
	}
}

// A Deployment in a namespace being deleted makes no ReplicaSet: the
// store would refuse it, and the namespace controller deletes it too.
func TestDeploymentInATerminatingNamespace(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	mustCreate(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	mustCreate(t, s, deployment("web", 2))
	f := &deployFixture{t: t, ctx: context.Background(), clk: clk, s: s, r: NewDeploymentReconciler(s, clk)}
	if _, err := s.Delete(f.ctx, namespaceKind, "", "default", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if rss := f.replicaSets(); len(rss) != 0 {
		t.Errorf("made ReplicaSets %v in a terminating namespace", keys(rss))
	}
}

// The namespace's deletion beginning between the Deployment controller's
// check and its ReplicaSet's creation: the store refuses it, and the
// controller takes that as nothing to do.
func TestDeploymentReplicaSetRefusedByATerminatingNamespace(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk, markTerminatingOnCreate(replicaSetKind), namespace.Admit)
	mustCreate(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	mustCreate(t, s, deployment("web", 2))
	if _, err := NewDeploymentReconciler(s, clk).Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	f := &deployFixture{t: t, ctx: context.Background(), clk: clk, s: s}
	if rss := f.replicaSets(); len(rss) != 0 {
		t.Errorf("made ReplicaSets %v", keys(rss))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func mapsEqual(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Status writes and scaling copy the object's struct and share its spec
// and metadata with the version they replace: that version, which
// readers may still hold, is left exactly as it was.
func TestWritesLeaveReplacedVersions(t *testing.T) {
	d := deployment("web", 3)
	d.Annotations = map[string]string{"team": "web"}
	f := newDeployFixture(t, d)
	type held struct {
		obj  api.Object
		copy api.Object
	}
	var versions []held
	hold := func() {
		versions = append(versions, held{f.deployment(), f.deployment().DeepCopy()})
		for _, rs := range f.replicaSets() {
			versions = append(versions, held{rs, rs.DeepCopy()})
		}
	}
	rs := NewReplicaSetReconciler(f.s, f.clk)
	for range 4 {
		hold()
		f.sync()
		hold()
		for name := range f.replicaSets() {
			if _, err := rs.Reconcile(f.ctx, "default/"+name); err != nil {
				t.Fatal(err)
			}
		}
	}
	hold()
	f.update(func(d *api.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	f.sync()
	if got := f.deployment().Annotations[AnnotationRevision]; got != "1" {
		t.Fatalf("revision %q, want 1: the test does not reach the revision's write", got)
	}
	if got := f.sizes(); len(got) != 1 || got[keys(got)[0]] != 5 {
		t.Fatalf("replica sets %v, want one of 5: the test does not reach the scaling", got)
	}
	for _, v := range versions {
		if !equality.Semantic.DeepEqual(v.obj, v.copy) {
			t.Errorf("%T %s at %s changed after it was replaced", v.obj, v.obj.GetName(), v.obj.GetResourceVersion())
		}
	}
}

// replicaSetWrites lists the writes of ReplicaSets after revision from,
// as the store's change log holds them: type, name and spec.replicas.
func (f *deployFixture) replicaSetWrites(from uint64) []string {
	f.t.Helper()
	to := f.s.Revision()
	w, err := f.s.Watch(f.ctx, store.WatchOptions{Kind: replicaSetKind, Revision: from})
	if err != nil {
		f.t.Fatal(err)
	}
	defer w.Stop()
	var out []string
	waitFor(f.t, "the change log up to the last write", func() bool {
		for {
			if rev, ok := w.Bookmark(); ok {
				return rev >= to
			}
			// An event is queued: Next does not wait.
			e, err := w.Next(f.ctx)
			if err != nil {
				f.t.Fatal(err)
			}
			rs := e.Object.(*api.ReplicaSet)
			out = append(out, fmt.Sprintf("%s %s %d", e.Type, rs.Name, replicasOf(rs.Spec.Replicas)))
		}
	})
	return out
}

// TestDeploymentCreatesReplicaSetsAtSize counts the writes of
// ReplicaSets in the store's change log: a new ReplicaSet is created at
// the size the strategy gives it, in one write, as Kubernetes'
// getNewReplicaSet creates it, not at zero and scaled after. A new
// Deployment's at spec.replicas; a rolling update's at what maxSurge
// allows (none without surge), with the old one scaled down in the same
// sync as far as maxUnavailable allows; Recreate's once the old pods are
// gone, at spec.replicas.
func TestDeploymentCreatesReplicaSetsAtSize(t *testing.T) {
	for _, tt := range []struct {
		name     string
		strategy api.DeploymentStrategy
		// created is the first sync's writes; changed, the writes of the
		// syncs after the template's change, the pods settled between.
		created string
		changed []string
	}{
		{"rolling update with surge", rollingUpdate(1, 1), "ADDED web-1 4",
			[]string{"ADDED web-2 1, MODIFIED web-1 3"}},
		{"rolling update without surge", rollingUpdate(0, 1), "ADDED web-1 4",
			[]string{"ADDED web-2 0, MODIFIED web-1 3"}},
		{"recreate", api.DeploymentStrategy{Type: api.RecreateDeploymentStrategyType}, "ADDED web-1 4",
			[]string{"MODIFIED web-1 0", "ADDED web-2 4"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("web", 4)
			d.Spec.Strategy = tt.strategy
			f := newDeployFixture(t, d)
			// names replaces the template hashes in writes by the
			// template's number.
			names := strings.NewReplacer("web-"+PodTemplateHash(&f.deployment().Spec.Template, nil), "web-1")
			from := f.s.Revision()
			f.sync()
			if got := names.Replace(strings.Join(f.replicaSetWrites(from), ", ")); got != tt.created {
				t.Fatalf("a new Deployment's writes %q, want %q", got, tt.created)
			}
			rs := f.replicaSets()["web-"+PodTemplateHash(&f.deployment().Spec.Template, nil)]
			surge := "4"
			if tt.strategy.Type == api.RollingUpdateDeploymentStrategyType {
				surge = strconv.Itoa(4 + tt.strategy.RollingUpdate.MaxSurge.IntValue())
			}
			if a := rs.Annotations; a[api.AnnotationDesiredReplicas] != "4" || a[api.AnnotationMaxReplicas] != surge || a[AnnotationRevision] != "1" {
				t.Errorf("annotations %v, want desired 4, max %s, revision 1", a, surge)
			}
			f.settle()
			f.sync()

			f.update(func(d *api.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:2" })
			names = strings.NewReplacer("web-"+PodTemplateHash(&d.Spec.Template, nil), "web-1",
				"web-"+PodTemplateHash(&f.deployment().Spec.Template, nil), "web-2")
			for i, want := range tt.changed {
				from := f.s.Revision()
				f.sync()
				if got := names.Replace(strings.Join(f.replicaSetWrites(from), ", ")); got != want {
					t.Fatalf("sync %d after the change: writes %q, want %q", i+1, got, want)
				}
				f.settle()
			}
		})
	}
}
