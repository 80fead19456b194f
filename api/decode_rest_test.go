package api

import (
	"slices"
	"strings"
	"testing"
)

// TestDecodeValidatesTheRest: a document with values of the wrong type and
// other invalid fields reports them all, each at its field; the fields
// that failed to decode are not validated as well.
func TestDecodeValidatesTheRest(t *testing.T) {
	doc := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: Web_App
spec:
  replicas: "three"
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      restartPolicy: Sometimes
      containers:
      - name: web
        image: nginx
        ports:
        - containerPort: "http"
      - name: ""
        image: nginx
`
	decodeErrors := []string{
		`web.yaml:doc 0 (line 6): spec.replicas: Invalid type: expected integer, got string "three"`,
		`web.yaml:doc 0 (line 20): spec.template.spec.containers[0].ports[0].containerPort: Invalid type: expected integer, got string "http"`,
	}
	tests := []struct {
		name string
		opts DecodeOptions
		want []string
	}{
		{"decode errors alone", DecodeOptions{}, decodeErrors},
		{"with the rest validated", DecodeOptions{ValidateRest: true}, []string{
			`web.yaml:doc 0 (line 4): metadata.name: Invalid value: "Web_App": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			decodeErrors[0],
			`web.yaml:doc 0 (line 15): spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always"`,
			decodeErrors[1],
			`web.yaml:doc 0 (line 21): spec.template.spec.containers[1].name: Required value`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, errs := DecodeStream("web.yaml", []byte(doc), tt.opts)
			if len(objs) != 0 {
				t.Errorf("a document with decode errors yielded %d objects", len(objs))
			}
			got := errorLines(errs)
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestSetNull(t *testing.T) {
	tree := func() any {
		return map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": "x"}}, "labels": map[string]any{"a.b/c": 1}}}
	}
	tests := []struct {
		path string
		ok   bool
	}{
		{"spec.ports[0].port", true},
		{"spec.ports[0]", true},
		{"spec.labels[a.b/c]", true},
		{"spec.ports[1].port", false},
		{"spec.ports[x]", false},
		{"spec.missing", false},
		{"spec.ports[0].port.deeper", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := setNull(tree(), splitPath(tt.path)); got != tt.ok {
			t.Errorf("setNull(%q) = %v, want %v", tt.path, got, tt.ok)
		}
	}
}

// TestDecodeValidatesTheRestNoFalseDuplicates: the null that stands for a
// port of the wrong type is not reported as a duplicate of a port 0, nor
// does it leave its item's targetPort without a default to complain of.
func TestDecodeValidatesTheRestNoFalseDuplicates(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec:\n  ports:\n  - {name: a, port: \"x\"}\n  - {name: b, port: 0}\n"
	_, errs := DecodeStream("svc.yaml", []byte(doc), DecodeOptions{ValidateRest: true})
	got := errorLines(errs)
	want := []string{
		`svc.yaml:doc 0 (line 6): spec.ports[0].port: Invalid type: expected integer, got string "x"`,
		`svc.yaml:doc 0 (line 7): spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive`,
		`svc.yaml:doc 0 (line 7): spec.ports[1].targetPort: Required value`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDecodeValidatesTheRestNotPastATypo: beside an unknown field, which
// may hide the field it misspells, the rest is not validated: image would
// be reported missing though the document has it, as "imagee".
func TestDecodeValidatesTheRestNotPastATypo(t *testing.T) {
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: Web}\nspec:\n  containers:\n  - {name: web, imagee: nginx, ports: [{containerPort: x}]}\n"
	_, errs := DecodeStream("pod.yaml", []byte(doc), DecodeOptions{ValidateRest: true})
	got := errorLines(errs)
	want := []string{
		`pod.yaml:doc 0 (line 6): spec.containers[0].imagee: unknown field "imagee"`,
		`pod.yaml:doc 0 (line 6): spec.containers[0].ports[0].containerPort: Invalid type: expected integer, got string "x"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// errorLines renders errors as the CLI prints them.
func errorLines(errs ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
