package main

import (
	"context"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// The CLI knows berth's built-in kinds by heart; custom resources it
// learns from the server as kubectl does, by API discovery (/apis), which
// every user may read: when a command names a kind it does not know, it
// reads the groups berth does not serve built in and the resources of
// each of their versions, and knows, for the rest of the command, each
// by plural, singular, short names, kind and plural.group. A user who
// may also list the CustomResourceDefinitions gets each kind with its
// CRD (its printer columns for the table); one who may not, as one with
// rights on a custom resource alone, gets the kind discovery describes,
// shown with its name and age.

var crdKind = api.KindOf(&api.CustomResourceDefinition{})

// discoverer is a client that reads API discovery.
type discoverer interface {
	ServerGroups(ctx context.Context) (*metav1.APIGroupList, error)
	ServerResources(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error)
}

// learnCustomKinds registers the custom kinds the server serves: those
// of the Established CRDs the caller may list, then those discovery
// describes that no such CRD defines.
func learnCustomKinds(ctx context.Context, c apiClient) error {
	objs, _, listErr := c.List(ctx, crdKind, "", listOptions{})
	known := map[schema.GroupResource]bool{}
	for _, o := range objs {
		crd, ok := o.(*api.CustomResourceDefinition)
		if !ok || !established(crd) || api.StorageVersion(crd) == "" {
			continue
		}
		k := api.SetCustomKind(api.CustomKindOf(crd))
		known[k.GroupResource()] = true
	}
	d, ok := c.(discoverer)
	if !ok {
		return listErr
	}
	return discoverCustomKinds(ctx, d, known)
}

// discoverCustomKinds registers the resources of the groups that may
// hold custom resources (api.CustomGroup), but those in known.
func discoverCustomKinds(ctx context.Context, d discoverer, known map[schema.GroupResource]bool) error {
	groups, err := d.ServerGroups(ctx)
	if err != nil {
		return err
	}
	for _, g := range groups.Groups {
		if !api.CustomGroup(g.Name) || len(g.Versions) == 0 {
			continue
		}
		// Each resource with the versions that serve it, the preferred
		// one first.
		versions := map[string][]string{}
		found := map[string]metav1.APIResource{}
		var order []string
		gvs := slices.Clone(g.Versions)
		slices.SortStableFunc(gvs, func(a, b metav1.GroupVersionForDiscovery) int {
			return cmpBool(b.Version == g.PreferredVersion.Version, a.Version == g.PreferredVersion.Version)
		})
		for _, v := range gvs {
			list, err := d.ServerResources(ctx, schema.GroupVersion{Group: g.Name, Version: v.Version})
			if err != nil {
				return err
			}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || known[schema.GroupResource{Group: g.Name, Resource: r.Name}] {
					continue // a subresource, or a kind its CRD gave
				}
				if _, ok := found[r.Name]; !ok {
					found[r.Name] = r
					order = append(order, r.Name)
				}
				versions[r.Name] = append(versions[r.Name], v.Version)
			}
		}
		for _, name := range order {
			// A kind the process knows already is kept: the one a CRD
			// gave, with its schema and columns.
			if _, ok := api.CustomKind(schema.GroupResource{Group: g.Name, Resource: name}); !ok {
				api.SetCustomKind(api.DiscoveredKind(g.Name, versions[name], found[name]))
			}
		}
	}
	return nil
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func established(crd *api.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == api.CRDEstablished {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// namesUnknownKind reports whether the resource arguments of get,
// describe or delete name a kind berth does not know built in.
func namesUnknownKind(args []string) bool {
	if len(args) == 0 {
		return false
	}
	var names []string
	if strings.Contains(args[0], "/") {
		for _, a := range args {
			kind, _, _ := strings.Cut(a, "/")
			names = append(names, kind)
		}
	} else {
		names = strings.Split(args[0], ",")
	}
	for _, n := range names {
		if n == "" || len(api.KindsInCategory(strings.ToLower(n))) > 0 {
			continue
		}
		if _, ok := api.LookupResource(n); !ok {
			return true
		}
	}
	return false
}

// resourceArgs is parseResourceArgs with the server's custom kinds known
// when the arguments name a kind berth does not know built in. A server
// that cannot be asked leaves the error to parseResourceArgs, which
// names the kind.
func resourceArgs(ctx context.Context, g *globalOptions, args []string) ([]resourceRequest, error) {
	if namesUnknownKind(args) {
		if c, err := connectAPI(g); err == nil {
			_ = learnCustomKinds(ctx, c)
		}
	}
	return parseResourceArgs(args)
}
