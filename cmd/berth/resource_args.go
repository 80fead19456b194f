package main

import (
	"sort"
	"strings"

	"github.com/berth-dev/berth/api"
)

// resourceRequest is one kind named on a command line and the names
// asked for (none: every object of the kind).
type resourceRequest struct {
	kind  *api.Kind
	names []string
}

// lookupKind resolves a kind as a user types it: plural, singular, short
// name, Kind, or plural.group.
func lookupKind(name string) (*api.Kind, error) {
	if k, ok := api.LookupResource(name); ok {
		return k, nil
	}
	return nil, usageErrorf("the server doesn't have a resource type %q; known types: %s", name, knownResources())
}

// knownResources lists what lookupKind accepts, as `pods (po)`, so that a
// typo is answered with the right spelling.
func knownResources() string {
	ks := append([]*api.Kind(nil), api.Kinds()...)
	sort.Slice(ks, func(i, j int) bool { return ks[i].Resource < ks[j].Resource })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.Resource
		if len(k.ShortNames) > 0 {
			parts[i] += " (" + strings.Join(k.ShortNames, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// parseResourceArgs reads the arguments of get, describe and delete the
// way kubectl does: `KIND[,KIND...] [NAME...]` (every name of every kind;
// "all" names the kinds of that category) or `KIND/NAME...`. Kinds keep
// the order they were first named in.
func parseResourceArgs(args []string) ([]resourceRequest, error) {
	if len(args) == 0 {
		return nil, usageErrorf("you must specify the type of resource; known types: %s", knownResources())
	}
	var reqs []resourceRequest
	index := map[*api.Kind]int{}
	add := func(k *api.Kind, names ...string) {
		i, ok := index[k]
		if !ok {
			i = len(reqs)
			index[k] = i
			reqs = append(reqs, resourceRequest{kind: k})
		}
		reqs[i].names = append(reqs[i].names, names...)
	}

	if strings.Contains(args[0], "/") {
		for _, a := range args {
			kind, name, ok := strings.Cut(a, "/")
			if !ok || kind == "" || name == "" {
				return nil, usageErrorf("arguments in resource/name form must have a single resource and name: %q", a)
			}
			k, err := lookupKind(kind)
			if err != nil {
				return nil, err
			}
			add(k, name)
		}
		return reqs, nil
	}

	for _, a := range args[1:] {
		if strings.Contains(a, "/") {
			return nil, usageErrorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'berth get resource/<resource_name>' instead of 'berth get resource resource/<resource_name>')")
		}
	}
	for _, kind := range strings.Split(args[0], ",") {
		if kind == "" {
			return nil, usageErrorf("empty resource type in %q", args[0])
		}
		kinds := api.KindsInCategory(kind) // "all", as in kubectl
		if len(kinds) == 0 {
			k, err := lookupKind(kind)
			if err != nil {
				return nil, err
			}
			kinds = []*api.Kind{k}
		}
		for _, k := range kinds {
			if _, named := index[k]; !named {
				add(k, args[1:]...)
			}
		}
	}
	return reqs, nil
}

// resourceName names a kind's resource as kubectl's output does:
// `pod`, `deployment.apps`.
func resourceName(k *api.Kind) string {
	if k.GVK.Group == "" {
		return k.Singular
	}
	return k.Singular + "." + k.GVK.Group
}

// objectRef names one object as `-o name` and apply print it:
// `deployment.apps/web`.
func objectRef(k *api.Kind, name string) string {
	return resourceName(k) + "/" + name
}
