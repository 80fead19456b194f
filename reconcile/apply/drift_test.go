package apply

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

func TestDriftRevertedAtNextSync(t *testing.T) {
	f := newFixture(t)
	rev := func() source.Revision { return decode(t, "r1", "web.yaml", deployment("web", 2)) }
	f.mustApply(rev())
	d := f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	five := int32(5)
	d.Spec.Replicas = &five
	if _, err := f.store.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	res := f.mustApply(rev())
	if res.Counts != (Counts{Updated: 1, Drifted: 1}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if got := *f.get("Deployment", "default", "web").(*api.Deployment).Spec.Replicas; got != 2 {
		t.Errorf("replicas %d", got)
	}
	evs := f.events("default", ReasonDriftCorrected)
	if len(evs) != 1 {
		t.Fatalf("events %+v", evs)
	}
	if want := "Source fleet reverted a change made outside it to Deployment/default/web: spec.replicas"; evs[0].Message != want || evs[0].InvolvedObject.Name != "web" || evs[0].Type != api.EventTypeNormal {
		t.Errorf("event %+v", evs[0])
	}
}

// runDrift runs the drift controller of fleet until the test ends.
func runDrift(t *testing.T, f *fixture) {
	t.Helper()
	c := f.applier.DriftController(reconcile.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, 1) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

func TestDriftRevertedPromptly(t *testing.T) {
	f := newFixture(t)
	runDrift(t, f)
	f.mustApply(decode(t, "r1", "all.yaml", docs(deployment("web", 2), configMap("a", "1"), configMap("b", "1"))))

	// A change through the API (here straight to the store) is reverted.
	d := f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	five := int32(5)
	d.Spec.Replicas = &five
	d.Labels["app"] = "changed"
	if _, err := f.store.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deployment to be reverted", func() bool {
		d := f.get("Deployment", "default", "web").(*api.Deployment)
		return *d.Spec.Replicas == 2 && d.Labels["app"] == "web"
	})
	waitFor(t, "the drift event", func() bool { return len(f.events("default", ReasonDriftCorrected)) == 1 })
	ev := f.events("default", ReasonDriftCorrected)[0]
	if !strings.Contains(ev.Message, "Deployment/default/web: metadata.labels.app, spec.replicas") {
		t.Errorf("event message %q", ev.Message)
	}

	// Taking the annotation off is a change too.
	cm := f.get("ConfigMap", "default", "a").DeepCopyObject().(*api.ConfigMap)
	delete(cm.Annotations, api.AnnotationSource)
	cm.Data["key"] = "hand"
	if _, err := f.store.Update(f.ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "configmap a to be reverted", func() bool {
		cm := f.get("ConfigMap", "default", "a").(*api.ConfigMap)
		return cm.Data["key"] == "1" && cm.Annotations[api.AnnotationSource] == fleet
	})

	// A deleted object comes back.
	if _, err := f.store.Delete(f.ctx, configMapKind, "default", "b", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "configmap b to be recreated", func() bool { return f.exists("ConfigMap", "default", "b") })

	// What the source prunes stays pruned: after a later correction is
	// done, b is still gone.
	f.mustApply(decode(t, "r2", "all.yaml", docs(deployment("web", 2), configMap("a", "1"))))
	if f.exists("ConfigMap", "default", "b") {
		t.Fatal("b not pruned")
	}
	d = f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	d.Spec.Replicas = &five
	if _, err := f.store.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deployment to be reverted again", func() bool {
		return *f.get("Deployment", "default", "web").(*api.Deployment).Spec.Replicas == 2
	})
	if f.exists("ConfigMap", "default", "b") {
		t.Error("the drift controller recreated a pruned object")
	}
}

func TestDriftLeavesStatusAndOtherSourcesAlone(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "web.yaml", deployment("web", 2)))
	key := Key{Kind: api.KindOf(&api.Deployment{}), Namespace: "default", Name: "web"}
	d := f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	d.Status.Replicas = 2
	d.Annotations["deployment.kubernetes.io/revision"] = "3"
	if _, err := f.store.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	if corrected, err := f.applier.Correct(f.ctx, fleet, key); err != nil || corrected {
		t.Errorf("status and a controller's annotation are no drift: %v %v", corrected, err)
	}
	if corrected, err := f.applier.Correct(f.ctx, "other", key); err != nil || corrected {
		t.Errorf("another source corrected fleet's object: %v %v", corrected, err)
	}
}

var configMapKind = api.KindOf(&api.ConfigMap{})

func TestDriftKeys(t *testing.T) {
	k := Key{Kind: api.KindOf(&api.Namespace{}), Name: "prod"}
	name, got, ok := parseDriftKey(driftKey("fleet", k))
	if !ok || name != "fleet" || got != k {
		t.Errorf("%v %v %v", name, got, ok)
	}
	if _, _, ok := parseDriftKey("fleet/Nope/x/y"); ok {
		t.Error("unknown kind parsed")
	}
}

// Declared is the last applied revision's object merged over live: what a
// correction would write, so a diff of live against it is the drift.
func TestDeclaredIsWhatACorrectionWrites(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "web.yaml", deployment("web", 2)))
	live := f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	key := KeyOf(live)
	five := int32(5)
	live.Spec.Replicas = &five
	live.Labels["added"] = "outside" // kept: the source does not declare it
	want, rev, ok := f.applier.Declared("fleet", key, live)
	if !ok || rev != "r1" {
		t.Fatalf("declared: ok %t, revision %q", ok, rev)
	}
	d := want.(*api.Deployment)
	if *d.Spec.Replicas != 2 || d.UID != live.UID || d.ResourceVersion != live.ResourceVersion {
		t.Errorf("declared replicas %d uid %q rv %q, want 2 and live's", *d.Spec.Replicas, d.UID, d.ResourceVersion)
	}
	if got := changedFields(live, want); strings.Join(got, ",") != "spec.replicas" {
		t.Errorf("fields a correction changes: %v", got)
	}
	if gone, _, ok := f.applier.Declared("fleet", key, nil); !ok || gone.GetUID() != "" || gone.GetAnnotations()[api.AnnotationSource] != "fleet" {
		t.Errorf("declared for a deleted object: %v %+v", ok, gone)
	}
	if _, _, ok := f.applier.Declared("other", key, live); ok {
		t.Error("another source declares fleet's object")
	}
	key.Name = "missing"
	if _, _, ok := f.applier.Declared("fleet", key, nil); ok {
		t.Error("fleet declares an object it never applied")
	}
}
