package main

import (
	"context"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/berth-dev/berth/api"
)

// The CLI knows berth's built-in kinds by heart; custom resources it
// learns from the server, as kubectl learns them by discovery: when a
// command names a kind it does not know, it reads the server's
// CustomResourceDefinitions and knows, for the rest of the command, the
// kind of each that is Established, by plural, singular, short names and
// kind, with its printer columns for the table.

var crdKind = api.KindOf(&api.CustomResourceDefinition{})

// learnCustomKinds registers the kinds of the Established CRDs the server
// holds.
func learnCustomKinds(ctx context.Context, c apiClient) error {
	objs, _, err := c.List(ctx, crdKind, "", listOptions{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		crd, ok := o.(*api.CustomResourceDefinition)
		if !ok || !established(crd) || api.StorageVersion(crd) == "" {
			continue
		}
		api.SetCustomKind(api.CustomKindOf(crd))
	}
	return nil
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
