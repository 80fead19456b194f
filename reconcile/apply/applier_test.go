package apply

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
)

func TestApplyCreatesInDependencyOrderInOneTransaction(t *testing.T) {
	f := newFixture(t)
	n := f.backend.count()
	rev := decode(t, "r1",
		"a-web.yaml", docs(deployment("web", 2), service("web")),
		"b-config.yaml", configMap("settings", "1"),
		"c-claim.yaml", `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: prod
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`,
		"z-ns.yaml", namespace("prod"))
	res := f.mustApply(rev)
	if f.backend.count() != n+1 {
		t.Fatalf("%d commits, want one transaction", f.backend.count()-n)
	}
	want := []string{
		"Namespace/prod",
		"ConfigMap/default/settings",
		"PersistentVolumeClaim/prod/data",
		"Service/default/web",
		"Deployment/default/web",
		"Source/fleet",
	}
	if got := f.backend.since(n); !slices.Equal(got, want) {
		t.Errorf("writes\n got %v\nwant %v", got, want)
	}
	if res.Counts != (Counts{Created: 5}) {
		t.Errorf("counts %+v", res.Counts)
	}
	src := f.source()
	if src.Status.LastAppliedRevision != "r1" || src.Status.LastAttemptedRevision != "r1" || src.Status.Objects != 5 || src.Status.LastSyncTime == nil {
		t.Errorf("status %+v", src.Status)
	}
	c := f.ready()
	if c.Status != metav1.ConditionTrue || c.Reason != api.ReasonSucceeded || c.Message != "Applied revision r1: 5 created, 0 updated, 0 pruned, 0 unchanged" {
		t.Errorf("ready %+v", c)
	}
	if got := f.get("Deployment", "default", "web").GetAnnotations()[api.AnnotationSource]; got != fleet {
		t.Errorf("source annotation %q", got)
	}
}

func TestApplyWritesOnlyWhatChanged(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "all.yaml", docs(deployment("web", 2), service("web"), configMap("a", "1"), configMap("b", "1"))))
	before := f.versions()

	// The same revision again writes nothing but the Source's status.
	n := f.backend.count()
	res := f.mustApply(decode(t, "r1", "all.yaml", docs(deployment("web", 2), service("web"), configMap("a", "1"), configMap("b", "1"))))
	if got := f.backend.since(n); !slices.Equal(got, []string{"Source/fleet"}) {
		t.Errorf("same revision wrote %v", got)
	}
	if res.Counts != (Counts{Unchanged: 4}) || res.StoreRevision != 0 {
		t.Errorf("counts %+v, store revision %d", res.Counts, res.StoreRevision)
	}
	if after := f.versions(); !maps.Equal(before, after) {
		t.Errorf("resourceVersions changed:\n%v\n%v", before, after)
	}

	// One changed object: exactly it is written.
	n = f.backend.count()
	res = f.mustApply(decode(t, "r2", "all.yaml", docs(deployment("web", 2), service("web"), configMap("a", "2"), configMap("b", "1"))))
	if got := f.backend.since(n); !slices.Equal(got, []string{"ConfigMap/default/a", "Source/fleet"}) {
		t.Errorf("wrote %v", got)
	}
	after := f.versions()
	for k, v := range before {
		if changed := after[k] != v; changed != (k == "ConfigMap/default/a") {
			t.Errorf("%s: resourceVersion %s → %s", k, v, after[k])
		}
	}
	if res.Counts != (Counts{Updated: 1, Unchanged: 3}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if c := f.ready(); c.Message != "Applied revision r2: 0 created, 1 updated, 0 pruned, 3 unchanged" {
		t.Errorf("message %q", c.Message)
	}
}

func TestApplyKeepsStatusAndWhatControllersSet(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "web.yaml", deployment("web", 2)))
	// A controller writes the status and an annotation of its own.
	d := f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	d.Status.Replicas, d.Status.ReadyReplicas = 2, 2
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	if _, err := f.store.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	before := f.versions()["Deployment/default/web"]

	// Unchanged manifest: nothing written although live has more.
	if res := f.mustApply(decode(t, "r1", "web.yaml", deployment("web", 2))); res.Counts.Unchanged != 1 {
		t.Errorf("counts %+v", res.Counts)
	}
	if after := f.versions()["Deployment/default/web"]; after != before {
		t.Errorf("resourceVersion %s → %s", before, after)
	}

	f.mustApply(decode(t, "r2", "web.yaml", deployment("web", 3)))
	got := f.get("Deployment", "default", "web").(*api.Deployment)
	if *got.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *got.Spec.Replicas)
	}
	if got.Status.Replicas != 2 || got.Status.ReadyReplicas != 2 {
		t.Errorf("status lost: %+v", got.Status)
	}
	if got.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("controller's annotation lost: %v", got.Annotations)
	}
	if got.Generation != 2 {
		t.Errorf("generation %d", got.Generation)
	}
}

func TestApplyRemovesLabelsTheSourceDropped(t *testing.T) {
	f := newFixture(t)
	withLabel := `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  labels:
    tier: web
    team: blue
`
	f.mustApply(decode(t, "r1", "a.yaml", withLabel))
	cm := f.get("ConfigMap", "default", "a").DeepCopyObject().(*api.ConfigMap)
	cm.Labels["added-by-hand"] = "yes"
	if _, err := f.store.Update(f.ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.mustApply(decode(t, "r2", "a.yaml", strings.Replace(withLabel, "    team: blue\n", "", 1)))
	got := f.get("ConfigMap", "default", "a").GetLabels()
	want := map[string]string{"tier": "web", "added-by-hand": "yes"}
	if !maps.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

func TestApplyPrunes(t *testing.T) {
	f := newFixture(t)
	keep := `apiVersion: v1
kind: ConfigMap
metadata:
  name: keep
  annotations:
    berth.dev/prune: disabled
`
	f.mustApply(decode(t, "r1", "all.yaml", docs(namespace("prod"), configMap("a", "1"), configMap("b", "1"), keep, service("web"), deployment("web", 1))))
	n := f.backend.count()
	res := f.mustApply(decode(t, "r2", "all.yaml", docs(namespace("prod"), configMap("a", "1"), service("web"), deployment("web", 1))))
	if res.Counts != (Counts{Pruned: 1, Kept: 1, Unchanged: 4}) {
		t.Errorf("counts %+v", res.Counts)
	}
	// keep is let go: its source annotation goes.
	if got := f.backend.since(n); !slices.Equal(got, []string{"ConfigMap/default/keep", "-ConfigMap/default/b", "Source/fleet"}) {
		t.Errorf("wrote %v", got)
	}
	if f.exists("ConfigMap", "default", "b") || !f.exists("ConfigMap", "default", "keep") {
		t.Error("b should be pruned and keep kept")
	}
	if owner, ok := f.get("ConfigMap", "default", "keep").GetAnnotations()[api.AnnotationSource]; ok {
		t.Errorf("the kept object still names source %q", owner)
	}
	if c := f.ready(); !strings.Contains(c.Message, "1 pruned") || !strings.Contains(c.Message, "1 kept") {
		t.Errorf("message %q", c.Message)
	}
	if f.source().Status.Objects != 4 {
		t.Errorf("objects %d", f.source().Status.Objects)
	}
	// No longer the source's, it is not kept again at every sync.
	res = f.mustApply(decode(t, "r3", "all.yaml", docs(namespace("prod"), configMap("a", "2"), service("web"), deployment("web", 1))))
	if res.Counts != (Counts{Updated: 1, Unchanged: 3}) {
		t.Errorf("counts of the next revision %+v", res.Counts)
	}
}

// A system namespace the source declared and then dropped is kept, not
// pruned: it may not be deleted.
func TestApplyKeepsASystemNamespace(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "all.yaml", docs(namespace("default"), configMap("a", "1"))))
	res := f.mustApply(decode(t, "r2", "all.yaml", configMap("a", "1")))
	if res.Counts != (Counts{Kept: 1, Unchanged: 1}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if ns := f.get("Namespace", "", "default"); ns.GetDeletionTimestamp() != nil {
		t.Errorf("namespace default is being deleted")
	}
}

func TestApplyPrunesInReverseOrder(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "all.yaml", docs(namespace("prod"), configMap("a", "1"), service("web"), deployment("web", 1), configMap("b", "1"), configMap("c", "1"), configMap("d", "1"), configMap("e", "1"))))
	src := f.source().DeepCopy()
	src.Spec.AllowMassPrune = true
	if _, err := f.store.Update(f.ctx, src); err != nil {
		t.Fatal(err)
	}
	n := f.backend.count()
	f.mustApply(decode(t, "r2", "rest.yaml", docs(configMap("b", "1"), configMap("c", "1"), configMap("d", "1"), configMap("e", "1"))))
	want := []string{"-Deployment/default/web", "-Service/default/web", "-ConfigMap/default/a", "Namespace/prod", "Source/fleet"}
	// The namespace has a finalizer: pruning marks it terminating.
	if got := f.backend.since(n); !slices.Equal(got, want) {
		t.Errorf("wrote %v, want %v", got, want)
	}
	if f.get("Namespace", "", "prod").GetDeletionTimestamp() == nil {
		t.Error("namespace prod is not being deleted")
	}
}

func TestApplyRefusesObjectsOfAnotherSource(t *testing.T) {
	for _, owner := range []string{"api", "other"} {
		t.Run(owner, func(t *testing.T) {
			f := newFixture(t)
			if owner != "api" {
				// api has no Source object; another source has one while
				// it exists.
				f.create(&api.Source{ObjectMeta: metav1.ObjectMeta{Name: owner}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: "/other"}})
			}
			cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b", Annotations: map[string]string{api.AnnotationSource: owner}}}
			f.create(cm)
			before := f.store.Revision()
			res := f.apply(decode(t, "r1", "cm.yaml", docs(configMap("a", "1"), configMap("b", "1"))))
			if res.Ready || res.Reason != api.ReasonInvalidRevision {
				t.Fatalf("result %+v", res)
			}
			if f.exists("ConfigMap", "default", "a") {
				t.Error("a was created although the revision was rejected")
			}
			if f.store.Revision() != before+1 {
				t.Errorf("store went from %d to %d: more than the status was written", before, f.store.Revision())
			}
			msg := f.ready().Message
			for _, want := range []string{"cm.yaml:doc 1", "ConfigMap/default/b", `source "` + owner + `"`, `source "fleet"`, "kubectl annotate configmap b -n default berth.dev/source-"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not name %q", msg, want)
				}
			}
		})
	}
}

func TestApplyAdoptsUnownedObjects(t *testing.T) {
	f := newFixture(t)
	f.create(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Labels: map[string]string{"x": "y"}}, Data: map[string]string{"key": "old"}})
	res := f.mustApply(decode(t, "r1", "cm.yaml", configMap("a", "1")))
	if res.Counts != (Counts{Updated: 1, Adopted: 1}) {
		t.Errorf("counts %+v", res.Counts)
	}
	cm := f.get("ConfigMap", "default", "a").(*api.ConfigMap)
	if cm.Annotations[api.AnnotationSource] != fleet || cm.Data["key"] != "1" {
		t.Errorf("not adopted: %+v", cm.ObjectMeta)
	}
	evs := f.events("default", ReasonAdopted)
	if len(evs) != 1 || evs[0].InvolvedObject.Name != "a" || evs[0].InvolvedObject.Kind != "ConfigMap" || evs[0].Type != api.EventTypeNormal {
		t.Fatalf("events %+v", evs)
	}
}

// TestApplyAdoptsObjectsOfADeletedSource: an object claimed by a source
// whose Source object is gone is taken over in place, and an event says
// from whom.
func TestApplyAdoptsObjectsOfADeletedSource(t *testing.T) {
	f := newFixture(t)
	stored := f.create(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Annotations: map[string]string{api.AnnotationSource: "gone"}}, Data: map[string]string{"key": "1"}})
	res := f.mustApply(decode(t, "r1", "cm.yaml", configMap("a", "1")))
	if res.Counts != (Counts{Updated: 1, Adopted: 1}) {
		t.Errorf("counts %+v", res.Counts)
	}
	cm := f.get("ConfigMap", "default", "a")
	if cm.GetAnnotations()[api.AnnotationSource] != fleet || cm.GetUID() != stored.GetUID() {
		t.Errorf("not adopted in place: %+v", cm)
	}
	evs := f.events("default", ReasonAdopted)
	if want := "Source fleet adopted ConfigMap/default/a from source gone, which no longer exists"; len(evs) != 1 || evs[0].Message != want {
		t.Fatalf("events %+v, want one saying %q", evs, want)
	}
}

func TestApplyRejectsInvalidRevisionWhole(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "a.yaml", configMap("a", "1")))
	before := f.versions()
	rev := decode(t, "r2",
		"a.yaml", configMap("a", "2"),
		"bad/decode.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndatum: {}\n",
		"bad/invalid.yaml", docs(configMap("ok", "1"), deployment("UPPER", 1)),
		"dup.yaml", configMap("a", "3"),
		"ns.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: nowhere\nspec:\n  ports:\n  - port: 80\n")
	res := f.apply(rev)
	if res.Ready || res.Reason != api.ReasonInvalidRevision {
		t.Fatalf("result %+v", res)
	}
	if after := f.versions(); !maps.Equal(before, after) {
		t.Errorf("objects changed: %v → %v", before, after)
	}
	if f.exists("ConfigMap", "default", "ok") || f.get("ConfigMap", "default", "a").(*api.ConfigMap).Data["key"] != "1" {
		t.Error("part of a rejected revision was applied")
	}
	src := f.source()
	if src.Status.LastAppliedRevision != "r1" || src.Status.LastAttemptedRevision != "r2" || src.Status.Objects != 1 {
		t.Errorf("status %+v", src.Status)
	}
	c := f.ready()
	if c.Status != metav1.ConditionFalse || c.Reason != api.ReasonInvalidRevision {
		t.Errorf("ready %+v", c)
	}
	for _, want := range []string{
		"Revision r2 rejected, nothing applied (still at revision r1)",
		`bad/decode.yaml:doc 0 (line 5): datum: unknown field "datum"`,
		"bad/invalid.yaml:doc 1 (line 11): metadata.name: Invalid value",
		"dup.yaml:doc 0 (line 4): metadata.name: Duplicate value",
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, c.Message)
		}
	}
	// The namespace check reads the store, so it is reported when the
	// rest is valid.
	res = f.apply(decode(t, "r3", "ns.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: nowhere\nspec:\n  ports:\n  - port: 80\n"))
	if res.Ready || !strings.Contains(f.ready().Message, `ns.yaml:doc 0 (line 5): metadata.namespace: Not found: "nowhere"`) {
		t.Errorf("namespace error: %s", f.ready().Message)
	}
}

func TestApplyRefusesImmutableChanges(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "web.yaml", deployment("web", 1)))
	changed := strings.Replace(deployment("web", 1), "    matchLabels:\n      app: web\n", "    matchLabels:\n      app: web\n      tier: x\n", 1)
	changed = strings.Replace(changed, "      labels:\n        app: web\n", "      labels:\n        app: web\n        tier: x\n", 1)
	res := f.apply(decode(t, "r2", "web.yaml", changed))
	if res.Ready || !strings.Contains(res.Message, "web.yaml:doc 0") || !strings.Contains(res.Message, "spec.selector: Invalid value") {
		t.Errorf("result %+v", res)
	}
}

func TestPruneGuard(t *testing.T) {
	four := decode(t, "r1", "all.yaml", docs(configMap("a", "1"), configMap("b", "1"), configMap("c", "1"), configMap("d", "1")))
	t.Run("half is allowed", func(t *testing.T) {
		f := newFixture(t)
		f.mustApply(four)
		f.mustApply(decode(t, "r2", "all.yaml", docs(configMap("a", "1"), configMap("b", "1"))))
	})
	t.Run("more than half is held back until allowed for the revision", func(t *testing.T) {
		f := newFixture(t)
		f.mustApply(four)
		before := f.versions()
		one := decode(t, "r2", "all.yaml", configMap("a", "1"))
		res := f.apply(one)
		if res.Ready || res.Reason != api.ReasonPruneGuard {
			t.Fatalf("result %+v", res)
		}
		if !maps.Equal(before, f.versions()) {
			t.Error("objects changed while held back")
		}
		msg := f.ready().Message
		for _, want := range []string{"would prune 3 of the 4 objects", "ConfigMap/default/b", "--allow-prune", "still at revision r1"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
		// An allowance for another revision does not count.
		src := f.source().DeepCopy()
		src.Annotations = map[string]string{api.AnnotationAllowPrune: "r9"}
		if _, err := f.store.Update(f.ctx, src); err != nil {
			t.Fatal(err)
		}
		if res := f.apply(one); res.Reason != api.ReasonPruneGuard {
			t.Fatalf("result %+v", res)
		}
		src = f.source().DeepCopy()
		src.Annotations[api.AnnotationAllowPrune] = "r2"
		if _, err := f.store.Update(f.ctx, src); err != nil {
			t.Fatal(err)
		}
		res = f.apply(one)
		if !res.Ready || res.Counts.Pruned != 3 {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("all is held back, allowMassPrune lets it", func(t *testing.T) {
		f := newFixture(t)
		f.mustApply(decode(t, "r1", "a.yaml", configMap("a", "1")))
		empty := source.Revision{ID: "r2"}
		if res := f.apply(empty); res.Reason != api.ReasonPruneGuard {
			t.Fatalf("result %+v", res)
		}
		src := f.source().DeepCopy()
		src.Spec.AllowMassPrune = true
		if _, err := f.store.Update(f.ctx, src); err != nil {
			t.Fatal(err)
		}
		if res := f.apply(empty); !res.Ready || res.Counts.Pruned != 1 {
			t.Fatalf("result %+v", res)
		}
	})
}

func TestApplyFetchFailed(t *testing.T) {
	f := newFixture(t)
	f.mustApply(decode(t, "r1", "a.yaml", configMap("a", "1")))
	before := f.versions()
	res := f.apply(source.Revision{ID: "r1", Err: errors.New("dial tcp: connection refused")})
	if res.Ready || res.Reason != api.ReasonFetchFailed {
		t.Fatalf("result %+v", res)
	}
	if !maps.Equal(before, f.versions()) {
		t.Error("objects changed")
	}
	if c := f.ready(); !strings.Contains(c.Message, "connection refused") || c.Reason != api.ReasonFetchFailed {
		t.Errorf("ready %+v", c)
	}
}

func TestApplyRecordsHandledRequest(t *testing.T) {
	f := newFixture(t)
	const at = "2025-06-01T12:00:00.123456789Z"
	if _, err := f.applier.Apply(f.ctx, fleet, decode(t, "r1", "a.yaml", configMap("a", "1")), ApplyOptions{Request: at}); err != nil {
		t.Fatal(err)
	}
	if got := f.source().Status.LastHandledReconcileAt; got != at {
		t.Errorf("lastHandledReconcileAt %q", got)
	}
	// A rejected revision answers the request too.
	if _, err := f.applier.Apply(f.ctx, fleet, source.Revision{ID: "r2", Err: errors.New("gone")}, ApplyOptions{Request: at + "x"}); err != nil {
		t.Fatal(err)
	}
	if got := f.source().Status.LastHandledReconcileAt; got != at+"x" {
		t.Errorf("lastHandledReconcileAt %q", got)
	}
}

func TestApplyKeepsThePodsNode(t *testing.T) {
	f := newFixture(t)
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: img:1
`
	f.mustApply(decode(t, "r1", "pod.yaml", pod))
	p := f.get("Pod", "default", "p").DeepCopyObject().(*api.Pod)
	p.Spec.NodeName = "node-1"
	if _, err := f.store.Update(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	if res := f.mustApply(decode(t, "r1", "pod.yaml", pod)); res.Counts.Unchanged != 1 {
		t.Errorf("counts %+v", res.Counts)
	}
	res := f.mustApply(decode(t, "r2", "pod.yaml", strings.Replace(pod, "img:1", "img:2", 1)))
	got := f.get("Pod", "default", "p").(*api.Pod)
	if res.Counts.Updated != 1 || got.Spec.NodeName != "node-1" || got.Spec.Containers[0].Image != "img:2" {
		t.Errorf("counts %+v, pod %+v", res.Counts, got.Spec)
	}
}

// A Secret's stringData is stored as data, as the API stores it: readers
// find every key in data. The same revision again writes nothing, and a
// bad key is reported where the manifest has it.
func TestApplyStoresSecretStringDataAsData(t *testing.T) {
	f := newFixture(t)
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  user: YWRtaW4=\nstringData:\n  password: hunter2\n"
	f.mustApply(decode(t, "r1", "secret.yaml", secret))
	s := f.get("Secret", "default", "db").(*api.Secret)
	if string(s.Data["password"]) != "hunter2" || string(s.Data["user"]) != "admin" || s.StringData != nil {
		t.Fatalf("stored data %q, stringData %q", s.Data, s.StringData)
	}
	n := f.backend.count()
	res := f.mustApply(decode(t, "r2", "secret.yaml", secret))
	if got := f.backend.since(n); !slices.Equal(got, []string{"Source/fleet"}) || res.Counts != (Counts{Unchanged: 1}) {
		t.Errorf("the same Secret again wrote %v (counts %+v)", got, res.Counts)
	}

	res = f.apply(decode(t, "r3", "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  bad/key: x\n"))
	if res.Ready || !strings.Contains(f.ready().Message, `secret.yaml:doc 0 (line 6): stringData[bad/key]: Invalid value`) {
		t.Errorf("bad key: %s", f.ready().Message)
	}
}

// An immutable Secret a source stored with its stringData apart (before
// the applier folded it into data) is not taken for a change of its
// immutable data: the next sync stores it folded.
func TestApplyFoldsAnImmutableSecretStoredWithStringData(t *testing.T) {
	f := newFixture(t)
	yes := true
	old := &api.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db",
			Annotations: map[string]string{api.AnnotationSource: fleet}},
		Immutable:  &yes,
		StringData: map[string]string{"password": "hunter2"},
	}
	api.Default(old)
	f.create(old)
	f.mustApply(decode(t, "r1", "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nimmutable: true\nstringData:\n  password: hunter2\n"))
	s := f.get("Secret", "default", "db").(*api.Secret)
	if string(s.Data["password"]) != "hunter2" || s.StringData != nil {
		t.Fatalf("stored data %q, stringData %q", s.Data, s.StringData)
	}
}

// A PodDisruptionBudget in a source applies before the workload it
// guards, keeps the status the disruption controller writes, and is
// pruned when the source drops it, as every kind is.
func TestApplyPodDisruptionBudget(t *testing.T) {
	f := newFixture(t)
	budget := `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
`
	n := f.backend.count()
	f.mustApply(decode(t, "r1", "all.yaml", docs(deployment("web", 2), budget)))
	if got := f.backend.since(n); !slices.Equal(got, []string{"PodDisruptionBudget/default/web", "Deployment/default/web", "Source/fleet"}) {
		t.Errorf("wrote %v", got)
	}
	b := f.get("PodDisruptionBudget", "default", "web").DeepCopyObject().(*api.PodDisruptionBudget)
	b.Status = api.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
	if _, err := f.store.Update(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	if res := f.mustApply(decode(t, "r1", "all.yaml", docs(deployment("web", 2), budget))); res.Counts != (Counts{Unchanged: 2}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if got := f.get("PodDisruptionBudget", "default", "web").(*api.PodDisruptionBudget); got.Status.DisruptionsAllowed != 1 {
		t.Errorf("status lost: %+v", got.Status)
	}
	if res := f.mustApply(decode(t, "r2", "all.yaml", deployment("web", 2))); res.Counts != (Counts{Pruned: 1, Unchanged: 1}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if f.exists("PodDisruptionBudget", "default", "web") {
		t.Error("the budget was not pruned")
	}
}

// TestFailedRevisionLoggedOnceAsWarning checks the log of a revision that
// is not applied: a warning with the error the first time, debug while
// the retries fail the same way, a warning again for another failure or
// for the same one after a success.
func TestFailedRevisionLoggedOnceAsWarning(t *testing.T) {
	f := newFixture(t)
	var out testtool.Buffer
	f.applier.log = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bad := decode(t, "r2", "bad.yaml", deployment("UPPER", 1))
	count := func(level string) int {
		return strings.Count(out.String(), "level="+level+` msg="revision not applied"`)
	}
	f.apply(bad)
	f.apply(bad)
	f.apply(bad)
	if count("WARN") != 1 || count("DEBUG") != 2 {
		t.Fatalf("three failures of r2: want one warning then debug:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "reason=InvalidRevision") || !strings.Contains(out.String(), "UPPER") {
		t.Errorf("the warning lacks the reason or the error:\n%s", out.String())
	}
	f.apply(decode(t, "r3", "bad.yaml", deployment("UPPER", 1)))
	if count("WARN") != 2 {
		t.Errorf("a failure of another revision is not a new warning:\n%s", out.String())
	}
	f.mustApply(decode(t, "r4", "a.yaml", configMap("a", "1")))
	f.apply(decode(t, "r3", "bad.yaml", deployment("UPPER", 1)))
	if count("WARN") != 3 {
		t.Errorf("a failure after a success is not a new warning:\n%s", out.String())
	}
}

// TestRejectedStatusIsBounded: a revision with thousands of errors, one
// of them quoting a value of 200 kB, makes a Ready message, an event and
// a log line of a few kilobytes that name the first errors and count the
// rest; a source that cannot be read with a huge error is cut too.
func TestRejectedStatusIsBounded(t *testing.T) {
	f := newFixture(t)
	var out testtool.Buffer
	f.applier.log = slog.New(slog.NewTextHandler(&out, nil))
	files := []string{"0-huge.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + strings.Repeat("X", 200_000) + "\n"}
	for i := range 5000 {
		files = append(files, fmt.Sprintf("f%04d.yaml", i), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndatum: {}\n")
	}
	res := f.apply(decode(t, "r1", files...))
	n := len(res.Errors) // the huge name is wrong twice: too long, and not lower case
	if res.Ready || n < 5001 {
		t.Fatalf("result: ready %v, %d errors", res.Ready, len(res.Errors))
	}
	msg := f.ready().Message
	if len(msg) > 32<<10 {
		t.Errorf("Ready message of %d bytes, want at most 32 KiB", len(msg))
	}
	for _, want := range []string{fmt.Sprintf("%d errors", n), "0-huge.yaml:doc 0", "…(truncated)", `f0000.yaml:doc 0 (line 5): datum: unknown field "datum"`, fmt.Sprintf("… and %d more errors", n-maxStatusErrors)} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message lacks %q", want)
		}
	}
	if n := len(out.String()); n > 40<<10 {
		t.Errorf("log of %d bytes for one rejected revision", n)
	}
	evs := f.events("", ReasonValidationFailed)
	if len(evs) != 1 || len(evs[0].Message) > 4<<10 || !strings.Contains(evs[0].Message, fmt.Sprintf("and %d more", n-maxEventErrors)) {
		t.Errorf("events %d, message %.300q…", len(evs), evs[0].Message)
	}

	res = f.apply(source.Revision{ID: "r2", Err: errors.New(strings.Repeat("E", 1<<20))})
	if n := len(f.ready().Message); res.Ready || n > 8<<10 {
		t.Errorf("a fetch error of 1 MiB made a Ready message of %d bytes", n)
	}
}

// The status describes the applied commit, which a revision the source
// knew was had (no commit given) keeps, and a new revision without one
// clears; and it says how long the sync took.
func TestApplyRecordsTheCommitAndTheDuration(t *testing.T) {
	f := newFixture(t)
	rev := decode(t, "c1", "a.yaml", configMap("a", "1"))
	commit := &api.SourceCommit{Message: "add a", Author: "Ann <ann@example.com>", Time: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	rev.Commit = commit
	f.mustApply(rev)
	src := f.source()
	if c := src.Status.LastAppliedCommit; c == nil || *c != *commit {
		t.Errorf("commit %+v, want %+v", c, commit)
	}
	if src.Status.LastSyncDuration == nil || src.Status.LastSyncDuration.Duration < 0 {
		t.Errorf("sync duration %v", src.Status.LastSyncDuration)
	}
	again := decode(t, "c1", "a.yaml", configMap("a", "1"))
	f.mustApply(again)
	if c := f.source().Status.LastAppliedCommit; c == nil || c.Message != "add a" {
		t.Errorf("the same revision again lost its commit: %+v", c)
	}
	broken := decode(t, "c2", "a.yaml", "kind: Nope\n")
	broken.Commit = &api.SourceCommit{Message: "break it"}
	f.apply(broken)
	if c := f.source().Status.LastAppliedCommit; c == nil || c.Message != "add a" {
		t.Errorf("a rejected revision changed the applied commit: %+v", c)
	}
	f.mustApply(decode(t, "sha256:abc", "a.yaml", configMap("a", "2")))
	if c := f.source().Status.LastAppliedCommit; c != nil {
		t.Errorf("a revision without a commit kept the last one's: %+v", c)
	}
}
