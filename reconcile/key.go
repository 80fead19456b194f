package reconcile

import "strings"

// Key names an object in a work queue the way Kubernetes does, so a key can
// be logged, compared and split back without holding the object itself:
// "namespace/name", or just "name" for cluster-scoped objects.
func Key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// SplitKey undoes Key so a worker can look the object up again; a key
// without a slash is a cluster-scoped name.
func SplitKey(key string) (namespace, name string) {
	namespace, name, ok := strings.Cut(key, "/")
	if !ok {
		return "", key
	}
	return namespace, name
}
