package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/crd"
)

// apply, diff, plan and delete -f read manifests that may hold
// CustomResourceDefinitions together with objects of their kinds, as a
// chart's crds/ and templates do. A custom resource is sent as the kind
// of its CRD among the manifests (what the server will serve once the
// CRD is applied, which the server applies first), else as the kind the
// server serves now; one that neither defines is an error before
// anything is sent. The kinds of the manifests' CRDs stay the command's
// own: they are not registered in the process.

// manifest is an object read from -f, with the kind it is sent as.
type manifest struct {
	*api.Decoded
	kind *api.Kind
}

// manifestKinds are the kinds the CRDs among the manifests define.
type manifestKinds map[schema.GroupKind]*api.Kind

// manifestKindsOf collects the kinds of the valid CRDs among objs and,
// when a custom resource's CRD is not among them, calls learn so that
// the server's kinds are known.
func manifestKindsOf(objs []*api.Decoded, learn func()) manifestKinds {
	kinds := manifestKinds{}
	for gk, def := range crd.Definitions(objs) {
		kinds[gk] = def.Kind
	}
	for _, d := range objs {
		if u, ok := d.Object.(*unstructured.Unstructured); ok && kinds[u.GroupVersionKind().GroupKind()] == nil && learn != nil {
			learn()
			break
		}
	}
	return kinds
}

// of is the kind d is sent as; nil for a custom resource that no CRD
// among the manifests, nor the server, defines.
func (m manifestKinds) of(d *api.Decoded) *api.Kind {
	u, ok := d.Object.(*unstructured.Unstructured)
	if !ok {
		return api.KindOf(d.Object)
	}
	if k := m[u.GroupVersionKind().GroupKind()]; k != nil {
		return k
	}
	return api.KindOf(u)
}

// noCustomKind is the error of a custom resource whose kind nothing
// defines.
func noCustomKind(d *api.Decoded) *api.Error {
	gvk := d.Object.GetObjectKind().GroupVersionKind()
	return d.ErrorAt("kind", fmt.Sprintf("Unsupported value: %q: no CustomResourceDefinition serves kind %s in %s: neither the manifests nor the server has one",
		gvk.Kind, gvk.Kind, gvk.GroupVersion()))
}

// checkServed checks a custom resource whose CRD is not among the
// manifests against the CRD the server serves its kind with, as the
// server will; one whose CRD among the manifests is invalid, or that no
// CRD defines, is already reported.
func checkServed(u uncheckedObject) api.ErrorList {
	obj, ok := u.d.Object.(*unstructured.Unstructured)
	if !ok || u.why != notInTree {
		return nil
	}
	k := api.KindOf(obj)
	if k == nil || k.CRD == nil {
		return nil
	}
	return crd.DefinitionOf(k).Check(context.Background(), u.d, obj)
}

// learnServedKinds is readForAPI's learn: the server's custom kinds,
// when it can be asked (one that cannot leaves the kinds unknown, and
// the error to the manifests' check).
func learnServedKinds(ctx context.Context, g *globalOptions) func() {
	return func() {
		if c, err := connectAPI(g); err == nil {
			_ = learnCustomKinds(ctx, c)
		}
	}
}
