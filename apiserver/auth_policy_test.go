package apiserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

func authzKind(t testing.TB, resource string) *api.Kind {
	t.Helper()
	k, ok := api.LookupResource(resource)
	if !ok {
		t.Fatalf("no kind %q", resource)
	}
	return k
}

// authzFixture fills a store with two nodes and what their pods use:
//
//	n1: pod default/web (sa runner, configmap cfg by volume, secret sec by
//	    env, secret envsec by envFrom, claim data -> pv pv-data), mirror pod
//	    default/static-n1, pod other/job (configmap cfg-other-ns)
//	n2: pod default/db (configmap cfg2, secret sec2, claim data2 -> pv-data2),
//	    mirror pod default/static-n2
//	unbound: pod default/pending (secret pending-sec)
func authzFixture(t testing.TB) *store.Store {
	t.Helper()
	_, clk := tokenTestSigner(t)
	st := authTestStore(t, clk)
	mk := func(obj api.Object) { authTestCreate(t, st, obj) }
	for _, n := range []string{"n1", "n2"} {
		mk(&api.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	web := newAuthTestPod("default", "web", "n1", "runner")
	web.Spec.Volumes = []api.Volume{
		{Name: "cfg", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}}}},
		{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	}
	web.Spec.Containers[0].Env = []api.EnvVar{{Name: "PW", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "sec"}, Key: "pw"}}}}
	web.Spec.InitContainers = []api.Container{{Name: "init", Image: "busybox", EnvFrom: []api.EnvFromSource{{SecretRef: &api.SecretEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "envsec"}}}}}}
	mk(web)

	job := newAuthTestPod("other", "job", "n1", "")
	job.Spec.Containers[0].EnvFrom = []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg-other-ns"}}}}
	mk(job)

	db := newAuthTestPod("default", "db", "n2", "")
	db.Spec.Volumes = []api.Volume{
		{Name: "sec", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "sec2"}}},
		{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data2"}}},
	}
	db.Spec.Containers[0].Env = []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "cfg2"}, Key: "x"}}}}
	mk(db)

	pending := newAuthTestPod("default", "pending", "", "")
	pending.Spec.Volumes = []api.Volume{{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "pending-sec"}}}}
	mk(pending)

	for _, n := range []string{"n1", "n2"} {
		m := newAuthTestPod("default", "static-"+n, n, "")
		m.Annotations = map[string]string{api.AnnotationMirror: "hash"}
		mk(m)
	}
	for _, c := range []struct{ claim, pv string }{{"data", "pv-data"}, {"data2", "pv-data2"}} {
		mk(&api.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: c.claim}, Spec: api.PersistentVolumeClaimSpec{VolumeName: c.pv}})
		mk(&api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: c.pv}})
	}
	// An unclaimed volume and a claim no pod uses.
	mk(&api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-free"}})
	mk(&api.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unused"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "pv-free"}})
	for _, h := range []string{"n1", "n2"} {
		mk(&api.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ev-" + h}, Source: api.EventSource{Component: "berth-agent", Host: h}})
	}
	return st
}

func authzGet(t testing.TB, st *store.Store, resource, ns, name string) api.Object {
	t.Helper()
	obj, err := st.Get(authzKind(t, resource), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// authzPodEdit is the stored pod with a change applied, as an update would
// carry it.
func authzPodEdit(t testing.TB, st *store.Store, ns, name string, edit func(*api.Pod)) api.Object {
	t.Helper()
	p := authzGet(t, st, "pods", ns, name).DeepCopyObject().(*api.Pod)
	edit(p)
	return p
}

func TestAuthzPolicy(t *testing.T) {
	st := authzFixture(t)
	grantView(t, st, "default", "runner")
	p := auth.NewAuthorizer(st)

	n1 := auth.NodeIdentity("n1")
	sa := auth.ServiceAccountIdentity("default", "runner")
	admin := auth.AdminIdentity()

	k := func(r string) *api.Kind { return authzKind(t, r) }
	sel := func(s string) fields.Selector { return fields.ParseSelectorOrDie(s) }
	old := func(r, ns, name string) api.Object { return authzGet(t, st, r, ns, name) }
	lease := func(ns, name string) api.Object {
		return &api.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: api.LeaseSpec{HolderIdentity: &name}}
	}
	mirror := func(name, node string) *api.Pod {
		m := newAuthTestPod("default", name, node, "")
		m.Annotations = map[string]string{api.AnnotationMirror: "hash"}
		return m
	}

	type tc struct {
		name  string
		id    *auth.Identity
		a     auth.Attributes
		allow bool
	}
	cases := []tc{
		// Admin: everything.
		{"admin deletes a namespace", admin, auth.Attributes{Verb: "delete", Kind: k("namespaces"), Name: "default"}, true},
		{"admin lists pods everywhere", admin, auth.Attributes{Verb: "list", Kind: k("pods")}, true},
		{"admin writes a source", admin, auth.Attributes{Verb: "create", Kind: k("sources"), Name: "fleet"}, true},

		// Node: its own Node object.
		{"node creates its Node", n1, auth.Attributes{Verb: "create", Kind: k("nodes"), Object: &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, true},
		{"node updates its Node status", n1, auth.Attributes{Verb: "update", Kind: k("nodes"), Name: "n1", Subresource: "status", Object: old("nodes", "", "n1"), Old: old("nodes", "", "n1")}, true},
		{"node patches its Node", n1, auth.Attributes{Verb: "patch", Kind: k("nodes"), Name: "n1", Object: old("nodes", "", "n1"), Old: old("nodes", "", "n1")}, true},
		{"node gets another Node", n1, auth.Attributes{Verb: "get", Kind: k("nodes"), Name: "n2", Old: old("nodes", "", "n2")}, true},
		{"node lists Nodes", n1, auth.Attributes{Verb: "list", Kind: k("nodes")}, true},
		{"node watches Nodes", n1, auth.Attributes{Verb: "watch", Kind: k("nodes")}, true},
		{"node creates another Node", n1, auth.Attributes{Verb: "create", Kind: k("nodes"), Object: &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}}, false},
		{"node updates another Node's status", n1, auth.Attributes{Verb: "update", Kind: k("nodes"), Name: "n2", Subresource: "status", Object: old("nodes", "", "n2"), Old: old("nodes", "", "n2")}, false},
		{"node renames itself in the body", n1, auth.Attributes{Verb: "update", Kind: k("nodes"), Name: "n1", Object: old("nodes", "", "n2")}, false},
		{"node deletes another Node", n1, auth.Attributes{Verb: "delete", Kind: k("nodes"), Name: "n2"}, false},
		{"node creates its Lease", n1, auth.Attributes{Verb: "create", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Object: lease(api.NamespaceNodeLease, "n1")}, true},
		{"node gets its Lease", n1, auth.Attributes{Verb: "get", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Name: "n1"}, true},
		{"node renews its Lease", n1, auth.Attributes{Verb: "update", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Name: "n1", Object: lease(api.NamespaceNodeLease, "n1"), Old: lease(api.NamespaceNodeLease, "n1")}, true},
		{"node deletes its Lease", n1, auth.Attributes{Verb: "delete", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Name: "n1"}, true},
		{"node renews another node's Lease", n1, auth.Attributes{Verb: "update", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Name: "n2", Object: lease(api.NamespaceNodeLease, "n2"), Old: lease(api.NamespaceNodeLease, "n2")}, false},
		{"node renames its Lease in the body", n1, auth.Attributes{Verb: "update", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Name: "n1", Object: lease(api.NamespaceNodeLease, "n2")}, false},
		{"node creates a Lease elsewhere", n1, auth.Attributes{Verb: "create", Kind: k("leases"), Namespace: "default", Object: lease("default", "n1")}, false},
		{"node gets another node's Lease", n1, auth.Attributes{Verb: "get", Kind: k("leases"), Namespace: api.NamespaceNodeLease, Name: "n2"}, false},
		{"node lists Leases", n1, auth.Attributes{Verb: "list", Kind: k("leases"), Namespace: api.NamespaceNodeLease}, false},
		{"node watches Leases", n1, auth.Attributes{Verb: "watch", Kind: k("leases"), Namespace: api.NamespaceNodeLease}, false},

		// Node: pods bound to it.
		{"node gets its pod", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Old: old("pods", "default", "web")}, true},
		{"node gets its pod, Old not filled", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web"}, true},
		{"node gets a missing pod (404 follows)", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "ghost"}, true},
		{"node evicts its pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "eviction", Old: old("pods", "default", "web")}, true},
		{"node evicts another node's pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "db", Subresource: "eviction", Old: old("pods", "default", "db")}, false},
		{"node evicts another node's pod, unread", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "db", Subresource: "eviction"}, false},
		{"node evicts a pod that does not exist", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "nope", Subresource: "eviction"}, true},
		{"node gets an eviction", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "eviction", Old: old("pods", "default", "web")}, false},
		{"service account evicts", sa, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "eviction", Old: old("pods", "default", "web")}, false},
		{"service account reads budgets", sa, auth.Attributes{Verb: "list", Kind: k("poddisruptionbudgets"), Namespace: "default"}, true},
		{"service account writes a budget's status", sa, auth.Attributes{Verb: "update", Kind: k("poddisruptionbudgets"), Namespace: "default", Name: "web", Subresource: "status"}, false},
		{"node reads budgets", n1, auth.Attributes{Verb: "list", Kind: k("poddisruptionbudgets"), Namespace: "default"}, false},
		{"admin evicts", admin, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "db", Subresource: "eviction"}, true},
		{"node gets another node's pod", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "db", Old: old("pods", "default", "db")}, false},
		{"node gets another node's pod, Old not filled", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "db"}, false},
		{"node gets an unbound pod", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "pending"}, false},
		{"node lists its pods by field selector", n1, auth.Attributes{Verb: "list", Kind: k("pods"), FieldSelector: sel("spec.nodeName=n1")}, true},
		{"node watches its pods in a namespace", n1, auth.Attributes{Verb: "watch", Kind: k("pods"), Namespace: "default", FieldSelector: sel("spec.nodeName=n1,status.phase=Running")}, true},
		{"node lists pods without selector", n1, auth.Attributes{Verb: "list", Kind: k("pods")}, true},
		{"node lists pods with an empty selector", n1, auth.Attributes{Verb: "list", Kind: k("pods"), FieldSelector: fields.Everything()}, true},
		{"node watches another node's pods", n1, auth.Attributes{Verb: "watch", Kind: k("pods"), FieldSelector: sel("spec.nodeName=n2")}, true},
		{"node lists pods not on it", n1, auth.Attributes{Verb: "list", Kind: k("pods"), FieldSelector: sel("spec.nodeName!=n1")}, true},
		{"node lists unbound pods", n1, auth.Attributes{Verb: "list", Kind: k("pods"), FieldSelector: sel("spec.nodeName=")}, true},
		{"node lists pods' logs", n1, auth.Attributes{Verb: "list", Kind: k("pods"), Subresource: "log"}, false},
		{"node updates its pod's status", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "status",
			Old: old("pods", "default", "web"), Object: authzPodEdit(t, st, "default", "web", func(p *api.Pod) { p.Status.Phase = api.PodRunning })}, true},
		{"node patches its pod's status", n1, auth.Attributes{Verb: "patch", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "status",
			Old: old("pods", "default", "web"), Object: old("pods", "default", "web")}, true},
		{"node updates another node's pod status", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "db", Subresource: "status",
			Old: old("pods", "default", "db"), Object: old("pods", "default", "db")}, false},
		{"node status write moving a pod to itself", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "db", Subresource: "status",
			Old: old("pods", "default", "db"), Object: authzPodEdit(t, st, "default", "db", func(p *api.Pod) { p.Spec.NodeName = "n1" })}, false},
		{"node updates its (non-mirror) pod's spec", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "web",
			Old: old("pods", "default", "web"), Object: old("pods", "default", "web")}, false},
		{"node deletes its pod", n1, auth.Attributes{Verb: "delete", Kind: k("pods"), Namespace: "default", Name: "web", Old: old("pods", "default", "web")}, true},
		{"node deletes another node's pod", n1, auth.Attributes{Verb: "delete", Kind: k("pods"), Namespace: "default", Name: "db", Old: old("pods", "default", "db")}, false},
		{"node deletes another node's pod, Old not filled", n1, auth.Attributes{Verb: "delete", Kind: k("pods"), Namespace: "default", Name: "db"}, false},
		{"node reads pod logs", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "log", Old: old("pods", "default", "web")}, false},
		{"node execs in its pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "exec", Old: old("pods", "default", "web")}, false},

		// Node: mirror pods.
		{"node creates its mirror pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Object: nrMirror(t, st, "default", "etcd-n1", "n1")}, true},
		{"node creates a mirror pod for another node", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Object: mirror("etcd-n2", "n2")}, false},
		{"node creates an ordinary pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Object: newAuthTestPod("default", "x", "n1", "")}, false},
		{"node creates an unbound mirror pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Object: mirror("x", "")}, false},
		// A static pod's new spec is a new mirror pod: nodes change none.
		{"node updates its mirror pod", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "static-n1",
			Old: old("pods", "default", "static-n1"), Object: old("pods", "default", "static-n1")}, false},
		{"node updates another node's mirror pod", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "static-n2",
			Old: old("pods", "default", "static-n2"), Object: old("pods", "default", "static-n2")}, false},
		{"node turns its pod into a mirror pod", n1, auth.Attributes{Verb: "update", Kind: k("pods"), Namespace: "default", Name: "web",
			Old: old("pods", "default", "web"), Object: authzPodEdit(t, st, "default", "web", func(p *api.Pod) { p.Annotations = map[string]string{api.AnnotationMirror: "x"} })}, false},
		{"node deletes its mirror pod", n1, auth.Attributes{Verb: "delete", Kind: k("pods"), Namespace: "default", Name: "static-n1", Old: old("pods", "default", "static-n1")}, true},

		// Node: what its pods reference.
		{"node gets a configmap its pod mounts", n1, auth.Attributes{Verb: "get", Kind: k("configmaps"), Namespace: "default", Name: "cfg"}, true},
		{"node gets a secret its pod's env uses", n1, auth.Attributes{Verb: "get", Kind: k("secrets"), Namespace: "default", Name: "sec"}, true},
		{"node gets a secret its init container's envFrom uses", n1, auth.Attributes{Verb: "get", Kind: k("secrets"), Namespace: "default", Name: "envsec"}, true},
		{"node gets a configmap by envFrom in another ns", n1, auth.Attributes{Verb: "get", Kind: k("configmaps"), Namespace: "other", Name: "cfg-other-ns"}, true},
		{"node gets its pod's claim", n1, auth.Attributes{Verb: "get", Kind: k("persistentvolumeclaims"), Namespace: "default", Name: "data"}, true},
		{"node gets the volume bound to its pod's claim", n1, auth.Attributes{Verb: "get", Kind: k("persistentvolumes"), Name: "pv-data"}, true},
		{"node gets its pod's service account", n1, auth.Attributes{Verb: "get", Kind: k("serviceaccounts"), Namespace: "default", Name: "runner"}, true},
		{"node gets default service account of its pod", n1, auth.Attributes{Verb: "get", Kind: k("serviceaccounts"), Namespace: "other", Name: "default"}, true},
		{"node creates a token for its pod's service account", n1, auth.Attributes{Verb: "create", Kind: k("serviceaccounts"), Namespace: "default", Name: "runner", Subresource: "token"}, true},
		{"node watches a referenced secret by name", n1, auth.Attributes{Verb: "watch", Kind: k("secrets"), Namespace: "default", FieldSelector: sel("metadata.name=sec")}, true},
		{"node gets another node's secret", n1, auth.Attributes{Verb: "get", Kind: k("secrets"), Namespace: "default", Name: "sec2"}, false},
		{"node gets another node's configmap", n1, auth.Attributes{Verb: "get", Kind: k("configmaps"), Namespace: "default", Name: "cfg2"}, false},
		{"node gets a configmap of the right name in the wrong ns", n1, auth.Attributes{Verb: "get", Kind: k("configmaps"), Namespace: "other", Name: "cfg"}, false},
		{"node gets an unbound pod's secret", n1, auth.Attributes{Verb: "get", Kind: k("secrets"), Namespace: "default", Name: "pending-sec"}, false},
		{"node gets another node's claim", n1, auth.Attributes{Verb: "get", Kind: k("persistentvolumeclaims"), Namespace: "default", Name: "data2"}, false},
		{"node gets another node's volume", n1, auth.Attributes{Verb: "get", Kind: k("persistentvolumes"), Name: "pv-data2"}, false},
		{"node gets an unused volume", n1, auth.Attributes{Verb: "get", Kind: k("persistentvolumes"), Name: "pv-free"}, false},
		{"node gets another service account", n1, auth.Attributes{Verb: "get", Kind: k("serviceaccounts"), Namespace: "default", Name: "builder"}, false},
		{"node creates a token for another service account", n1, auth.Attributes{Verb: "create", Kind: k("serviceaccounts"), Namespace: "kube", Name: "admin", Subresource: "token"}, false},
		{"node lists secrets", n1, auth.Attributes{Verb: "list", Kind: k("secrets"), Namespace: "default"}, false},
		{"node watches an unreferenced secret by name", n1, auth.Attributes{Verb: "watch", Kind: k("secrets"), Namespace: "default", FieldSelector: sel("metadata.name=sec2")}, false},
		{"node updates a referenced secret", n1, auth.Attributes{Verb: "update", Kind: k("secrets"), Namespace: "default", Name: "sec"}, false},
		{"node deletes a referenced configmap", n1, auth.Attributes{Verb: "delete", Kind: k("configmaps"), Namespace: "default", Name: "cfg"}, false},

		// Node: events.
		{"node creates an event", n1, auth.Attributes{Verb: "create", Kind: k("events"), Namespace: "default", Object: &api.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}}, true},
		{"node patches its event", n1, auth.Attributes{Verb: "patch", Kind: k("events"), Namespace: "default", Name: "ev-n1"}, true},
		{"node patches another node's event", n1, auth.Attributes{Verb: "patch", Kind: k("events"), Namespace: "default", Name: "ev-n2"}, false},
		{"node lists events", n1, auth.Attributes{Verb: "list", Kind: k("events"), Namespace: "default"}, false},

		// Node: nothing else.
		{"node reads a deployment", n1, auth.Attributes{Verb: "get", Kind: k("deployments"), Namespace: "default", Name: "web"}, false},
		// Its service proxy reads Services, EndpointSlices, Namespaces and
		// NetworkPolicies, and writes none of them.
		{"node lists services", n1, auth.Attributes{Verb: "list", Kind: k("services")}, true},
		{"node updates a service", n1, auth.Attributes{Verb: "update", Kind: k("services"), Namespace: "default", Name: "web"}, false},
		{"node writes a service's status", n1, auth.Attributes{Verb: "update", Kind: k("services"), Namespace: "default", Name: "web", Subresource: "status"}, false},
		{"node lists endpoints", n1, auth.Attributes{Verb: "list", Kind: k("endpoints"), Namespace: "default"}, false},
		{"node lists endpointslices", n1, auth.Attributes{Verb: "list", Kind: k("endpointslices"), Namespace: "default"}, true},
		{"node gets an endpointslice", n1, auth.Attributes{Verb: "get", Kind: k("endpointslices"), Namespace: "default", Name: "web-abcde"}, true},
		{"node watches namespaces", n1, auth.Attributes{Verb: "watch", Kind: k("namespaces")}, true},
		{"node watches networkpolicies", n1, auth.Attributes{Verb: "watch", Kind: k("networkpolicies")}, true},
		{"node deletes a networkpolicy", n1, auth.Attributes{Verb: "delete", Kind: k("networkpolicies"), Namespace: "default", Name: "deny"}, false},
		{"node creates a namespace", n1, auth.Attributes{Verb: "create", Kind: k("namespaces"), Name: "x"}, false},
		{"node non-resource request", n1, auth.Attributes{Verb: "get"}, false},

		// Service account: reads in its own namespace.
		{"sa gets a pod in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web"}, true},
		{"sa execs in a pod of its namespace", sa, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "exec"}, false},
		// Kubernetes' view role, a namespace reader's, leaves the connect
		// subresources out: asked with get, as kubectl auth can-i may,
		// they are refused as the real request (authorized as create) is.
		{"sa gets pods/exec in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "exec"}, false},
		{"sa gets pods/attach in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "attach"}, false},
		{"sa gets pods/portforward in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "portforward"}, false},
		{"sa gets pods/log in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "log"}, true},
		{"admin attaches to a pod", admin, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "attach"}, true},
		{"node attaches to its pod", n1, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "attach", Old: old("pods", "default", "web")}, false},
		{"sa gets pods/proxy in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "proxy"}, false},
		{"sa gets services/proxy in its namespace", sa, auth.Attributes{Verb: "get", Kind: k("services"), Namespace: "default", Name: "web", Subresource: "proxy"}, false},
		{"node gets pods/proxy of its own pod", n1, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web", Subresource: "proxy", Old: old("pods", "default", "web")}, false},
		{"admin posts through services/proxy", admin, auth.Attributes{Verb: "create", Kind: k("services"), Namespace: "default", Name: "web", Subresource: "proxy"}, true},
		{"sa lists configmaps in its namespace", sa, auth.Attributes{Verb: "list", Kind: k("configmaps"), Namespace: "default"}, true},
		{"sa watches services in its namespace", sa, auth.Attributes{Verb: "watch", Kind: k("services"), Namespace: "default"}, true},
		{"sa lists endpointslices in its namespace", sa, auth.Attributes{Verb: "list", Kind: k("endpointslices"), Namespace: "default"}, true},
		{"sa lists endpointslices elsewhere", sa, auth.Attributes{Verb: "list", Kind: k("endpointslices"), Namespace: "other"}, false},
		{"sa creates an endpointslice", sa, auth.Attributes{Verb: "create", Kind: k("endpointslices"), Namespace: "default"}, false},
		{"sa lists deployments in its namespace", sa, auth.Attributes{Verb: "list", Kind: k("deployments"), Namespace: "default"}, true},
		{"sa gets a pod elsewhere", sa, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "other", Name: "job"}, false},
		{"sa lists pods in all namespaces", sa, auth.Attributes{Verb: "list", Kind: k("pods")}, false},
		{"sa lists nodes", sa, auth.Attributes{Verb: "list", Kind: k("nodes")}, false},
		{"sa gets its namespace object", sa, auth.Attributes{Verb: "get", Kind: k("namespaces"), Name: "default"}, false},
		{"sa creates a pod in its namespace", sa, auth.Attributes{Verb: "create", Kind: k("pods"), Namespace: "default", Object: newAuthTestPod("default", "x", "", "")}, false},
		{"sa deletes a pod in its namespace", sa, auth.Attributes{Verb: "delete", Kind: k("pods"), Namespace: "default", Name: "web"}, false},
		{"sa patches a configmap", sa, auth.Attributes{Verb: "patch", Kind: k("configmaps"), Namespace: "default", Name: "cfg"}, false},
		{"sa non-resource request", sa, auth.Attributes{Verb: "get"}, false},

		// Nobody.
		{"nil identity", nil, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web"}, false},
		{"unknown identity kind", &auth.Identity{Name: "x", Kind: "robot"}, auth.Attributes{Verb: "get", Kind: k("pods"), Namespace: "default", Name: "web"}, false},
	}
	for _, c := range cases {
		err := p.Authorize(context.Background(), c.id, c.a)
		if c.allow {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		var fe *auth.ForbiddenError
		if !errors.As(err, &fe) || !errors.Is(err, auth.ErrForbidden) {
			t.Errorf("%s: Authorize = %v, want *ForbiddenError", c.name, err)
			continue
		}
		if c.id != nil && !strings.Contains(err.Error(), `User "`+c.id.Name+`" cannot `+c.a.Verb) {
			t.Errorf("%s: message %q does not name the user and verb", c.name, err)
		}
	}
}

func TestAuthzForbiddenMessage(t *testing.T) {
	n1 := auth.NodeIdentity("n1")
	pods := authzKind(t, "pods")
	cases := []struct {
		err  *auth.ForbiddenError
		want string
	}{
		{auth.Forbidden(n1, auth.Attributes{Verb: "update", Kind: pods, Namespace: "default", Name: "web"}, ""),
			`pods "web" is forbidden: User "system:node:n1" cannot update resource "pods" in API group "" in the namespace "default"`},
		{auth.Forbidden(n1, auth.Attributes{Verb: "update", Kind: pods, Namespace: "default", Name: "web", Subresource: "status"}, "pod is not bound to node \"n1\""),
			`pods "web" is forbidden: User "system:node:n1" cannot update resource "pods/status" in API group "" in the namespace "default": pod is not bound to node "n1"`},
		{auth.Forbidden(n1, auth.Attributes{Verb: "list", Kind: authzKind(t, "deployments"), Namespace: "default"}, ""),
			`deployments.apps is forbidden: User "system:node:n1" cannot list resource "deployments" in API group "apps" in the namespace "default"`},
		{auth.Forbidden(auth.ServiceAccountIdentity("default", "runner"), auth.Attributes{Verb: "delete", Kind: authzKind(t, "nodes"), Name: "n2"}, ""),
			`nodes "n2" is forbidden: User "system:serviceaccount:default:runner" cannot delete resource "nodes" in API group "" at the cluster scope`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestAuthzMirrorPodGuard(t *testing.T) {
	pods := authzKind(t, "pods")
	mirror := func(node string) *api.Pod {
		m := newAuthTestPod("default", "static-"+node, node, "")
		m.Annotations = map[string]string{api.AnnotationMirror: "hash"}
		return m
	}
	plain := newAuthTestPod("default", "web", "n1", "")
	n1, n2, admin := auth.NodeIdentity("n1"), auth.NodeIdentity("n2"), auth.AdminIdentity()
	cases := []struct {
		name  string
		id    *auth.Identity
		a     auth.Attributes
		allow bool
	}{
		{"node creates its mirror pod", n1, auth.Attributes{Verb: "create", Kind: pods, Object: mirror("n1")}, true},
		{"node updates its mirror pod", n1, auth.Attributes{Verb: "update", Kind: pods, Old: mirror("n1"), Object: mirror("n1")}, true},
		{"admin creates a mirror pod", admin, auth.Attributes{Verb: "create", Kind: pods, Object: mirror("n1")}, false},
		{"admin updates a mirror pod", admin, auth.Attributes{Verb: "update", Kind: pods, Old: mirror("n1"), Object: mirror("n1")}, false},
		{"admin patches a mirror pod's status", admin, auth.Attributes{Verb: "patch", Kind: pods, Subresource: "status", Old: mirror("n1"), Object: mirror("n1")}, false},
		{"admin strips the mirror annotation", admin, auth.Attributes{Verb: "update", Kind: pods, Old: mirror("n1"), Object: plain}, false},
		{"admin marks a pod as mirror", admin, auth.Attributes{Verb: "update", Kind: pods, Old: plain, Object: mirror("n1")}, false},
		{"other node updates a mirror pod", n2, auth.Attributes{Verb: "update", Kind: pods, Old: mirror("n1"), Object: mirror("n1")}, false},
		{"node moves its mirror pod away", n1, auth.Attributes{Verb: "update", Kind: pods, Old: mirror("n1"), Object: mirror("n2")}, false},
		{"admin deletes a mirror pod", admin, auth.Attributes{Verb: "delete", Kind: pods, Old: mirror("n1")}, true},
		{"admin updates a plain pod", admin, auth.Attributes{Verb: "update", Kind: pods, Old: plain, Object: plain}, true},
		{"not a pod", admin, auth.Attributes{Verb: "update", Kind: authzKind(t, "configmaps")}, true},
		{"nil identity on a mirror pod", nil, auth.Attributes{Verb: "create", Kind: pods, Object: mirror("n1")}, false},
	}
	for _, c := range cases {
		err := auth.MirrorPodGuard(context.Background(), c.id, c.a)
		if (err == nil) != c.allow {
			t.Errorf("%s: MirrorPodGuard = %v, allow %v", c.name, err, c.allow)
		}
		if err != nil && !errors.Is(err, auth.ErrForbidden) {
			t.Errorf("%s: %v is not ErrForbidden", c.name, err)
		}
	}
}

// TestAuthzNodeCredentialEndToEnd goes from a join-issued credential through
// the authenticator to the authorizer: the node's credential used on
// another node's pod is refused.
func TestAuthzNodeCredentialEndToEnd(t *testing.T) {
	s := newAuthTestSetup(t)
	authTestCreate(t, s.st, newAuthTestPod("default", "db", "n2", ""))
	cred, err := s.signer.IssueNodeCredential("n1")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.authn.Authenticate(context.Background(), cred)
	if err != nil {
		t.Fatal(err)
	}
	p := auth.NewAuthorizer(s.st)
	pods := authzKind(t, "pods")
	status := func(name string) auth.Attributes {
		return auth.Attributes{Verb: "update", Kind: pods, Namespace: "default", Name: name, Subresource: "status",
			Old: authzGet(t, s.st, "pods", "default", name), Object: authzGet(t, s.st, "pods", "default", name)}
	}
	if err := p.Authorize(context.Background(), id, status("web")); err != nil {
		t.Errorf("own pod: %v", err)
	}
	err = p.Authorize(context.Background(), id, status("db"))
	want := `pods "db" is forbidden: User "system:node:n1" cannot update resource "pods/status" in API group "" in the namespace "default"`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("other node's pod: %v", err)
	}
}
