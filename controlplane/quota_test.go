package controlplane

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store"
)

// TestQuotaEnforced checks that the control plane enforces quotas on what
// it stores: a pod over a ResourceQuota, posted through its API, is a 403
// in Kubernetes' words, and the quota's status.used is kept.
func TestQuotaEnforced(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreMemory)
	c, err := client.New(&client.Config{Server: "https://" + r.Addr().String(), Token: r.Credentials().AdminToken, CAData: r.Credentials().CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := &api.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compute"},
		Spec:       api.ResourceQuotaSpec{Hard: api.ResourceList{api.ResourcePods: resource.MustParse("1")}},
	}
	if _, err := c.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *api.Pod {
		return &api.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       api.PodSpec{Containers: []api.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "1000"}}}},
		}
	}
	if _, err := c.Create(ctx, pod("a")); err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx, pod("b"))
	want := `pods "b" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1`
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second pod: %v\nwant 403 %q", err, want)
	}
	obj, err := c.Get(ctx, api.MustLookupResource("resourcequotas"), "default", "compute")
	if err != nil {
		t.Fatal(err)
	}
	st := obj.(*api.ResourceQuota).Status
	if used, hard := st.Used[api.ResourcePods], st.Hard[api.ResourcePods]; used.Value() != 1 || hard.Value() != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestNamespaceLifecycleForEveryWriter checks that the control plane's
// store refuses, to writers that bypass the API (the controllers), new
// objects in a namespace being deleted.
func TestNamespaceLifecycleForEveryWriter(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreMemory)
	st := r.Store()
	ctx := context.Background()
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	api.Default(ns)
	if _, err := st.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
	}
	// A ConfigMap with a finalizer keeps the namespace terminating.
	held := cm("held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := st.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, api.MustLookupResource("namespaces"), "", "team", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := st.Create(ctx, cm("late"))
	if !store.IsNamespaceTerminating(err) || !store.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Fatalf("create in a terminating namespace: %v", err)
	}
}

// TestDefaultNamespaceMayNotBeDeleted: deleting namespace default through
// the API is a 403, as in Kubernetes, and empties nothing; the other
// system namespaces are there.
func TestDefaultNamespaceMayNotBeDeleted(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreMemory)
	c, err := client.New(&client.Config{Server: "https://" + r.Addr().String(), Token: r.Credentials().AdminToken, CAData: r.Credentials().CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Delete(context.Background(), api.MustLookupResource("namespaces"), "", api.NamespaceDefault, nil)
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), "this namespace may not be deleted") {
		t.Fatalf("delete namespace default: %v", err)
	}
	// The server makes Kubernetes' system namespaces, as its API server
	// does.
	for _, name := range []string{api.NamespaceSystem, api.NamespacePublic, api.NamespaceNodeLease} {
		if _, err := c.Get(context.Background(), api.MustLookupResource("namespaces"), "", name); err != nil {
			t.Errorf("namespace %s: %v", name, err)
		}
	}
}
