package apply

import (
	"cmp"

	"github.com/berth-dev/berth/api"
)

// Key names one object of any kind: what a revision and the store agree
// on, so that a manifest and the object it made are matched.
type Key struct {
	Kind      *api.Kind
	Namespace string
	Name      string
}

// KeyOf returns the key of an object of a registered kind.
func KeyOf(obj api.Object) Key {
	return Key{Kind: api.KindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String renders the key as users read it in messages: Kind/namespace/name,
// or Kind/name for cluster-scoped objects.
func (k Key) String() string {
	kind := "<unknown>"
	if k.Kind != nil {
		kind = k.Kind.GVK.Kind
	}
	if k.Namespace == "" {
		return kind + "/" + k.Name
	}
	return kind + "/" + k.Namespace + "/" + k.Name
}

// rank is a kind's place in the apply order; see api.ApplyRank.
func rank(k *api.Kind) int { return api.ApplyRank(k) }

// compareKeys orders keys by kind rank, kind, namespace and name, so that
// prunes and listings come out the same every time.
func compareKeys(a, b Key) int {
	return cmp.Or(
		cmp.Compare(rank(a.Kind), rank(b.Kind)),
		cmp.Compare(kindName(a.Kind), kindName(b.Kind)),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
	)
}

func kindName(k *api.Kind) string {
	if k == nil {
		return ""
	}
	return k.GVK.Kind
}
