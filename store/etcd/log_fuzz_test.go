package etcd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/berth-dev/berth/store"
)

// FuzzLogPart feeds the follower's reading of the log whatever a key and
// its value may hold (etcd damaged, another program writing under the
// prefix): each part is taken, or refused with an error naming its key;
// the follower never panics, and what it hands on decodes.
func FuzzLogPart(f *testing.F) {
	cm := configMap("a", "1")
	data, err := json.Marshal(cm)
	if err != nil {
		f.Fatal(err)
	}
	parts, err := encodeParts(7, []store.Op{
		{Kind: cmKind, Namespace: "default", Name: "a", Object: cm, Data: data, Revision: 6},
		{Kind: cmKind, Namespace: "default", Name: "b", Revision: 7},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(logKey("/berth", 7, 0), string(parts[0]))
	f.Add(logKey("/berth", 7, 1), `{"revision":7,"last":true,"ops":[]}`)
	f.Add("/berth/log/x/y", "{}")
	f.Add(logKey("/berth", 3, 0), `{"revision":3,"last":true,"ops":[{"resource":"nope","name":"x","object":{}}]}`)
	f.Add(logKey("/berth", 3, 0), `{"revision":3,"last":true,"ops":[{"resource":"pods","name":"x","object":{"spec":{"containers":"no"}}}]}`)
	f.Fuzz(func(t *testing.T, key, value string) {
		a := newAssembler("/berth")
		_, got, err := a.add(key, []byte(value))
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
				t.Errorf("an error that does not name the key %q: %v", key, err)
			}
			return
		}
		if got == nil {
			return
		}
		ops, err := decodeOps(got)
		if err != nil {
			return
		}
		for _, op := range ops {
			if op.Kind == nil {
				t.Errorf("an op without its kind: %+v", op)
			}
			if op.Object != nil && op.Object.GetObjectKind().GroupVersionKind() != op.Kind.GVK {
				t.Errorf("an object of %v for %s", op.Object.GetObjectKind().GroupVersionKind(), op.Kind.Resource)
			}
		}
	})
}
