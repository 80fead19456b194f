package ingress

import (
	"context"
	"fmt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var (
	ingressKind = api.MustLookupResource("ingresses")
	classKind   = api.MustLookupResource("ingressclasses")
	serviceKind = api.MustLookupResource("services")
	secretKind  = api.MustLookupResource("secrets")
)

// Admit is the store hook of Kubernetes' DefaultIngressClass admission
// plugin: an Ingress created without spec.ingressClassName, or the
// legacy class annotation, gets the default class's name, when there is
// one.
func Admit(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if k != ingressKind || obj == nil || old != nil {
		return nil
	}
	ing := obj.(*api.Ingress)
	if ing.Spec.IngressClassName != nil || ing.Annotations[api.AnnotationIngressClass] != "" {
		return nil
	}
	classes, err := listClasses(tx)
	if err != nil {
		return err
	}
	if name := api.DefaultIngressClassName(classes); name != "" {
		ing.Spec.IngressClassName = &name
	}
	return nil
}

func listClasses(tx *store.Txn) ([]*api.IngressClass, error) {
	objs, err := tx.List(classKind, store.Filter{})
	if err != nil {
		return nil, fmt.Errorf("list ingress classes: %w", err)
	}
	out := make([]*api.IngressClass, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.IngressClass)
	}
	return out, nil
}

// Bootstrap creates the berth IngressClass, the default class, when no
// class of that name exists: at the first start, and after a user
// deleted it.
func Bootstrap(ctx context.Context, s *store.Store) error {
	ic := api.DefaultIngressClass()
	api.Default(ic)
	if _, err := s.Create(ctx, ic); err != nil && !store.IsAlreadyExists(err) {
		return fmt.Errorf("create ingress class %s: %w", ic.Name, err)
	}
	return nil
}
