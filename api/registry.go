package api

import (
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind describes one kind berth serves: how manifests name it, how the API
// and the CLI name its resource, and how to make an empty one.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type Kind struct {
	// GVK is the group, version and kind of the type.
	GVK schema.GroupVersionKind
	// Resource is the plural resource name used in API paths.
	Resource string
	// Singular is the lower-case singular name the CLI accepts.
	Singular string
	// ShortNames are the abbreviations the CLI accepts (po, svc, …).
	ShortNames []string
	// Namespaced says whether objects of the kind live in a namespace.
	Namespaced bool
	// HasStatus says whether the kind has a status subresource.
	HasStatus bool
	// Categories are the groups of resources a user may name at once, as
	// Kubernetes' discovery gives them: "all" is what `get all` shows.
	Categories []string
	// Generation says whether metadata.generation counts the changes to
	// the spec, as Kubernetes counts them for the kinds whose controllers
	// report an observedGeneration (pods too). Other kinds, a Lease
	// renewed every ten seconds among them, carry none.
	Generation bool
	// Custom marks a kind a CustomResourceDefinition defines: its objects
	// are *unstructured.Unstructured, kept in the store's table of custom
	// objects.
	Custom bool
	// Versions are the versions a custom kind is served in; GVK holds
	// the one the store keeps.
	Versions []string
	// CRD is the CustomResourceDefinition of a custom kind, as stored
	// when the kind was registered (shared: read it, never change it).
	CRD *CustomResourceDefinition

	typ reflect.Type
	// replaced is closed once a custom kind is replaced (see Replaced).
	replaced chan struct{}
}

// APIVersion returns the kind's apiVersion as manifests spell it.
func (k *Kind) APIVersion() string { return k.GVK.GroupVersion().String() }

// GroupResource returns the resource qualified by its group, as
// "deployments.apps" or "pods".
func (k *Kind) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
}

// New returns a new empty object of the kind with its TypeMeta set.
func (k *Kind) New() Object {
	obj := reflect.New(k.typ).Interface().(Object)
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	return obj
}

// String returns the kind's name, as "Deployment".
func (k *Kind) String() string { return k.GVK.Kind }

var (
	kinds      []*Kind
	byGVK      = map[schema.GroupVersionKind]*Kind{}
	byType     = map[reflect.Type]*Kind{}
	byName     = map[string]*Kind{}
	byKindName = map[string]*Kind{}
)

func register(obj Object, gv schema.GroupVersion, resource, singular string, namespaced, hasStatus bool, shortNames ...string) {
	t := reflect.TypeOf(obj).Elem()
	k := &Kind{
		GVK:        gv.WithKind(t.Name()),
		Resource:   resource,
		Singular:   singular,
		ShortNames: shortNames,
		Namespaced: namespaced,
		HasStatus:  hasStatus,
		typ:        t,
	}
	kinds = append(kinds, k)
	byGVK[k.GVK] = k
	byType[t] = k
	for _, n := range append([]string{resource, singular}, shortNames...) {
		byName[n] = k
		if gv.Group != "" {
			byName[n+"."+gv.Group] = k
		}
	}
	byKindName[t.Name()] = k
}

// Group versions berth serves.
var (
	CoreV1    = schema.GroupVersion{Version: "v1"}
	AppsV1    = schema.GroupVersion{Group: "apps", Version: "v1"}
	StorageV1 = schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}
	// CoordinationV1 serves Lease, the node heartbeat.
	CoordinationV1 = schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}
	// DiscoveryV1 serves EndpointSlice, the endpoints of services as
	// Kubernetes' readers look for them.
	DiscoveryV1 = schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}
	// PolicyV1 serves PodDisruptionBudget, and the Eviction a pod's
	// eviction subresource takes.
	PolicyV1 = schema.GroupVersion{Group: "policy", Version: "v1"}
	// PolicyV1Beta1 is the older version an Eviction may still come in.
	PolicyV1Beta1 = schema.GroupVersion{Group: "policy", Version: "v1beta1"}
	// BatchV1 serves Job and CronJob.
	BatchV1 = schema.GroupVersion{Group: "batch", Version: "v1"}
	// AutoscalingV2 serves HorizontalPodAutoscaler.
	AutoscalingV2 = schema.GroupVersion{Group: "autoscaling", Version: "v2"}
	BerthV1       = schema.GroupVersion{Group: "berth.dev", Version: "v1"}
	// NetworkingV1 serves NetworkPolicy, Ingress and IngressClass.
	NetworkingV1 = schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}
	// SchedulingV1 serves PriorityClass.
	SchedulingV1 = schema.GroupVersion{Group: "scheduling.k8s.io", Version: "v1"}
	// RBACV1 serves Role, ClusterRole and their bindings.
	RBACV1 = schema.GroupVersion{Group: RBACGroup, Version: "v1"}
)

func init() {
	register(&Namespace{}, CoreV1, "namespaces", "namespace", false, true, "ns")
	register(&Node{}, CoreV1, "nodes", "node", false, true, "no")
	register(&Pod{}, CoreV1, "pods", "pod", true, true, "po")
	register(&Service{}, CoreV1, "services", "service", true, true, "svc")
	register(&Endpoints{}, CoreV1, "endpoints", "endpoints", true, false, "ep")
	register(&ReplicationController{}, CoreV1, "replicationcontrollers", "replicationcontroller", true, true, "rc")
	register(&PersistentVolume{}, CoreV1, "persistentvolumes", "persistentvolume", false, true, "pv")
	register(&PersistentVolumeClaim{}, CoreV1, "persistentvolumeclaims", "persistentvolumeclaim", true, true, "pvc")
	register(&ServiceAccount{}, CoreV1, "serviceaccounts", "serviceaccount", true, false, "sa")
	register(&Secret{}, CoreV1, "secrets", "secret", true, false)
	register(&ConfigMap{}, CoreV1, "configmaps", "configmap", true, false, "cm")
	register(&ResourceQuota{}, CoreV1, "resourcequotas", "resourcequota", true, true, "quota")
	register(&LimitRange{}, CoreV1, "limitranges", "limitrange", true, false, "limits")
	register(&Event{}, CoreV1, "events", "event", true, false, "ev")
	register(&ReplicaSet{}, AppsV1, "replicasets", "replicaset", true, true, "rs")
	register(&Deployment{}, AppsV1, "deployments", "deployment", true, true, "deploy")
	register(&StatefulSet{}, AppsV1, "statefulsets", "statefulset", true, true, "sts")
	register(&DaemonSet{}, AppsV1, "daemonsets", "daemonset", true, true, "ds")
	register(&ControllerRevision{}, AppsV1, "controllerrevisions", "controllerrevision", true, false)
	register(&StorageClass{}, StorageV1, "storageclasses", "storageclass", false, false, "sc")
	register(&PriorityClass{}, SchedulingV1, "priorityclasses", "priorityclass", false, false, "pc")
	register(&Lease{}, CoordinationV1, "leases", "lease", true, false)
	register(&EndpointSlice{}, DiscoveryV1, "endpointslices", "endpointslice", true, false)
	register(&PodDisruptionBudget{}, PolicyV1, "poddisruptionbudgets", "poddisruptionbudget", true, true, "pdb")
	register(&NetworkPolicy{}, NetworkingV1, "networkpolicies", "networkpolicy", true, false, "netpol")
	register(&Ingress{}, NetworkingV1, "ingresses", "ingress", true, true, "ing")
	register(&IngressClass{}, NetworkingV1, "ingressclasses", "ingressclass", false, false)
	register(&Job{}, BatchV1, "jobs", "job", true, true)
	register(&CronJob{}, BatchV1, "cronjobs", "cronjob", true, true, "cj")
	register(&HorizontalPodAutoscaler{}, AutoscalingV2, "horizontalpodautoscalers", "horizontalpodautoscaler", true, true, "hpa")
	register(&Source{}, BerthV1, "sources", "source", false, true, "src")
	register(&Alert{}, BerthV1, "alerts", "alert", false, true)
	register(&Role{}, RBACV1, "roles", "role", true, false)
	register(&ClusterRole{}, RBACV1, "clusterroles", "clusterrole", false, false)
	register(&RoleBinding{}, RBACV1, "rolebindings", "rolebinding", true, false)
	register(&ClusterRoleBinding{}, RBACV1, "clusterrolebindings", "clusterrolebinding", false, false)
	register(&ValidatingWebhookConfiguration{}, AdmissionRegistrationV1, "validatingwebhookconfigurations", "validatingwebhookconfiguration", false, false)
	register(&MutatingWebhookConfiguration{}, AdmissionRegistrationV1, "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", false, false)
	register(&ValidatingAdmissionPolicy{}, AdmissionRegistrationV1, "validatingadmissionpolicies", "validatingadmissionpolicy", false, true)
	register(&ValidatingAdmissionPolicyBinding{}, AdmissionRegistrationV1, "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", false, false)
	register(&CustomResourceDefinition{}, ApiextensionsV1, "customresourcedefinitions", "customresourcedefinition", false, true, "crd", "crds")
	for _, obj := range []Object{&Pod{}, &ReplicationController{}, &ReplicaSet{}, &Deployment{}, &StatefulSet{}, &DaemonSet{}, &PodDisruptionBudget{}, &Job{}, &CronJob{}, &HorizontalPodAutoscaler{}, &Source{}, &Alert{}} {
		KindOf(obj).Generation = true
	}
	// In the order kubectl lists them.
	for _, obj := range []Object{&Pod{}, &ReplicationController{}, &Service{}, &DaemonSet{}, &Deployment{}, &ReplicaSet{}, &StatefulSet{}, &HorizontalPodAutoscaler{}, &CronJob{}, &Job{}} {
		k := KindOf(obj)
		k.Categories = append(k.Categories, CategoryAll)
		categories[CategoryAll] = append(categories[CategoryAll], k)
	}
}

// CategoryAll is the category of the kinds `get all` lists, as in
// Kubernetes: the workloads and the services in front of them.
const CategoryAll = "all"

// categories holds the kinds of each category, in the order kubectl
// lists them.
var categories = map[string][]*Kind{}

// KindsInCategory returns the kinds of a category (none for a name that
// is not one).
func KindsInCategory(category string) []*Kind { return categories[category] }

// Kinds returns every registered kind in a stable order.
func Kinds() []*Kind { return kinds }

// KindFor returns the kind of a GroupVersionKind.
func KindFor(gvk schema.GroupVersionKind) (*Kind, bool) {
	if k, ok := byGVK[gvk]; ok {
		return k, true
	}
	return customKindFor(gvk)
}

// KindOf returns the kind of a Go object: for a custom resource, the
// kind registered for its apiVersion and kind.
func KindOf(obj Object) *Kind {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		k, _ := customKindFor(u.GroupVersionKind())
		return k
	}
	return byType[reflect.TypeOf(obj).Elem()]
}

// KindNamed returns the kind whose Kind field is name, as "Deployment".
func KindNamed(name string) (*Kind, bool) {
	if k, ok := byKindName[name]; ok {
		return k, true
	}
	return customKindNamed(name)
}

// LookupResource finds a kind by any name a user may type: plural,
// singular, short name, kind (any case) or group-qualified plural.
func LookupResource(name string) (*Kind, bool) {
	n := strings.ToLower(name)
	if k, ok := byName[n]; ok {
		return k, true
	}
	for kn, k := range byKindName {
		if strings.EqualFold(kn, n) {
			return k, true
		}
	}
	return lookupCustom(n)
}

// ResourceNames returns every name LookupResource accepts, sorted, for
// help text and shell completion.
func ResourceNames() []string {
	names := make([]string, 0, len(byName))
	for n := range byName {
		if !strings.Contains(n, ".") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// MustLookupResource is LookupResource for names fixed in the code, such as
// a controller's "pods": a name that is not registered is a programming
// error, so it panics at start-up rather than failing later.
func MustLookupResource(name string) *Kind {
	k, ok := LookupResource(name)
	if !ok {
		panic("api: resource " + name + " is not registered")
	}
	return k
}
