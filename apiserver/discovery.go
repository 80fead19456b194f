package apiserver

import (
	"encoding/json"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
)

// Discovery tells kubectl and client-go which resources exist: the legacy
// documents (/api, /apis, /api/v1, /apis/<group>/<version>) and the
// aggregated one that kubectl 1.30+ asks for first (Accept
// application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList),
// which saves it one request per group version. The registry is fixed at
// build time, so every document is encoded once.

// Verbs every resource and every status subresource takes.
var (
	resourceVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	// namespaceVerbs leave out deletecollection, as Kubernetes does (see
	// takesDeleteCollection).
	namespaceVerbs = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	statusVerbs    = metav1.Verbs{"get", "patch", "update"}
)

// subresourceDoc is what discovery says of a subresource a
// SubresourceHandler serves: its verbs, and the kind it takes or answers
// (the object's own when Kind is empty), as Kubernetes lists them.
type subresourceDoc struct {
	gvk   schema.GroupVersionKind
	verbs []string
}

// handledSubresources are the subresources HandleSubresource may serve,
// each with its discovery entry. A handler for a subresource not here is
// refused, so discovery lists every subresource served.
var handledSubresources = map[string]subresourceDoc{
	"log":                    {verbs: []string{auth.VerbGet}},
	"exec":                   {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, verbs: []string{auth.VerbCreate, auth.VerbGet}},
	"attach":                 {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, verbs: []string{auth.VerbCreate, auth.VerbGet}},
	"portforward":            {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, verbs: []string{auth.VerbCreate, auth.VerbGet}},
	auth.SubresourceEviction: {gvk: evictionGVK, verbs: []string{auth.VerbCreate}},
	auth.SubresourceToken:    {gvk: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, verbs: []string{auth.VerbCreate}},
	// sources/diff: one object live against what its source declares.
	"diff": {verbs: []string{auth.VerbGet}},
}

// handledDoc is the discovery entry of subresource sub of kind k.
func handledDoc(k *api.Kind, sub string) (schema.GroupVersionKind, []string) {
	d := handledSubresources[sub]
	if d.gvk.Kind == "" {
		return k.GVK, d.verbs
	}
	return d.gvk, d.verbs
}

// aggregatedDiscoveryType is the Content-Type of aggregated discovery.
const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// The aggregated discovery types (k8s.io/api/apidiscovery/v2), kept here
// to their JSON shape rather than pulling in k8s.io/api.
type (
	groupDiscoveryList struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta  `json:"metadata"`
		Items           []groupDiscovery `json:"items"`
	}
	groupDiscovery struct {
		Metadata metav1.ObjectMeta  `json:"metadata"`
		Versions []versionDiscovery `json:"versions,omitempty"`
	}
	versionDiscovery struct {
		Version   string              `json:"version"`
		Resources []resourceDiscovery `json:"resources,omitempty"`
		Freshness string              `json:"freshness,omitempty"`
	}
	resourceDiscovery struct {
		Resource         string                    `json:"resource"`
		ResponseKind     *metav1.GroupVersionKind  `json:"responseKind,omitempty"`
		Scope            string                    `json:"scope"`
		SingularResource string                    `json:"singularResource"`
		Verbs            []string                  `json:"verbs"`
		ShortNames       []string                  `json:"shortNames,omitempty"`
		Categories       []string                  `json:"categories,omitempty"`
		Subresources     []subresourceDiscoveryDoc `json:"subresources,omitempty"`
	}
	subresourceDiscoveryDoc struct {
		Subresource  string                   `json:"subresource"`
		ResponseKind *metav1.GroupVersionKind `json:"responseKind,omitempty"`
		Verbs        []string                 `json:"verbs"`
	}
)

// discoveryDocs holds every discovery document, encoded.
type discoveryDocs struct {
	groups         []byte            // /apis
	groupByName    map[string][]byte // /apis/<group>
	resourceLists  map[string][]byte // "v1", "apps/v1"
	aggregatedCore []byte            // /api, aggregated
	aggregatedApis []byte            // /apis, aggregated
}

// virtualResource is a resource served but not stored: the self reviews
// (created, answered, forgotten) and the resource metrics of
// metrics.k8s.io, which the control plane registers from the agents'.
type virtualResource struct {
	gv             schema.GroupVersion
	resource, kind string
	namespaced     bool
	verbs          []string
}

var virtualResources = []virtualResource{
	{schema.GroupVersion{Group: "authentication.k8s.io", Version: "v1"}, "selfsubjectreviews", "SelfSubjectReview", false, []string{"create"}},
	{schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, []string{"create"}},
	{schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false, []string{"create"}},
	{schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, "subjectaccessreviews", "SubjectAccessReview", false, []string{"create"}},
	{schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, "localsubjectaccessreviews", "LocalSubjectAccessReview", true, []string{"create"}},
	{MetricsGroupVersion, "nodes", "NodeMetrics", false, []string{"get", "list"}},
	{MetricsGroupVersion, "pods", "PodMetrics", true, []string{"get", "list"}},
}

// MetricsGroupVersion is the group of the resource metrics kubectl top
// reads.
var MetricsGroupVersion = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}

// MetricsKind is the kind whose objects a metrics.k8s.io resource
// ("nodes" or "pods") describes, nil for another: reading the metrics is
// authorized as reading those objects, by the metrics API and the reviews
// alike.
func MetricsKind(resource string) *api.Kind {
	switch resource {
	case "nodes":
		return api.KindOf(&api.Node{})
	case "pods":
		return api.KindOf(&api.Pod{})
	}
	return nil
}

// newDiscoveryDocs encodes every document; handled are, per kind, the
// subresources registered handlers serve, custom the custom kinds served.
func newDiscoveryDocs(handled map[*api.Kind][]string, custom []*api.Kind) (*discoveryDocs, error) {
	var gvs []schema.GroupVersion
	byGV := map[schema.GroupVersion][]*api.Kind{}
	for _, k := range servedKinds(custom) {
		gv := k.GVK.GroupVersion()
		if _, ok := byGV[gv]; !ok {
			gvs = append(gvs, gv)
		}
		byGV[gv] = append(byGV[gv], k)
	}
	virtualByGV := map[schema.GroupVersion][]virtualResource{}
	for _, r := range virtualResources {
		if _, ok := byGV[r.gv]; !ok {
			gvs = append(gvs, r.gv)
			byGV[r.gv] = nil
		}
		virtualByGV[r.gv] = append(virtualByGV[r.gv], r)
	}
	d := &discoveryDocs{groupByName: map[string][]byte{}, resourceLists: map[string][]byte{}}
	groupList := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	core := groupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	apis := core
	// groupVersions are the versions of each group, in order; the first
	// is the preferred one.
	groupVersions := map[string][]versionDiscovery{}
	var groupOrder []string
	for _, gv := range gvs {
		kinds := byGV[gv]
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		vd := versionDiscovery{Version: gv.Version, Freshness: "Current"}
		for _, k := range kinds {
			list.APIResources = append(list.APIResources, legacyResources(k, handled[k])...)
			vd.Resources = append(vd.Resources, aggregatedResource(k, handled[k]))
		}
		for _, r := range virtualByGV[gv] {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.resource, Kind: r.kind, Namespaced: r.namespaced, Verbs: r.verbs})
			scope := "Cluster"
			if r.namespaced {
				scope = "Namespaced"
			}
			vd.Resources = append(vd.Resources, resourceDiscovery{
				Resource:     r.resource,
				ResponseKind: &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: r.kind},
				Scope:        scope,
				Verbs:        r.verbs,
			})
		}
		slices.SortFunc(vd.Resources, func(a, b resourceDiscovery) int { return compareStrings(a.Resource, b.Resource) })
		if err := encodeInto(d.resourceLists, gv.String(), list); err != nil {
			return nil, err
		}
		if gv.Group == "" {
			core.Items = append(core.Items, groupDiscovery{Metadata: metav1.ObjectMeta{Name: gv.Group}, Versions: []versionDiscovery{vd}})
			continue
		}
		if _, ok := groupVersions[gv.Group]; !ok {
			groupOrder = append(groupOrder, gv.Group)
		}
		groupVersions[gv.Group] = append(groupVersions[gv.Group], vd)
	}
	for _, name := range groupOrder {
		vds := groupVersions[name]
		apis.Items = append(apis.Items, groupDiscovery{Metadata: metav1.ObjectMeta{Name: name}, Versions: vds})
		group := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: name}
		for _, vd := range vds {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + vd.Version, Version: vd.Version})
		}
		group.PreferredVersion = group.Versions[0]
		groupList.Groups = append(groupList.Groups, group)
		if err := encodeInto(d.groupByName, name, group); err != nil {
			return nil, err
		}
	}
	var err error
	if d.groups, err = json.Marshal(groupList); err != nil {
		return nil, err
	}
	if d.aggregatedCore, err = json.Marshal(core); err != nil {
		return nil, err
	}
	if d.aggregatedApis, err = json.Marshal(apis); err != nil {
		return nil, err
	}
	return d, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func encodeInto(m map[string][]byte, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	m[key] = b
	return nil
}

// servedKinds are the built-in kinds, then each custom kind once per
// version it is served in, its storage version first (the preferred one).
func servedKinds(custom []*api.Kind) []*api.Kind {
	out := slices.Clip(api.Kinds())
	for _, k := range custom {
		out = append(out, k)
		for _, v := range k.Versions {
			if v != k.GVK.Version {
				kv := *k
				kv.GVK.Version = v
				out = append(out, &kv)
			}
		}
	}
	return out
}

// verbsOf is what discovery says a kind takes.
func verbsOf(k *api.Kind) metav1.Verbs {
	if !takesDeleteCollection(k) {
		return namespaceVerbs
	}
	return resourceVerbs
}

// takesDeleteCollection: a DELETE of the kind's collection deletes what
// it selects. Not for namespaces, as in Kubernetes: one request would
// empty every namespace it reached before one that may not go.
func takesDeleteCollection(k *api.Kind) bool { return k != namespaceKind }

// legacyResources lists a kind and its subresources (handled are those
// registered handlers serve) as an APIResourceList has them.
func legacyResources(k *api.Kind, handled []string) []metav1.APIResource {
	r := metav1.APIResource{
		Name:         k.Resource,
		SingularName: k.Singular,
		Namespaced:   k.Namespaced,
		Kind:         k.GVK.Kind,
		Verbs:        verbsOf(k),
		ShortNames:   k.ShortNames,
	}
	r.Categories = k.Categories
	out := []metav1.APIResource{r}
	if k.HasStatus {
		out = append(out, metav1.APIResource{
			Name:       k.Resource + "/status",
			Namespaced: k.Namespaced,
			Kind:       k.GVK.Kind,
			Verbs:      statusVerbs,
		})
	}
	if k == namespaceKind {
		out = append(out, metav1.APIResource{Name: "namespaces/finalize", Kind: k.GVK.Kind, Verbs: metav1.Verbs{"update"}})
	}
	for _, sub := range handled {
		// kubectl drain evicts through pods/eviction when discovery
		// lists it, with the group and version of the Eviction it takes.
		gvk, verbs := handledDoc(k, sub)
		r := metav1.APIResource{Name: k.Resource + "/" + sub, Namespaced: k.Namespaced, Kind: gvk.Kind, Verbs: verbs}
		if gvk.GroupVersion() != k.GVK.GroupVersion() {
			// Named only when it is not the list's own.
			r.Group, r.Version = gvk.Group, gvk.Version
		}
		out = append(out, r)
	}
	if proxyable(k) {
		out = append(out, metav1.APIResource{
			Name:       k.Resource + "/" + SubresourceProxy,
			Namespaced: k.Namespaced,
			Kind:       proxyOptionsKind(k),
			Verbs:      proxyVerbs,
		})
	}
	if scalable(k) {
		out = append(out, metav1.APIResource{
			Name:       k.Resource + "/scale",
			Namespaced: k.Namespaced,
			Group:      "autoscaling",
			Version:    "v1",
			Kind:       "Scale",
			Verbs:      statusVerbs,
		})
	}
	return out
}

// aggregatedResource is a kind and its subresources (handled are those
// registered handlers serve) as aggregated discovery has them.
func aggregatedResource(k *api.Kind, handled []string) resourceDiscovery {
	gvk := &metav1.GroupVersionKind{Group: k.GVK.Group, Version: k.GVK.Version, Kind: k.GVK.Kind}
	scope := "Cluster"
	if k.Namespaced {
		scope = "Namespaced"
	}
	r := resourceDiscovery{
		Resource:         k.Resource,
		ResponseKind:     gvk,
		Scope:            scope,
		SingularResource: k.Singular,
		Verbs:            verbsOf(k),
		ShortNames:       k.ShortNames,
	}
	r.Categories = k.Categories
	if k.HasStatus {
		r.Subresources = append(r.Subresources, subresourceDiscoveryDoc{Subresource: "status", ResponseKind: gvk, Verbs: statusVerbs})
	}
	if k == namespaceKind {
		r.Subresources = append(r.Subresources, subresourceDiscoveryDoc{Subresource: "finalize", ResponseKind: gvk, Verbs: []string{"update"}})
	}
	for _, sub := range handled {
		gvk, verbs := handledDoc(k, sub)
		r.Subresources = append(r.Subresources, subresourceDiscoveryDoc{
			Subresource:  sub,
			ResponseKind: &metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Verbs:        verbs,
		})
	}
	if proxyable(k) {
		r.Subresources = append(r.Subresources, subresourceDiscoveryDoc{
			Subresource:  SubresourceProxy,
			ResponseKind: &metav1.GroupVersionKind{Version: "v1", Kind: proxyOptionsKind(k)},
			Verbs:        proxyVerbs,
		})
	}
	if scalable(k) {
		r.Subresources = append(r.Subresources, subresourceDiscoveryDoc{
			Subresource:  "scale",
			ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
			Verbs:        statusVerbs,
		})
	}
	return r
}

// wantsAggregated reports whether the client prefers aggregated discovery:
// it is listed before anything else the server can answer.
func wantsAggregated(r *http.Request) bool {
	for _, m := range parseAccept(r.Header.Get("Accept")) {
		if !m.jsonLike() {
			continue
		}
		as, g, v := m.as()
		if as == "APIGroupDiscoveryList" && g == "apidiscovery.k8s.io" && v == "v2" {
			return true
		}
		if as == "" {
			return false
		}
	}
	return false
}

// serveDiscovery answers the discovery paths; it reports false when the
// path is not one.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, segs []string) bool {
	switch {
	case len(segs) == 1 && (segs[0] == "api" || segs[0] == "apis"):
	case len(segs) == 2 && (segs[0] == "api" || segs[0] == "apis"):
	case len(segs) == 3 && segs[0] == "apis":
	default:
		return false
	}
	var body []byte
	contentType := "application/json"
	disc, err := s.discovery()
	if err != nil {
		WriteError(w, err)
		return true
	}
	switch {
	case len(segs) == 1 && segs[0] == "api":
		if wantsAggregated(r) {
			body, contentType = disc.aggregatedCore, aggregatedDiscoveryType
			break
		}
		v := metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		}
		body, _ = json.Marshal(v)
	case len(segs) == 1 && segs[0] == "apis":
		if wantsAggregated(r) {
			body, contentType = disc.aggregatedApis, aggregatedDiscoveryType
			break
		}
		body = disc.groups
	case len(segs) == 2 && segs[0] == "api":
		body = disc.resourceLists[segs[1]]
	case len(segs) == 2 && segs[0] == "apis":
		body = disc.groupByName[segs[1]]
	case len(segs) == 3 && segs[0] == "apis":
		body = disc.resourceLists[segs[1]+"/"+segs[2]]
	default:
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, methodNotAllowed(nil, r.Method))
		return true
	}
	if body == nil {
		WriteError(w, notFoundPath())
		return true
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	_, _ = w.Write(body)
	return true
}
