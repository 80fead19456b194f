package apiserver_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
)

// TestAuthzNodeReclaimsItsVolumes: a node follows, through the label
// selector, the volumes the volume controller marked for it, and changes
// only their annotations and finalizers.
func TestAuthzNodeReclaimsItsVolumes(t *testing.T) {
	_, clk := tokenTestSigner(t)
	st := authTestStore(t, clk)
	for _, n := range []string{"n1", "n2"} {
		authTestCreate(t, st, &api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{
			Name:       "pv-" + n,
			Labels:     map[string]string{api.LabelReclaimNode: n},
			Finalizers: []string{api.FinalizerLocalPath},
		}})
	}
	authTestCreate(t, st, &api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-free"}})
	p := auth.NewAuthorizer(st)
	n1 := auth.NodeIdentity("n1")
	k := authzKind(t, "persistentvolumes")
	get := func(name string) *api.PersistentVolume {
		return authzGet(t, st, "persistentvolumes", "", name).DeepCopyObject().(*api.PersistentVolume)
	}
	edit := func(name string, f func(*api.PersistentVolume)) *api.PersistentVolume {
		pv := get(name)
		f(pv)
		return pv
	}
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	done := func(pv *api.PersistentVolume) { pv.Finalizers = nil }
	cases := []struct {
		name  string
		a     auth.Attributes
		allow bool
	}{
		{"list its own", auth.Attributes{Verb: "list", Kind: k, LabelSelector: sel(api.LabelReclaimNode + "=n1")}, true},
		{"watch its own", auth.Attributes{Verb: "watch", Kind: k, LabelSelector: sel(api.LabelReclaimNode + "=n1")}, true},
		{"list another node's", auth.Attributes{Verb: "list", Kind: k, LabelSelector: sel(api.LabelReclaimNode + "=n2")}, false},
		{"list with a set selector", auth.Attributes{Verb: "list", Kind: k, LabelSelector: sel(api.LabelReclaimNode + " in (n1,n2)")}, false},
		{"list every volume", auth.Attributes{Verb: "list", Kind: k}, false},
		{"remove its finalizer", auth.Attributes{Verb: "update", Kind: k, Name: "pv-n1", Object: edit("pv-n1", done), Old: get("pv-n1")}, true},
		{"remove its finalizer, old looked up", auth.Attributes{Verb: "update", Kind: k, Name: "pv-n1", Object: edit("pv-n1", done)}, true},
		{"annotate it", auth.Attributes{Verb: "patch", Kind: k, Name: "pv-n1", Object: edit("pv-n1", func(pv *api.PersistentVolume) {
			pv.Annotations = map[string]string{api.AnnotationRecycled: "uid"}
		}), Old: get("pv-n1")}, true},
		{"change its spec", auth.Attributes{Verb: "update", Kind: k, Name: "pv-n1", Object: edit("pv-n1", func(pv *api.PersistentVolume) {
			pv.Spec.ClaimRef = &api.ObjectReference{Namespace: "default", Name: "mine"}
		}), Old: get("pv-n1")}, false},
		{"hand it to another node", auth.Attributes{Verb: "update", Kind: k, Name: "pv-n1", Object: edit("pv-n1", func(pv *api.PersistentVolume) {
			pv.Labels[api.LabelReclaimNode] = "n2"
		}), Old: get("pv-n1")}, false},
		{"take another node's", auth.Attributes{Verb: "update", Kind: k, Name: "pv-n2", Object: edit("pv-n2", func(pv *api.PersistentVolume) {
			pv.Labels[api.LabelReclaimNode] = "n1"
			pv.Finalizers = nil
		}), Old: get("pv-n2")}, false},
		{"claim an unmarked one", auth.Attributes{Verb: "update", Kind: k, Name: "pv-free", Object: edit("pv-free", func(pv *api.PersistentVolume) {
			pv.Labels = map[string]string{api.LabelReclaimNode: "n1"}
		}), Old: get("pv-free")}, false},
		{"its status", auth.Attributes{Verb: "update", Kind: k, Name: "pv-n1", Subresource: "status", Object: get("pv-n1"), Old: get("pv-n1")}, false},
		{"delete it", auth.Attributes{Verb: "delete", Kind: k, Name: "pv-n1", Old: get("pv-n1")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.Authorize(context.Background(), n1, c.a)
			if (err == nil) != c.allow {
				t.Errorf("allowed = %v, want %v (err %v)", err == nil, c.allow, err)
			}
		})
	}
}
