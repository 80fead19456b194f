package api

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDecodeFieldValidation: Warn and Ignore let unknown and duplicate
// fields pass (dropped, and the last of a duplicate kept), Warn saying
// each in Kubernetes' words with its full path; Strict, the default,
// refuses them; a value of the wrong type is an error whatever the mode.
func TestDecodeFieldValidation(t *testing.T) {
	docs := []struct {
		name         string
		in           string
		wantData     string // data[k] of the decoded ConfigMap, "" for no object
		wantWarnings []string
		wantErrs     []wantErr // with Strict
		typeErr      bool      // an error in every mode
	}{
		{
			name:         "JSON: unknown fields, top level and nested",
			in:           `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","colour":"red"},"data":{"k":"v"},"bogus":1}`,
			wantData:     "v",
			wantWarnings: []string{`unknown field "metadata.colour"`, `unknown field "bogus"`}, // in the order of the text
			wantErrs: []wantErr{
				{0, 1, "bogus", `unknown field "bogus"`},
				{0, 1, "metadata.colour", `unknown field "colour"`},
			},
		},
		{
			name:         "JSON: a duplicate field keeps its last value",
			in:           `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"first","k":"last"}}`,
			wantData:     "last",
			wantWarnings: []string{`duplicate field "data[k]"`},
			wantErrs:     []wantErr{{0, 1, "data[k]", `duplicate field "k"`}},
		},
		{
			name: "YAML: duplicate and unknown fields",
			in: `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  k: first
  k: last
extra: x
`,
			wantData:     "last",
			wantWarnings: []string{`duplicate field "data[k]"`, `unknown field "extra"`},
			wantErrs: []wantErr{
				{0, 7, "data[k]", `duplicate field "k" (first set on line 6)`},
				{0, 8, "extra", `unknown field "extra"`},
			},
		},
		{
			name: "a wrong type beside an unknown field",
			in: `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: a
    image: x
    ports:
    - containerPort: "80"
  colour: red
`,
			typeErr: true,
			wantErrs: []wantErr{
				{0, 9, "spec.containers[0].ports[0].containerPort", `expected integer, got string "80"`},
				{0, 10, "spec.colour", `unknown field "colour"`},
			},
		},
	}
	for _, tc := range docs {
		for _, mode := range []string{"", metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				objs, errs := DecodeStream("f.yaml", []byte(tc.in), DecodeOptions{FieldValidation: mode})
				strict := mode == "" || mode == metav1.FieldValidationStrict
				if strict || tc.typeErr {
					want := tc.wantErrs
					if !strict {
						want = want[:1] // the type error alone
					}
					matchErrors(t, "f.yaml", errs, want)
					if len(objs) != 0 {
						t.Errorf("decoded %d objects despite errors", len(objs))
					}
					return
				}
				if len(errs) > 0 || len(objs) != 1 {
					t.Fatalf("got %d objects and errors %v, want one object", len(objs), errs)
				}
				if got := objs[0].Object.(*ConfigMap).Data["k"]; got != tc.wantData {
					t.Errorf("data[k] = %q, want %q", got, tc.wantData)
				}
				var want []string
				if mode == metav1.FieldValidationWarn {
					want = tc.wantWarnings
				}
				if got := objs[0].Warnings; !slices.Equal(got, want) {
					t.Errorf("warnings = %q, want %q", got, want)
				}
			})
		}
	}
}
