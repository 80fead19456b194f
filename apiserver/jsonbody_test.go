package apiserver

import (
	"reflect"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
)

// TestDecodeJSONObject checks the one-pass decoder of JSON bodies against
// the general one: where it decodes a body it makes the very object the
// general decoder makes, and every body with a problem is left to the
// general decoder, which names it.
func TestDecodeJSONObject(t *testing.T) {
	pods := api.MustLookupResource("pods")
	nodes := api.MustLookupResource("nodes")
	const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","labels":{"app":"web"}},` +
		`"spec":{"nodeName":"n1","containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"100m"}}}]},` +
		`"status":{"phase":"Running","podIP":"10.0.0.1","startTime":"2026-01-02T03:04:05Z"}}`
	tests := []struct {
		name        string
		kind        *api.Kind
		subresource string
		verb        string
		body        string
		wantFast    bool
		wantErr     bool // from the general decoder
		wantBodyErr bool // from decodeBody, when the general decoder succeeds
	}{
		{name: "status update", kind: pods, subresource: "status", verb: auth.VerbUpdate, body: pod, wantFast: true},
		{name: "object update drops status", kind: pods, verb: auth.VerbUpdate, body: pod, wantFast: true},
		{name: "create drops status", kind: pods, verb: auth.VerbCreate, body: pod, wantFast: true},
		{name: "node create keeps status", kind: nodes, verb: auth.VerbCreate,
			body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":"4"}}}`, wantFast: true},
		{name: "repeated label", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","a":"2"}}}`, wantErr: true},
		{name: "repeated field", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"metadata":{"name":"q"}}`, wantErr: true},
		{name: "unknown field", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeNam":"n"}}`, wantErr: true},
		{name: "unknown field in a dropped status", kind: pods, verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"status":{"bogus":1}}`},
		{name: "no type meta", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"metadata":{"name":"p"}}`},
		{name: "another kind", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"p"}}`, wantBodyErr: true},
		{name: "wrong type", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":7}}`, wantErr: true},
		{name: "two objects", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}} {"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"}}`, wantErr: true},
		{name: "managed fields", kind: pods, subresource: "status", verb: auth.VerbUpdate,
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:a":{},"f:a":{}}}]}}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &resourceRequest{kind: tt.kind, subresource: tt.subresource, verb: tt.verb, namespace: "default", name: "p"}
			fast, ok := req.decodeJSONObject([]byte(tt.body))
			if ok != tt.wantFast {
				t.Fatalf("one pass decoded it: %v, want %v", ok, tt.wantFast)
			}
			objs, errs := api.DecodeStream("", withTypeMeta(tt.kind, []byte(tt.body)), api.DecodeOptions{DropStatus: req.ignoresStatus()})
			if (len(errs) > 0 || len(objs) != 1) != tt.wantErr {
				t.Fatalf("general decoder: %d objects, errors %v; want error %v", len(objs), errs, tt.wantErr)
			}
			if ok && !reflect.DeepEqual(fast, objs[0].Object) {
				t.Errorf("one pass made\n%#v\nthe general decoder\n%#v", fast, objs[0].Object)
			}
			// Through decodeBody, the answer is the general decoder's.
			got, _, err := req.decodeBody([]byte(tt.body), true, "")
			if (err != nil) != (tt.wantErr || tt.wantBodyErr) {
				t.Errorf("decodeBody: %v, want error %v", err, tt.wantErr || tt.wantBodyErr)
			}
			if err == nil && !reflect.DeepEqual(got, objs[0].Object) {
				t.Errorf("decodeBody made\n%#v\nthe general decoder\n%#v", got, objs[0].Object)
			}
		})
	}
}
