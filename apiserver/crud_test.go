package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store/bolt"
)

func TestCRUDNamespaced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.client
	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})

	created := e.mustCreate(&api.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "settings", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"color": "blue"},
	})
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
		t.Fatalf("server metadata not set: %+v", created)
	}
	got, err := c.Get(ctx, cmKind, "team", "settings")
	if err != nil {
		t.Fatal(err)
	}
	if got.(*api.ConfigMap).Data["color"] != "blue" {
		t.Fatalf("get: %+v", got)
	}
	if gvk := got.GetObjectKind().GroupVersionKind(); gvk.Kind != "ConfigMap" || gvk.Version != "v1" {
		t.Fatalf("type meta %v", gvk)
	}

	// Lists: in the namespace, across namespaces, and in another one.
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}})
	items, rv, err := c.List(ctx, cmKind, "team", client.ListOptions{})
	if err != nil || len(items) != 1 || rv == "" {
		t.Fatalf("list team: %d items, rv %q, %v", len(items), rv, err)
	}
	items, _, err = c.List(ctx, cmKind, "", client.ListOptions{})
	if err != nil || len(items) != 2 {
		t.Fatalf("list all: %d items, %v", len(items), err)
	}

	cm := got.DeepCopyObject().(*api.ConfigMap)
	cm.Data["color"] = "green"
	updated, err := c.Update(ctx, cm)
	if err != nil {
		t.Fatal(err)
	}
	if updated.GetResourceVersion() == got.GetResourceVersion() || updated.(*api.ConfigMap).Data["color"] != "green" {
		t.Fatalf("update: %+v", updated)
	}

	if _, err := c.Delete(ctx, cmKind, "team", "settings", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, cmKind, "team", "settings"); !client.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want 404", err)
	}
	if _, err := c.Delete(ctx, cmKind, "team", "settings", nil); !client.IsNotFound(err) {
		t.Fatalf("second delete: %v, want 404", err)
	}
	if _, err := c.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}); !client.IsAlreadyExists(err) {
		t.Fatalf("create twice: %v, want AlreadyExists", err)
	}
}

func TestCRUDClusterScopedAndGroups(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.client

	node := e.mustCreate(&api.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status:     api.NodeStatus{NodeInfo: api.NodeSystemInfo{KubeletVersion: "v0.3.1"}},
	})
	// A node keeps the status its agent registers with.
	if node.(*api.Node).Status.NodeInfo.KubeletVersion != "v0.3.1" {
		t.Fatalf("node status dropped on create: %+v", node)
	}
	sc := e.mustCreate(&api.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: api.LocalPathProvisioner})
	if sc.(*api.StorageClass).VolumeBindingMode == nil {
		t.Fatal("storage class not defaulted")
	}
	src := e.mustCreate(&api.Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: "/srv/fleet"}})
	if src.GetNamespace() != "" {
		t.Fatalf("cluster-scoped source got namespace %q", src.GetNamespace())
	}
	replicas := int32(2)
	dep := e.mustCreate(&api.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "web:1", Command: []string{"web"}}}},
			},
		},
	})
	if dep.(*api.Deployment).Spec.Strategy.Type != api.RollingUpdateDeploymentStrategyType {
		t.Fatal("deployment not defaulted")
	}
	for _, k := range []*api.Kind{nodeKind, scKind, srcKind} {
		items, _, err := c.List(ctx, k, "", client.ListOptions{})
		if err != nil || len(items) != 1 {
			t.Fatalf("list %s: %d, %v", k.Resource, len(items), err)
		}
	}
	if _, err := c.Get(ctx, deployKind, "default", "web"); err != nil {
		t.Fatal(err)
	}
	// A cluster-scoped kind has no namespaced path.
	code, _, body := e.do("GET", "/api/v1/namespaces/default/nodes/n1", adminToken, "", "", nil)
	status(t, code, body, http.StatusNotFound)
	// A namespaced object needs its namespace in the path.
	code, _, body = e.do("GET", "/api/v1/pods/x", adminToken, "", "", nil)
	status(t, code, body, http.StatusNotFound)
	if _, err := c.Delete(ctx, nodeKind, "", "n1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, nodeKind, "", "n1"); !client.IsNotFound(err) {
		t.Fatalf("node after delete: %v", err)
	}
}

func TestGenerateName(t *testing.T) {
	e := newEnv(t)
	obj := e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "cfg-"}})
	if !strings.HasPrefix(obj.GetName(), "cfg-") || len(obj.GetName()) != len("cfg-")+5 {
		t.Fatalf("generated name %q", obj.GetName())
	}
}

func TestUpdateConflict(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Data: map[string]string{"a": "1"}})
	a := first.DeepCopyObject().(*api.ConfigMap)
	a.Data["a"] = "2"
	if _, err := e.client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	stale := first.DeepCopyObject().(*api.ConfigMap)
	stale.Data["a"] = "3"
	_, err := e.client.Update(ctx, stale)
	if !client.IsConflict(err) {
		t.Fatalf("stale update: %v, want 409", err)
	}
	// Without a resourceVersion the update is unconditional.
	stale.ResourceVersion = ""
	out, err := e.client.Update(ctx, stale)
	if err != nil || out.(*api.ConfigMap).Data["a"] != "3" {
		t.Fatalf("unconditional update: %v %+v", err, out)
	}
	// Updating a missing object is a 404.
	missing := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nope"}}
	if _, err := e.client.Update(ctx, missing); !client.IsNotFound(err) {
		t.Fatalf("update missing: %v", err)
	}
}

// TestUnconditionalWritesRace: patches without a resourceVersion racing
// on one object on a durable store all succeed, as in Kubernetes; a loser
// reads the winner's version once it is durable, not the one it lost
// with.
func TestUnconditionalWritesRace(t *testing.T) {
	b, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withBackend(b))
	ctx := context.Background()
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}})
	const writers, each = 4, 15
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				patch := fmt.Sprintf(`{"data":{"w%d":"%d"}}`, w, i)
				_, err := e.client.Patch(ctx, cmKind, "default", "c", []byte(patch))
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("an unconditional patch: %v", err)
		}
	}
	obj, err := e.client.Get(ctx, cmKind, "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		if got := obj.(*api.ConfigMap).Data[fmt.Sprintf("w%d", w)]; got != fmt.Sprint(each-1) {
			t.Errorf("writer %d's last patch: w%d=%q", w, w, got)
		}
	}
}

// TestDeleteCollection: DELETE on a collection deletes what its
// selectors pick, each as a DELETE of it would, and answers the list of
// them; a reader may not, and a namespaced kind takes it in a namespace
// only, as in Kubernetes.
func TestDeleteCollection(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for name, tier := range map[string]string{"a": "web", "b": "web", "c": "db"} {
		e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"tier": tier}}})
	}
	const path = "/api/v1/namespaces/default/configmaps?labelSelector=tier%3Dweb"
	if code, _, _ := e.do("DELETE", path, readerToken, "", "", nil); code != http.StatusForbidden {
		t.Errorf("a reader's deletecollection: %d, want 403", code)
	}
	if code, _, body := e.do("DELETE", "/api/v1/configmaps", adminToken, "", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("deletecollection across namespaces: %d %s, want 405", code, body)
	}
	// Nor of namespaces, as in Kubernetes, which would delete those before
	// default and then refuse.
	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	if code, _, body := e.do("DELETE", "/api/v1/namespaces", adminToken, "", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("deletecollection of namespaces: %d %s, want 405", code, body)
	}
	if ns, err := e.client.Get(ctx, api.MustLookupResource("namespaces"), "", "app"); err != nil || ns.GetDeletionTimestamp() != nil {
		t.Errorf("namespace app after a refused deletecollection: %v %v", ns, err)
	}
	code, _, body := e.do("DELETE", path, adminToken, "application/json", "", strings.NewReader(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`))
	if code != http.StatusOK {
		t.Fatalf("deletecollection: %d %s", code, body)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
	}
	if list.Kind != "ConfigMapList" || strings.Join(names, ",") != "a,b" {
		t.Errorf("answer %s with %v, want ConfigMapList with a,b", list.Kind, names)
	}
	left, _, err := e.client.List(ctx, cmKind, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].GetName() != "c" {
		t.Errorf("left: %v, want c alone", left)
	}
}

func TestStatusSubresource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	created := e.mustCreate(testPod("default", "p", "", nil)).(*api.Pod)
	if created.Status.Phase != api.PodPending {
		t.Fatalf("new pod phase %q, want Pending", created.Status.Phase)
	}

	// A write to the object cannot change its status…
	p := created.DeepCopy()
	p.Status.Phase = api.PodRunning
	p.Labels = map[string]string{"x": "y"}
	out, err := e.client.Update(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if out.(*api.Pod).Status.Phase != api.PodPending || out.GetLabels()["x"] != "y" {
		t.Fatalf("main write: phase %q labels %v", out.(*api.Pod).Status.Phase, out.GetLabels())
	}

	// …and a write to the status cannot change anything else.
	s := out.(*api.Pod).DeepCopy()
	s.Status.Phase = api.PodRunning
	s.Status.PodIP = "10.0.0.7"
	s.Labels = map[string]string{"x": "z"}
	s.Spec.Containers[0].Image = "busybox:2"
	out, err = e.client.UpdateStatus(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*api.Pod)
	if got.Status.Phase != api.PodRunning || got.Status.PodIP != "10.0.0.7" || got.Labels["x"] != "y" || got.Spec.Containers[0].Image != "busybox:1" {
		t.Fatalf("status write changed the wrong part: %+v", got)
	}

	// PATCH on status: only status moves.
	out, err = e.client.PatchStatus(ctx, podKind, "default", "p", []byte(`{"status":{"phase":"Succeeded"},"metadata":{"labels":{"x":"w"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.(*api.Pod).Status.Phase != api.PodSucceeded || out.GetLabels()["x"] != "y" {
		t.Fatalf("status patch: %+v", out)
	}
	// GET on status answers the object.
	code, _, body := e.do("GET", "/api/v1/namespaces/default/pods/p/status", adminToken, "", "", nil)
	if code != http.StatusOK || !contains(string(body), `"phase":"Succeeded"`) {
		t.Fatalf("get status: %d %s", code, body)
	}
	// A kind without status has no status subresource.
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}})
	code, _, body = e.do("GET", "/api/v1/namespaces/default/configmaps/c/status", adminToken, "", "", nil)
	status(t, code, body, http.StatusNotFound)
}

// TestStatusWriteLeavesStoredVersion: a status write's new version shares
// the stored one's spec and metadata, so neither the write nor its
// defaulting may change the version it replaces, which readers still
// hold (the race detector watches the readers here).
func TestStatusWriteLeavesStoredVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := testPod("default", "p", "", nil)
	p.Labels = map[string]string{"app": "a"}
	p.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceCPU: resource.MustParse("1"), api.ResourceMemory: resource.MustParse("64Mi")}
	e.mustCreate(p)
	stored, err := e.store.Get(podKind, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	before := stored.DeepCopyObject()
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := json.Marshal(stored); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		cur, err := e.client.Get(ctx, podKind, "default", "p")
		if err != nil {
			t.Fatal(err)
		}
		s := cur.(*api.Pod).DeepCopy()
		s.Status = api.PodStatus{PodIP: fmt.Sprintf("10.0.0.%d", i+1)}
		out, err := e.client.UpdateStatus(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*api.Pod)
		if got.Status.PodIP != s.Status.PodIP || got.Status.Phase != api.PodPending || got.Status.QOSClass != api.QOSGuaranteed {
			t.Fatalf("status %+v: want the written IP, phase Pending and QoS class Guaranteed by default", got.Status)
		}
	}
	close(stop)
	readers.Wait()
	if !reflect.DeepEqual(before, stored) {
		t.Fatalf("the stored version a status write replaced changed:\n%+v\n%+v", before, stored)
	}
}

// A status write validates what it changes, not the rest of the object,
// which is the store's: a pod a controller stored with a spec the API
// would refuse still takes its agent's status, as in Kubernetes.
func TestStatusWriteDoesNotValidateTheStoredSpec(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := testPod("default", "p", "", nil)
	p.Spec.Containers[0].Name = "Not_A_DNS_Label"
	api.Default(p)
	if _, err := e.store.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	cur, err := e.client.Get(ctx, podKind, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	s := cur.(*api.Pod).DeepCopy()
	s.Status.Phase = api.PodRunning
	if _, err := e.client.UpdateStatus(ctx, s); err != nil {
		t.Fatalf("status write refused for the stored spec: %v", err)
	}
	// A write of the object itself is validated whole.
	s.Labels = map[string]string{"a": "b"}
	if _, err := e.client.Update(ctx, s); !client.IsInvalid(err) {
		t.Fatalf("object write: %v, want 422", err)
	}
}

func TestMergePatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c", Labels: map[string]string{"a": "1", "b": "2"}}, Data: map[string]string{"k": "v"}})
	out, err := e.client.Patch(ctx, cmKind, "default", "c", []byte(`{"metadata":{"labels":{"a":null,"c":"3"}},"data":{"k2":"v2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	cm := out.(*api.ConfigMap)
	if _, ok := cm.Labels["a"]; ok || cm.Labels["b"] != "2" || cm.Labels["c"] != "3" || cm.Data["k"] != "v" || cm.Data["k2"] != "v2" {
		t.Fatalf("merge patch result %+v", cm)
	}
	// A patch carrying a stale resourceVersion is a conflict.
	_, err = e.client.Patch(ctx, cmKind, "default", "c", []byte(`{"metadata":{"resourceVersion":"1"},"data":{"x":"y"}}`))
	if !client.IsConflict(err) {
		t.Fatalf("stale patch: %v", err)
	}
	// A patch may not rename the object.
	_, err = e.client.Patch(ctx, cmKind, "default", "c", []byte(`{"metadata":{"name":"d"}}`))
	if !client.IsBadRequest(err) {
		t.Fatalf("renaming patch: %v", err)
	}
	// A patch that makes the object unknown-fielded is refused whole.
	_, err = e.client.Patch(ctx, cmKind, "default", "c", []byte(`{"dataa":{"x":"y"}}`))
	if !client.IsBadRequest(err) || !strings.Contains(err.Error(), "dataa") {
		t.Fatalf("unknown field patch: %v", err)
	}
	// JSON patch.
	out, err = e.client.PatchAs(ctx, cmKind, "default", "c", "", client.JSONPatch,
		[]byte(`[{"op":"test","path":"/data/k","value":"v"},{"op":"replace","path":"/data/k","value":"w"},{"op":"add","path":"/data/n","value":"1"}]`))
	if err != nil || out.(*api.ConfigMap).Data["k"] != "w" || out.(*api.ConfigMap).Data["n"] != "1" {
		t.Fatalf("json patch: %v %+v", err, out)
	}
	_, err = e.client.PatchAs(ctx, cmKind, "default", "c", "", client.JSONPatch, []byte(`[{"op":"test","path":"/data/k","value":"v"}]`))
	if !client.IsInvalid(err) {
		t.Fatalf("failed json patch test: %v", err)
	}
	// Unsupported patch types.
	code, _, body := e.do("PATCH", "/api/v1/namespaces/default/configmaps/c", adminToken, "application/apply-patch+cbor", "", strings.NewReader("data: {}"))
	status(t, code, body, http.StatusUnsupportedMediaType)
}

// TestStrategicPatch checks what kubectl set image and kubectl apply
// send: a container list patched by name keeps the other containers and
// the other fields of the patched one.
func TestStrategicPatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	replicas := int32(1)
	e.mustCreate(&api.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: api.PodSpec{Containers: []api.Container{
					{Name: "web", Image: "web:1", Command: []string{"web", "--port=80"}, Env: []api.EnvVar{{Name: "A", Value: "1"}}},
					{Name: "sidecar", Image: "side:1", Command: []string{"side"}},
				}},
			},
		},
	})
	patch := `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"},{"name":"sidecar"}],` +
		`"containers":[{"name":"web","image":"web:2","env":[{"name":"B","value":"2"}]}]}}}}`
	out, err := e.client.PatchAs(ctx, deployKind, "default", "web", "", client.StrategicPatch, []byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	cs := out.(*api.Deployment).Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Image != "web:2" || len(cs[0].Command) != 2 || len(cs[0].Env) != 2 || cs[1].Image != "side:1" {
		t.Fatalf("strategic patch result %+v", cs)
	}
	// $patch: delete removes one item.
	out, err = e.client.PatchAs(ctx, deployKind, "default", "web", "", client.StrategicPatch,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}`))
	if err != nil || len(out.(*api.Deployment).Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("$patch delete: %v %+v", err, out)
	}
}

func TestImmutableFields(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreate(testPod("default", "p", "", nil))
	// The image may change…
	if _, err := e.client.Patch(ctx, podKind, "default", "p", []byte(`{"spec":{"containers":[{"name":"main","image":"busybox:2","command":["sleep","1000"]}]}}`)); err != nil {
		t.Fatal(err)
	}
	// …the command may not.
	_, err := e.client.Patch(ctx, podKind, "default", "p", []byte(`{"spec":{"containers":[{"name":"main","image":"busybox:2","command":["sleep","1"]}]}}`))
	if !client.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields") {
		t.Fatalf("pod spec change: %v", err)
	}
	replicas := int32(1)
	e.mustCreate(&api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rs"},
		Spec: api.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a", "v": "1"}},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i", Command: []string{"x"}}}},
			},
		},
	})
	_, err = e.client.Patch(ctx, kind("replicasets"), "default", "rs", []byte(`{"spec":{"selector":{"matchLabels":{"app":"a","v":"1"}}}}`))
	if !client.IsInvalid(err) || !strings.Contains(err.Error(), "spec.selector") {
		t.Fatalf("selector change: %v", err)
	}
}

func TestInvalidListsEveryFieldError(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name","labels":{"a":"-x-"}},
		"spec":{"restartPolicy":"Sometimes","containers":[{"name":"","image":"x"}]}}`
	code, _, data := e.do("POST", "/api/v1/namespaces/default/pods", adminToken, "application/json", "", strings.NewReader(body))
	st := status(t, code, data, http.StatusUnprocessableEntity)
	if st.Reason != metav1.StatusReasonInvalid || st.Details == nil || st.Details.Kind != "Pod" {
		t.Fatalf("422 status %+v", st)
	}
	want := []string{"metadata.name", "metadata.labels", "spec.restartPolicy", "spec.containers[0].name"}
	for _, f := range want {
		found := false
		for _, c := range st.Details.Causes {
			if strings.HasPrefix(c.Field, f) {
				found = true
			}
		}
		if !found || !strings.Contains(st.Message, f) {
			t.Errorf("field %s missing from causes %+v or message %q", f, st.Details.Causes, st.Message)
		}
	}
	// Nothing was stored.
	if _, err := e.client.Get(context.Background(), podKind, "default", "Bad_Name"); !client.IsNotFound(err) {
		t.Fatalf("invalid pod stored: %v", err)
	}
}

func TestBadBodies(t *testing.T) {
	e := newEnv(t, withConfig(func(c *apiserverConfig) { c.MaxBodyBytes = 4096 }))
	pods := "/api/v1/namespaces/default/pods"
	cases := []struct {
		name, method, path, ct, body string
		code                         int
		msg                          string
	}{
		{"wrong kind for the path", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, "not a Pod"},
		{"namespace mismatch", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "does not match the namespace"},
		{"malformed JSON", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod",`, 400, "not valid JSON"},
		{"unknown field", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containerz":[]}}`, 400, "containerz"},
		{"list body", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"List","items":[]}`, 400, "exactly one"},
		{"empty body", "POST", pods, "application/json", ``, 400, "empty"},
		{"bad media type", "POST", pods, "text/plain", `x`, 415, "text/plain"},
		{"too large", "POST", pods, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"` + strings.Repeat("x", 5000) + `"}}`, 413, "larger than"},
		{"name mismatch on update", "PUT", pods + "/a", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, "does not match the name"},
		{"post to a name", "POST", pods + "/a", "application/json", `{}`, 405, ""},
		{"delete a collection across namespaces", "DELETE", "/api/v1/pods", "", ``, 405, ""},
		{"delete a collection with a bad body", "DELETE", pods, "application/json", `{"propagationPolicy":"Sideways"}`, 400, "propagationPolicy"},
		{"missing namespace", "POST", "/api/v1/namespaces/nope/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 404, `namespaces "nope" not found`},
		{"unknown resource", "GET", "/api/v1/widgets", "", ``, 404, ""},
		{"bad label selector", "GET", pods + "?labelSelector=a%20in%20(", "", ``, 400, "labelSelector"},
		{"unsupported field selector", "GET", pods + "?fieldSelector=spec.image%3Dx", "", ``, 400, "field label not supported"},
		{"bad resourceVersion", "GET", pods + "?watch=true&resourceVersion=abc", "", ``, 400, "resourceVersion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, data := e.do(tc.method, tc.path, adminToken, tc.ct, "", strings.NewReader(tc.body))
			st := status(t, code, data, tc.code)
			if !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("message %q lacks %q", st.Message, tc.msg)
			}
		})
	}
	// Bodies without apiVersion and kind take them from the path.
	code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "", strings.NewReader(`{"metadata":{"name":"bare"}}`))
	if code != http.StatusCreated {
		t.Fatalf("bare body: %d %s", code, data)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}})
	out, err := e.client.Delete(ctx, nsKind, "", "gone", nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := out.(*api.Namespace)
	if ns.DeletionTimestamp == nil || ns.Status.Phase != api.NamespaceTerminating {
		t.Fatalf("deleted namespace: %+v", ns)
	}
	_, err = e.client.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: "c"}})
	var se *apierrors.StatusError
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), `configmaps "c" is forbidden: unable to create new content in namespace gone because it is being terminated`) ||
		!errors.As(err, &se) || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) != 1 || se.ErrStatus.Details.Causes[0].Type != "NamespaceTerminating" {
		t.Fatalf("create in terminating namespace: %v", err)
	}
	// A write to the namespace cannot drop its spec.finalizers…
	out, err = e.client.Patch(ctx, nsKind, "", "gone", []byte(`{"spec":{"finalizers":null},"metadata":{"labels":{"a":"b"}}}`))
	if err != nil || len(out.(*api.Namespace).Spec.Finalizers) != 1 {
		t.Fatalf("patch of spec.finalizers: %v %+v", err, out)
	}
	// …only its finalize subresource can, and then it goes.
	code, _, body := e.do("PUT", "/api/v1/namespaces/gone/finalize", adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gone"},"spec":{"finalizers":[]}}`))
	if code != http.StatusOK {
		t.Fatalf("finalize: %d %s", code, body)
	}
	if _, err := e.client.Get(ctx, nsKind, "", "gone"); !client.IsNotFound(err) {
		t.Fatalf("finalized namespace: %v", err)
	}
}

func TestDeleteGraceful(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.client

	// An object with a finalizer is only marked.
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", Finalizers: []string{"berth.dev/test"}}})
	out, err := c.Delete(ctx, cmKind, "default", "held", nil)
	if err != nil || out.GetDeletionTimestamp() == nil {
		t.Fatalf("delete with finalizer: %v %+v", err, out)
	}
	if _, err := c.Get(ctx, cmKind, "default", "held"); err != nil {
		t.Fatalf("finalized object gone early: %v", err)
	}
	// Removing the finalizer finishes the deletion.
	if _, err := c.Patch(ctx, cmKind, "default", "held", []byte(`{"metadata":{"finalizers":null}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, cmKind, "default", "held"); !client.IsNotFound(err) {
		t.Fatalf("after finalizer removal: %v", err)
	}

	// A pod running on a node gets its grace period.
	e.mustCreate(testPod("default", "running", "n1", nil))
	out, err = c.Delete(ctx, podKind, "default", "running", nil)
	if err != nil || out.GetDeletionTimestamp() == nil || *out.GetDeletionGracePeriodSeconds() != 30 {
		t.Fatalf("graceful pod delete: %v %+v", err, out)
	}
	zero := int64(0)
	if _, err := c.Delete(ctx, podKind, "default", "running", &metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, podKind, "default", "running"); !client.IsNotFound(err) {
		t.Fatalf("pod after grace 0: %v", err)
	}

	// Foreground propagation is recorded as Kubernetes' finalizer.
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fg"}})
	fg := metav1.DeletePropagationForeground
	out, err = c.Delete(ctx, cmKind, "default", "fg", &metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil || out.GetDeletionTimestamp() == nil || len(out.GetFinalizers()) != 1 || out.GetFinalizers()[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("foreground delete: %v %+v", err, out)
	}
	// Orphan by query parameter.
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphan"}})
	code, _, body := e.do("DELETE", "/api/v1/namespaces/default/configmaps/orphan?propagationPolicy=Orphan", adminToken, "", "", nil)
	if code != http.StatusOK || !contains(string(body), `"orphan"`, "deletionTimestamp") {
		t.Fatalf("orphan delete: %d %s", code, body)
	}

	// Preconditions.
	cm := e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pre"}})
	stale := "1"
	_, err = c.Delete(ctx, cmKind, "default", "pre", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
	if !client.IsConflict(err) {
		t.Fatalf("stale precondition: %v", err)
	}
	rv := cm.GetResourceVersion()
	if _, err := c.Delete(ctx, cmKind, "default", "pre", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil {
		t.Fatal(err)
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	for _, tok := range []string{"", "wrong"} {
		code, _, body := e.do("GET", "/api/v1/namespaces/default/pods", tok, "", "", nil)
		st := status(t, code, body, http.StatusUnauthorized)
		if st.Reason != metav1.StatusReasonUnauthorized {
			t.Fatalf("reason %q", st.Reason)
		}
	}
	code, _, body := e.do("GET", "/api", "", "", "", nil)
	status(t, code, body, http.StatusUnauthorized)
	// Unknown paths need a token too, then are 404.
	code, _, body = e.do("GET", "/openapi/v1", adminToken, "", "", nil)
	status(t, code, body, http.StatusNotFound)
	// Health, version and metrics do not.
	for _, p := range []string{"/version", "/livez", "/readyz", "/metrics"} {
		if code, _, body := e.do("GET", p, "", "", "", nil); code != http.StatusOK {
			t.Errorf("%s without token: %d %s", p, code, body)
		}
	}
}

func TestAuthorization(t *testing.T) {
	e := newEnv(t)
	reader := e.clientFor(readerToken)
	ctx := context.Background()
	if _, _, err := reader.List(ctx, podKind, "default", client.ListOptions{}); err != nil {
		t.Fatalf("reader list: %v", err)
	}
	_, err := reader.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}})
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:serviceaccount:default:reader" cannot create resource "configmaps"`) {
		t.Fatalf("reader create: %v", err)
	}
	// A refused reader learns nothing of whether the object exists.
	_, err = reader.Delete(ctx, cmKind, "default", "absent", nil)
	if !client.IsForbidden(err) {
		t.Fatalf("reader delete of a missing object: %v", err)
	}
}

func TestSecretStringData(t *testing.T) {
	e := newEnv(t)
	out := e.mustCreate(&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, StringData: map[string]string{"password": "hunter2"}})
	s := out.(*api.Secret)
	if string(s.Data["password"]) != "hunter2" || s.StringData != nil || s.Type != api.SecretTypeOpaque {
		t.Fatalf("secret %+v", s)
	}
}

func TestListSelectors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	e.mustCreate(testPod("default", "a", "n1", map[string]string{"app": "web", "tier": "front"}))
	e.mustCreate(testPod("default", "b", "n1", map[string]string{"app": "db"}))
	e.mustCreate(testPod("default", "c", "n2", map[string]string{"app": "web"}))
	e.mustCreate(testPod("team", "d", "n1", map[string]string{"app": "web"}))
	e.mustCreate(testPod("default", "e", "", map[string]string{"app": "web"}))
	if _, err := e.client.PatchStatus(ctx, podKind, "default", "a", []byte(`{"status":{"phase":"Succeeded"}}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, labels, fields, want string
	}{
		{"", "", "spec.nodeName=n1", "a b d"},
		{"default", "", "spec.nodeName=n1", "a b"},
		{"", "app=web", "spec.nodeName=n1", "a d"},
		{"", "", "spec.nodeName=", "e"},
		{"", "", "spec.nodeName=n1,status.phase!=Succeeded", "b d"},
		{"", "", "metadata.namespace=team", "d"},
		{"default", "", "metadata.namespace=team", ""},
		{"", "", "metadata.name=c", "c"},
		{"", "app in (web),tier!=front", "", "c e d"},
		{"", "tier", "", "a"},
	} {
		items, _, err := e.client.List(ctx, podKind, tc.ns, client.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields})
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		var names []string
		for _, o := range items {
			names = append(names, o.GetName())
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("ns=%q labels=%q fields=%q: %q, want %q", tc.ns, tc.labels, tc.fields, got, tc.want)
		}
	}
}

// TestListResourceVersionMatch: a list asked for at an Exact revision is
// answered only at that revision (the store keeps no older lists: 410),
// NotOlderThan as any list, and a bad combination is a 400.
func TestListResourceVersionMatch(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	old := e.store.Revision()
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
	now := e.store.Revision()
	list := func(query string) (int, []byte) {
		code, _, body := e.do("GET", "/api/v1/namespaces/default/configmaps?"+query, adminToken, "", "", nil)
		return code, body
	}
	if code, body := list(fmt.Sprintf("resourceVersion=%d&resourceVersionMatch=Exact", now)); code != http.StatusOK || !strings.Contains(string(body), `"name":"b"`) {
		t.Errorf("exact, current: %d %s", code, body)
	}
	code, body := list(fmt.Sprintf("resourceVersion=%d&resourceVersionMatch=Exact", old))
	status(t, code, body, http.StatusGone)
	if code, body := list(fmt.Sprintf("resourceVersion=%d&resourceVersionMatch=NotOlderThan", old)); code != http.StatusOK || !strings.Contains(string(body), `"name":"b"`) {
		t.Errorf("not older than: %d %s", code, body)
	}
	for _, q := range []string{"resourceVersionMatch=Exact", "resourceVersion=0&resourceVersionMatch=Exact", "resourceVersion=1&resourceVersionMatch=Newest"} {
		code, body := list(q)
		status(t, code, body, http.StatusBadRequest)
	}
}
