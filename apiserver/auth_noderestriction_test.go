package apiserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// nrMirror is a mirror pod of node in ns as an agent posts it: one
// controller owner reference to its Node (uid from st).
func nrMirror(t testing.TB, st *store.Store, ns, name, node string) *api.Pod {
	t.Helper()
	m := newAuthTestPod(ns, name, node, "")
	m.Annotations = map[string]string{api.AnnotationMirror: "hash"}
	uid := ""
	if n, err := st.Get(authzKind(t, "nodes"), "", node); err == nil {
		uid = string(n.GetUID())
	}
	yes := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(uid), Controller: &yes}}
	return m
}

// TestAuthzNodeMirrorPodReferences: a node's mirror pod refers to no
// Secret, ConfigMap, claim or service account, in any namespace, and owns
// up to its Node as the agent posts it, as Kubernetes' NodeRestriction
// has it; a mirror pod already stored with such references (posted before
// the rule) opens nothing to the node.
func TestAuthzNodeMirrorPodReferences(t *testing.T) {
	st := authzFixture(t)
	// A mirror pod of n1 in another namespace that names what n1 should
	// never reach, as one posted before the rule was.
	legacy := nrMirror(t, st, "kube", "grab", "n1")
	legacy.Spec.ServiceAccountName = "admin"
	legacy.Spec.Volumes = []api.Volume{
		{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "kube-admin"}}},
		{Name: "c", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "kube-data"}}},
	}
	legacy.Spec.Containers[0].EnvFrom = []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "kube-cfg"}}}}
	authTestCreate(t, st, legacy)
	authTestCreate(t, st, &api.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "kube", Name: "kube-data"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "pv-kube"}})
	authTestCreate(t, st, &api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-kube"}})
	// One that runs as its namespace's default service account.
	authTestCreate(t, st, nrMirror(t, st, "kube2", "plain", "n1"))

	p := auth.NewAuthorizer(st)
	n1 := auth.NodeIdentity("n1")
	k := func(r string) *api.Kind { return authzKind(t, r) }
	mirror := func(ns string, edit func(*api.Pod)) *api.Pod {
		m := nrMirror(t, st, ns, "static", "n1")
		if edit != nil {
			edit(m)
		}
		return m
	}
	ref := api.LocalObjectReference{Name: "kube-admin"}
	create := func(ns string, edit func(*api.Pod)) auth.Attributes {
		return auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: ns, Object: mirror(ns, edit)}
	}
	cases := []nrCase{
		{"plain mirror pod", create("kube", nil), true, ""},
		{"mirror pod of the default service account", create("kube", func(p *api.Pod) { p.Spec.ServiceAccountName = "default" }), true, ""},
		{"secret volume", create("kube", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "kube-admin"}}}}
		}), false, `spec.volumes[0].secret: Secret "kube-admin"`},
		{"configmap volume", create("kube", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "c", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: ref}}}}
		}), false, "ConfigMap"},
		{"claim volume", create("kube", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "c", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "kube-data"}}}}
		}), false, "PersistentVolumeClaim"},
		{"secret env", create("kube", func(p *api.Pod) {
			p.Spec.Containers[0].Env = []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: ref, Key: "k"}}}}
		}), false, "secretKeyRef"},
		{"configmap envFrom in an init container", create("kube", func(p *api.Pod) {
			p.Spec.InitContainers = []api.Container{{Name: "i", Image: "x", EnvFrom: []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: ref}}}}}
		}), false, "spec.initContainers[0].envFrom[0].configMapRef"},
		{"service account", create("kube", func(p *api.Pod) { p.Spec.ServiceAccountName = "admin" }), false, "ServiceAccount"},
		{"no owner reference", create("kube", func(p *api.Pod) { p.OwnerReferences = nil }), false, "owner reference"},
		{"two owner references", create("kube", func(p *api.Pod) { p.OwnerReferences = append(p.OwnerReferences, p.OwnerReferences[0]) }), false, "owner reference"},
		{"owned by another node", create("kube", func(p *api.Pod) {
			p.OwnerReferences[0].Name = "n2"
			n2, _ := st.Get(k("nodes"), "", "n2")
			p.OwnerReferences[0].UID = n2.GetUID()
		}), false, "owner reference"},
		{"owner reference of the wrong uid", create("kube", func(p *api.Pod) { p.OwnerReferences[0].UID = "not-the-node" }), false, "uid"},
		{"owner reference not a controller", create("kube", func(p *api.Pod) { p.OwnerReferences[0].Controller = nil }), false, "controller"},
		{"owner reference blocks deletion", create("kube", func(p *api.Pod) {
			yes := true
			p.OwnerReferences[0].BlockOwnerDeletion = &yes
		}), false, "blockOwnerDeletion"},
		// Nodes create and delete mirror pods; they change none (a spec
		// change is a new mirror), so none gains a reference later.
		{"node updates its mirror pod", auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "static-n1",
			Old: authzGet(t, st, "pods", "default", "static-n1"), Object: authzPodEdit(t, st, "default", "static-n1", func(p *api.Pod) {
				p.Spec.Volumes = []api.Volume{{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "sec2"}}}}
			})}, false, ""},
		{"node writes its mirror pod's status", auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "static-n1", Subresource: "status",
			Old: authzGet(t, st, "pods", "default", "static-n1"), Object: authzGet(t, st, "pods", "default", "static-n1")}, true, ""},

		// What the stored mirror pod names stays out of reach.
		{"secret a mirror pod names", auth.Attributes{Verb: "get", Kind: k("secrets"), Namespace: "kube", Name: "kube-admin"}, false, ""},
		{"configmap a mirror pod names", auth.Attributes{Verb: "get", Kind: k("configmaps"), Namespace: "kube", Name: "kube-cfg"}, false, ""},
		{"claim a mirror pod names", auth.Attributes{Verb: "get", Kind: k("persistentvolumeclaims"), Namespace: "kube", Name: "kube-data"}, false, ""},
		{"volume of a claim a mirror pod names", auth.Attributes{Verb: "get", Kind: k("persistentvolumes"), Name: "pv-kube"}, false, ""},
		{"service account a mirror pod runs as", auth.Attributes{Verb: "get", Kind: k("serviceaccounts"), Namespace: "kube", Name: "admin"}, false, ""},
		{"token of a service account a mirror pod runs as", auth.Attributes{Verb: "create", Kind: k("serviceaccounts"), Namespace: "kube", Name: "admin", Subresource: "token"}, false, ""},
		{"token of the default service account of a mirror pod's namespace", auth.Attributes{Verb: "create", Kind: k("serviceaccounts"), Namespace: "kube2", Name: "default", Subresource: "token"}, false, ""},
		{"default service account of a mirror pod's namespace", auth.Attributes{Verb: "get", Kind: k("serviceaccounts"), Namespace: "kube2", Name: "default"}, false, ""},
	}
	nrCheck(t, p, n1, cases)
}

// TestAuthzNodeRestrictionNodeWrites: a node sets its taints only when it
// creates its Node, and never sets, changes or removes a
// node-restriction.kubernetes.io/ label, a role, or another kubernetes.io
// label outside the kubelet's own, as Kubernetes' NodeRestriction has it.
func TestAuthzNodeRestrictionNodeWrites(t *testing.T) {
	st := authzFixture(t)
	tainted := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", Labels: map[string]string{
		"node-restriction.kubernetes.io/pci": "true", "node-role.kubernetes.io/gpu": "", "disk": "hdd",
	}}, Spec: api.NodeSpec{Taints: []api.Taint{{Key: "dedicated", Value: "db", Effect: api.TaintEffectNoSchedule}}}}
	authTestCreate(t, st, tainted)
	p := auth.NewAuthorizer(st)
	n3 := auth.NodeIdentity("n3")
	nodes := authzKind(t, "nodes")
	stored := authzGet(t, st, "nodes", "", "n3").(*api.Node)
	edit := func(f func(*api.Node)) *api.Node {
		n := stored.DeepCopy()
		f(n)
		return n
	}
	create := func(f func(*api.Node)) auth.Attributes {
		n := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}
		f(n)
		return auth.Attributes{Verb: "create", Kind: nodes, Object: n}
	}
	update := func(verb string, f func(*api.Node)) auth.Attributes {
		return auth.Attributes{Verb: verb, Kind: nodes, Name: "n3", Old: stored, Object: edit(f)}
	}
	cases := []nrCase{
		{"create with taints and the kubelet's labels", create(func(n *api.Node) {
			n.Spec.Taints = []api.Taint{{Key: "x", Effect: api.TaintEffectNoSchedule}}
			n.Labels = map[string]string{api.LabelHostname: "n3", api.LabelOS: "linux", api.LabelTopologyZone: "a", "node.kubernetes.io/instance-type": "m", "disk": "ssd"}
		}), true, ""},
		{"create with a node-restriction label", create(func(n *api.Node) {
			n.Labels = map[string]string{"node-restriction.kubernetes.io/pci": "true"}
		}), false, "node-restriction.kubernetes.io/pci"},
		{"create with a role", create(func(n *api.Node) {
			n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		}), false, "node-role.kubernetes.io/control-plane"},
		{"update its own labels", update("update", func(n *api.Node) { n.Labels["disk"] = "ssd" }), true, ""},
		{"update the kubelet's labels", update("patch", func(n *api.Node) { n.Labels[api.LabelTopologyZone] = "b" }), true, ""},
		{"update leaving restricted labels alone", update("update", func(n *api.Node) { n.Annotations = map[string]string{"a": "b"} }), true, ""},
		{"remove a taint", update("update", func(n *api.Node) { n.Spec.Taints = nil }), false, "taints"},
		{"change a taint", update("patch", func(n *api.Node) { n.Spec.Taints[0].Effect = api.TaintEffectPreferNoSchedule }), false, "taints"},
		{"add a taint", update("update", func(n *api.Node) {
			n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: "y", Effect: api.TaintEffectNoSchedule})
		}), false, "taints"},
		{"add a node-restriction label", update("update", func(n *api.Node) { n.Labels["node-restriction.kubernetes.io/fast"] = "1" }), false, "node-restriction.kubernetes.io/fast"},
		{"remove a node-restriction label", update("update", func(n *api.Node) { delete(n.Labels, "node-restriction.kubernetes.io/pci") }), false, "node-restriction.kubernetes.io/pci"},
		{"add a role", update("patch", func(n *api.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }), false, "node-role.kubernetes.io/control-plane"},
		{"remove a role", update("update", func(n *api.Node) { delete(n.Labels, "node-role.kubernetes.io/gpu") }), false, "node-role.kubernetes.io/gpu"},
		{"set an unknown kubernetes.io label", update("update", func(n *api.Node) { n.Labels["kubernetes.io/trusted"] = "yes" }), false, "kubernetes.io/trusted"},
		{"update without Old filled", auth.Attributes{Verb: "update", Kind: nodes, Name: "n3", Object: edit(func(n *api.Node) { n.Spec.Taints = nil })}, false, "taints"},
		// A status write keeps the stored metadata and spec.
		{"status write", auth.Attributes{Verb: "update", Kind: nodes, Name: "n3", Subresource: "status", Old: stored, Object: stored}, true, ""},
	}
	nrCheck(t, p, n3, cases)
	// The admin sets what it likes.
	admin := auth.AdminIdentity()
	if err := p.Authorize(context.Background(), admin, update("update", func(n *api.Node) {
		n.Spec.Taints = nil
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
	})); err != nil {
		t.Errorf("admin: %v", err)
	}
}

// nrCase is one request of a node, whether it is allowed, and if not what
// the refusal says.
type nrCase struct {
	name  string
	a     auth.Attributes
	allow bool
	why   string
}

func nrCheck(t *testing.T, p auth.Authorizer, id *auth.Identity, cases []nrCase) {
	t.Helper()
	for _, c := range cases {
		err := p.Authorize(context.Background(), id, c.a)
		if c.allow {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, auth.ErrForbidden) {
			t.Errorf("%s: Authorize = %v, want forbidden", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v does not say %q", c.name, err, c.why)
		}
	}
}
