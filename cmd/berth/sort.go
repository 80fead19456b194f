package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/jsonpath"

	"github.com/berth-dev/berth/api"
)

// sortObjects sorts objs (of kind k) by the value path finds in each, as
// kubectl's --sort-by does: an object without the field first, numbers
// by value, strings that are both quantities (100m, 2Gi) by quantity,
// other strings in natural order (web-2 before web-10; RFC 3339 times,
// as the API writes them, in time order). The sort is stable.
func sortObjects(k *api.Kind, objs []api.Object, path *jsonpath.JSONPath) error {
	keys := make(map[api.Object]any, len(objs))
	for _, obj := range objs {
		doc, err := objectDocument(k, obj)
		if err != nil {
			return err
		}
		var results [][]reflect.Value
		if err := recovered(func() (err error) {
			results, err = path.FindResults(doc)
			return err
		}); err != nil {
			return fmt.Errorf("--sort-by: %w", err)
		}
		if len(results) > 0 && len(results[0]) > 0 {
			keys[obj] = results[0][0].Interface()
		}
	}
	slices.SortStableFunc(objs, func(a, b api.Object) int { return compareSortKeys(keys[a], keys[b]) })
	return nil
}

// compareSortKeys orders two values a JSONPath found (see sortObjects);
// nil is a field not found.
func compareSortKeys(a, b any) int {
	switch {
	case a == nil || b == nil:
		return cmp.Compare(boolInt(a != nil), boolInt(b != nil))
	}
	switch av := a.(type) {
	case json.Number:
		if bv, ok := b.(json.Number); ok {
			af, aErr := av.Float64()
			bf, bErr := bv.Float64()
			if aErr == nil && bErr == nil {
				return cmp.Compare(af, bf)
			}
		}
	case string:
		if bv, ok := b.(string); ok {
			aq, aErr := resource.ParseQuantity(av)
			bq, bErr := resource.ParseQuantity(bv)
			if aErr == nil && bErr == nil {
				return aq.Cmp(bq)
			}
			return naturalCompare(av, bv)
		}
	case bool:
		if bv, ok := b.(bool); ok {
			return cmp.Compare(boolInt(av), boolInt(bv))
		}
	}
	return naturalCompare(fmt.Sprint(a), fmt.Sprint(b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// naturalCompare compares strings with each run of digits taken as a
// number: "web-2" before "web-10".
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		ad, bd := digitsAt(a), digitsAt(b)
		if ad > 0 && bd > 0 {
			an, bn := strings.TrimLeft(a[:ad], "0"), strings.TrimLeft(b[:bd], "0")
			if c := cmp.Compare(len(an), len(bn)); c != 0 {
				return c
			}
			if c := strings.Compare(an, bn); c != 0 {
				return c
			}
			a, b = a[ad:], b[bd:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitsAt is the length of the run of ASCII digits s starts with.
func digitsAt(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
