package strategy_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/strategy"
)

// served is the metadata only the server sets.
func served(name, namespace string) metav1.ObjectMeta {
	now := metav1.Now()
	grace := int64(30)
	return metav1.ObjectMeta{Name: name, Namespace: namespace, UID: "u1", ResourceVersion: "7", Generation: 3,
		CreationTimestamp: now, DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace}
}

func TestPrepareForCreate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in, want api.Object
	}{{
		name: "a pod starts Pending with no status of its own",
		in:   &api.Pod{ObjectMeta: served("p", "default"), Status: api.PodStatus{Phase: api.PodRunning, PodIP: "10.0.0.1"}},
		want: &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Status: api.PodStatus{Phase: api.PodPending}},
	}, {
		name: "a node keeps the status its agent registers with",
		in:   &api.Node{ObjectMeta: served("n1", "default"), Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: "InternalIP", Address: "10.0.0.1"}}}},
		want: &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: "InternalIP", Address: "10.0.0.1"}}}},
	}, {
		name: "a deployment's status is its controller's",
		in:   &api.Deployment{ObjectMeta: served("d", "default"), Status: api.DeploymentStatus{Replicas: 3}},
		want: &api.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}},
	}, {
		name: "a kind without status loses only the server's metadata",
		in:   &api.ConfigMap{ObjectMeta: served("c", "default"), Data: map[string]string{"k": "v"}},
		want: &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "v"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			strategy.For(api.KindOf(tt.in)).PrepareForCreate(tt.in)
			if !equality.Semantic.DeepEqual(tt.in, tt.want) {
				t.Fatalf("got %+v\nwant %+v", tt.in, tt.want)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	for _, tt := range []struct {
		name          string
		in, old, want api.Object
	}{{
		name: "an update of a deployment keeps the stored status",
		in:   &api.Deployment{Spec: api.DeploymentSpec{Paused: true}, Status: api.DeploymentStatus{Replicas: 9}},
		old:  &api.Deployment{Status: api.DeploymentStatus{Replicas: 3}},
		want: &api.Deployment{Spec: api.DeploymentSpec{Paused: true}, Status: api.DeploymentStatus{Replicas: 3}},
	}, {
		name: "a namespace's finalizers change only through finalize",
		in:   &api.Namespace{Spec: api.NamespaceSpec{}},
		old:  &api.Namespace{Spec: api.NamespaceSpec{Finalizers: []api.FinalizerName{"kubernetes"}}, Status: api.NamespaceStatus{Phase: "Active"}},
		want: &api.Namespace{Spec: api.NamespaceSpec{Finalizers: []api.FinalizerName{"kubernetes"}}, Status: api.NamespaceStatus{Phase: "Active"}},
	}, {
		name: "a kind without status is written as it comes",
		in:   &api.ConfigMap{Data: map[string]string{"k": "new"}},
		old:  &api.ConfigMap{Data: map[string]string{"k": "old"}},
		want: &api.ConfigMap{Data: map[string]string{"k": "new"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			strategy.For(api.KindOf(tt.in)).PrepareForUpdate(tt.in, tt.old)
			if !equality.Semantic.DeepEqual(tt.in, tt.want) {
				t.Fatalf("got %+v\nwant %+v", tt.in, tt.want)
			}
		})
	}
}

// TestCustomResourceStatus: a custom resource with a status subresource
// keeps its stored status through an update and has none on create; one
// without keeps what it is given.
func TestCustomResourceStatus(t *testing.T) {
	withStatus := &api.Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Namespaced: true, HasStatus: true, Custom: true}
	plain := &api.Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, Namespaced: true, Custom: true}
	obj := func(status any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	in, old := obj(map[string]any{"ready": false}), obj(map[string]any{"ready": true})
	strategy.For(withStatus).PrepareForUpdate(in, old)
	if got := in.Object["status"]; !equality.Semantic.DeepEqual(got, map[string]any{"ready": true}) {
		t.Errorf("update with a status subresource: status %v, want the stored one", got)
	}
	in = obj(map[string]any{"ready": false})
	strategy.For(plain).PrepareForUpdate(in, old)
	if got := in.Object["status"]; !equality.Semantic.DeepEqual(got, map[string]any{"ready": false}) {
		t.Errorf("update without a status subresource: status %v, want the written one", got)
	}
	in = obj(map[string]any{"ready": true})
	strategy.For(withStatus).PrepareForCreate(in)
	if _, ok := in.Object["status"]; ok {
		t.Errorf("create with a status subresource kept its status")
	}
}
