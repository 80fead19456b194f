package api

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErr is what a test expects of one decoder error: where it is and a
// part of its message.
type wantErr struct {
	doc   int
	line  int
	field string
	msg   string
}

func (w wantErr) String() string {
	return fmt.Sprintf("doc %d line %d %s: …%s…", w.doc, w.line, w.field, w.msg)
}

func matchErrors(t *testing.T, file string, got ErrorList, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v\nwant:\n%v", len(got), len(want), got, want)
		return
	}
	for i, w := range want {
		g := got[i]
		if g.File != file || g.Doc != w.doc || g.Line != w.line || g.Field != w.field || !strings.Contains(g.Message, w.msg) {
			t.Errorf("error %d = %q (file %q doc %d line %d field %q), want %s", i, g.Error(), g.File, g.Doc, g.Line, g.Field, w)
		}
	}
}

// describe names a decoded object for comparisons: Kind/name@doc:line.
func describe(d *Decoded) string {
	s := fmt.Sprintf("%s/%s@%d:%d", d.Object.GetObjectKind().GroupVersionKind().Kind, d.Object.GetName(), d.Doc, d.Line)
	if d.Field != "" {
		s += " " + d.Field
	}
	return s
}

func TestDecodeStream(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		opts     DecodeOptions
		wantObjs []string
		wantErrs []wantErr
	}{
		{
			name: "two documents",
			in: `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
`,
			wantObjs: []string{"ConfigMap/a@0:1", "Deployment/b@1:6"},
		},
		{
			name: "empty and comment documents are skipped and not counted",
			in: `# header
---
---

---
# only a comment
   # and another
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
--- # a comment after the marker
~
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
...
`,
			wantObjs: []string{"ConfigMap/a@0:9", "ConfigMap/b@1:15"},
		},
		{
			name:     "content on the separator line",
			in:       "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			wantObjs: []string{"ConfigMap/a@0:1"},
		},
		{
			name:     "CRLF line endings and a byte order mark",
			in:       "\xef\xbb\xbfapiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: b\r\n  namespace: 5\r\n",
			wantObjs: []string{"ConfigMap/a@0:1"},
			wantErrs: []wantErr{{1, 10, "metadata.namespace", "expected string, got number 5"}},
		},
		{
			name: "unknown fields with full paths",
			in: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    spec:
      containers:
      - name: a
        image: x
      - name: web
        imagee: nginx
  replica: 3
`,
			wantErrs: []wantErr{
				{0, 13, "spec.template.spec.containers[1].imagee", `unknown field "imagee"`},
				{0, 14, "spec.replica", `unknown field "replica"`},
			},
		},
		{
			// "n" is YAML 1.1's false, as Kubernetes reads it.
			name: "type errors name the path with indices, all of them",
			in: `apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    n: 1
spec:
  containers:
  - name: a
    ports:
    - containerPort: 80
    - containerPort: "81"
    livenessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: often
  terminationGracePeriodSeconds: 1.5
  unknownToo: x
`,
			wantErrs: []wantErr{
				{0, 6, "metadata.labels[false]", "expected string, got number 1"},
				{0, 12, "spec.containers[0].ports[1].containerPort", `expected integer, got string "81"`},
				{0, 15, "spec.containers[0].livenessProbe.periodSeconds", `expected integer, got string "often"`},
				{0, 16, "spec.terminationGracePeriodSeconds", "Invalid value: 1.5"},
				{0, 17, "spec.unknownToo", `unknown field "unknownToo"`},
			},
		},
		{
			name: "bad quantity",
			in: `apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard:
    cpu: lots
`,
			wantErrs: []wantErr{{0, 6, "spec.hard[cpu]", `Invalid value: "lots": quantities must match`}},
		},
		{
			name: "duplicate fields",
			in: `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  labels:
    app.kubernetes.io/name: x
    app.kubernetes.io/name: y
data:
  k: v
metadata:
  name: b
`,
			wantErrs: []wantErr{
				{0, 7, "metadata.labels[app.kubernetes.io/name]", `duplicate field "app.kubernetes.io/name" (first set on line 6)`},
				{0, 10, "metadata", `duplicate field "metadata" (first set on line 3)`},
			},
		},
		{
			name: "missing kind, missing apiVersion, unknown kind, wrong version",
			in: `apiVersion: v1
metadata: {name: a}
---
kind: ConfigMap
metadata: {name: b}
---
metadata: {name: c}
---
apiVersion: v1
kind: Frobnicator
---
apiVersion: apps/v1beta2
kind: Deployment
---
apiVersion: v1
kind: configmap
---
apiVersion: v1
kind: 5
`,
			wantErrs: []wantErr{
				{0, 1, "kind", "Required value"},
				{1, 4, "apiVersion", "ConfigMap is served as v1"},
				{2, 7, "apiVersion", "Required value"},
				{2, 7, "kind", "Required value"},
				{3, 10, "kind", `Unsupported value: "Frobnicator": not a kind berth serves in v1 (it has Namespace`},
				{4, 12, "apiVersion", `Unsupported value: "apps/v1beta2": Deployment is served as apps/v1`},
				{5, 16, "kind", "did you mean ConfigMap, apiVersion v1?"},
				{6, 19, "kind", "expected string, got a number"},
			},
		},
		{
			name: "bad YAML in one document does not hide the others",
			in: `apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: [b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {k: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: d}
`,
			wantObjs: []string{"ConfigMap/a@0:1", "ConfigMap/d@3:14"},
			wantErrs: []wantErr{
				{1, 7, "", "invalid YAML: did not find expected"},
				{2, 12, "data[k]", "expected string, got number 1"},
			},
		},
		{
			name:     "document that is not an object",
			in:       "- a\n- b\n---\njust a string\n",
			wantErrs: []wantErr{{0, 1, "", "expected an object with apiVersion and kind, got an array"}, {1, 4, "", "got a string"}},
		},
		{
			name: "status dropped",
			in: `apiVersion: v1
kind: ConfigMap
metadata: {name: a}
status: {anything: [goes]}
`,
			opts:     DecodeOptions{DropStatus: true},
			wantObjs: []string{"ConfigMap/a@0:1"},
		},
		{
			name: "status kept",
			in: `apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: a, image: b}]}
status: {phase: Running, bogus: 1}
`,
			wantErrs: []wantErr{{0, 5, "status.bogus", `unknown field "bogus"`}},
		},
		{
			name: "List items",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b}
  bogus: true
- apiVersion: v1
  kind: Secret
  metadata: {name: c}
`,
			wantObjs: []string{"ConfigMap/a@0:4 items[0]", "Secret/c@0:11 items[2]"},
			wantErrs: []wantErr{{0, 10, "items[1].bogus", `unknown field "bogus"`}},
		},
		{
			name: "JSON document",
			in: `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {"name": "a"},
  "data": {"k": 1}
}`,
			wantErrs: []wantErr{{0, 5, "data[k]", "expected string, got number 1"}},
		},
		{
			name: "JSON stream",
			in: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": "v", "k": "w"}}

{"apiVersion": "v1", "kind": "ConfigMap",
 "metadata": {"name": "c"}}
{"apiVersion": "v1", "kind": `,
			wantObjs: []string{"ConfigMap/a@0:1", "ConfigMap/c@2:4"},
			wantErrs: []wantErr{
				{1, 2, "data[k]", `duplicate field "k"`},
				{3, 6, "", "invalid JSON: unexpected EOF"},
			},
		},
		{
			name: "JSON stream with a syntax error",
			in: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
{"apiVersion": "v1",
 "kind": ConfigMap}
`,
			wantObjs: []string{"ConfigMap/a@0:1"},
			wantErrs: []wantErr{{1, 3, "", "invalid JSON: invalid character 'C'"}},
		},
		{
			name: "JSON documents in a YAML stream",
			in: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
---
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}
`,
			wantObjs: []string{"ConfigMap/a@0:1", "ConfigMap/b@1:3"},
		},
		{
			name:     "YAML flow mapping at the start",
			in:       "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			wantObjs: []string{"ConfigMap/a@0:1"},
		},
		{
			name: "anchors and merge keys",
			in: `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  labels: &l
    app: a
  annotations:
    <<: *l
    note: x
data: {k: v}
bogus: 1
`,
			wantErrs: []wantErr{{0, 11, "bogus", `unknown field "bogus"`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, errs := DecodeStream("in.yaml", []byte(tt.in), tt.opts)
			var got []string
			for _, d := range objs {
				if d.File != "in.yaml" {
					t.Errorf("object file = %q", d.File)
				}
				got = append(got, describe(d))
			}
			if strings.Join(got, ", ") != strings.Join(tt.wantObjs, ", ") {
				t.Errorf("objects = %v, want %v", got, tt.wantObjs)
			}
			matchErrors(t, "in.yaml", errs, tt.wantErrs)
		})
	}
}

func TestDecodeStatus(t *testing.T) {
	in := []byte(`apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: a, image: b}]}
status: {phase: Running}
`)
	objs, errs := DecodeStream("pod.yaml", in, DecodeOptions{DropStatus: true})
	if len(errs) > 0 || len(objs) != 1 {
		t.Fatalf("DecodeStream = %v, %v", objs, errs)
	}
	if p := objs[0].Object.(*Pod).Status.Phase; p != "" {
		t.Errorf("dropped status has phase %q", p)
	}
	obj, errs := DecodeObject(in, DecodeOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if p := obj.(*Pod).Status.Phase; p != PodRunning {
		t.Errorf("kept status has phase %q", p)
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "Pod" || gvk.Version != "v1" {
		t.Errorf("TypeMeta = %v", gvk)
	}
}

func TestDecodeObject(t *testing.T) {
	if _, errs := DecodeObject([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"a":1}}`), DecodeOptions{}); len(errs) != 1 || errs[0].Error() != `data[a]: Invalid type: expected string, got number 1` {
		t.Errorf("errors = %q", errs)
	}
	if _, errs := DecodeObject([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"), DecodeOptions{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "expected one object, found 2") {
		t.Errorf("errors = %q", errs)
	}
	if _, errs := DecodeObject(nil, DecodeOptions{}); len(errs) != 1 {
		t.Errorf("errors = %q", errs)
	}
}

func TestDecodedErrors(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app.kubernetes.io/name: "-bad-"
spec:
  replicas: -1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
      - name: web
        image: nginx
`
	objs, errs := DecodeStream("deploy.yaml", []byte(in), DecodeOptions{})
	if len(errs) > 0 || len(objs) != 1 {
		t.Fatalf("DecodeStream = %v, %v", objs, errs)
	}
	got := objs[0].DefaultAndValidate()
	got.Sort()
	matchErrors(t, "deploy.yaml", got, []wantErr{
		{0, 6, "metadata.labels[app.kubernetes.io/name]", `Invalid value: "-bad-"`},
		{0, 8, "spec.replicas", "must be greater than or equal to 0"},
		{0, 18, "spec.template.spec.containers[1].name", `Duplicate value: "web"`},
	})
	for _, e := range got {
		if e.Object() != "Deployment/default/web" {
			t.Errorf("error object = %q", e.Object())
		}
	}
	// A field the manifest leaves out is placed at its nearest parent.
	if l := objs[0].LineOf("spec.template.spec.containers[0].resources.limits"); l != 16 {
		t.Errorf("LineOf(missing field) = %d, want 16", l)
	}
	if l := objs[0].LineOf(""); l != 1 {
		t.Errorf("LineOf(\"\") = %d, want 1", l)
	}
	fe := objs[0].Errors(field.ErrorList{field.Required(nil, "whole object")})
	if fe[0].Field != "" || fe[0].Line != 1 {
		t.Errorf("root error = %+v", fe[0])
	}
}

func TestDuplicates(t *testing.T) {
	a, _ := DecodeStream("a.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"), DecodeOptions{})
	b, _ := DecodeStream("b.yaml", []byte("# again\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: default\n  name: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: other}\n"), DecodeOptions{})
	all := append(a, b...)
	for _, d := range all {
		Default(d.Object)
	}
	errs := Duplicates(all)
	if len(errs) != 1 {
		t.Fatalf("Duplicates = %v", errs)
	}
	want := `b.yaml:doc 0 (line 6): metadata.name: Duplicate value: "x": ConfigMap/default/x is also defined at a.yaml:doc 0 (line 1)`
	if errs[0].Error() != want {
		t.Errorf("got  %s\nwant %s", errs[0], want)
	}
}

// TestDuplicatesAsDefaulted finds the same duplicate in objects that are
// not defaulted, and leaves them as decoded.
func TestDuplicatesAsDefaulted(t *testing.T) {
	a, _ := DecodeStream("a.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"), DecodeOptions{})
	b, _ := DecodeStream("b.yaml", []byte("# again\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: default\n  name: x\n"), DecodeOptions{})
	all := append(a, b...)
	if errs := Duplicates(all); len(errs) != 0 {
		t.Errorf("Duplicates before Default = %v", errs)
	}
	errs := DuplicatesAsDefaulted(all)
	want := `b.yaml:doc 0 (line 6): metadata.name: Duplicate value: "x": ConfigMap/default/x is also defined at a.yaml:doc 0 (line 1)`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("DuplicatesAsDefaulted = %v, want %s", errs, want)
	}
	if ns := all[0].Object.GetNamespace(); ns != "" {
		t.Errorf("the object was given namespace %q", ns)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "a.yaml", Doc: 2, Line: 7, Field: "spec.replicas", Message: "bad"}, "a.yaml:doc 2 (line 7): spec.replicas: bad"},
		{Error{File: "a.json", Doc: 0, Field: "kind", Message: "bad"}, "a.json:doc 0: kind: bad"},
		{Error{File: "a.yaml", Doc: 1, Line: 3, Message: "invalid YAML"}, "a.yaml:doc 1 (line 3): invalid YAML"},
		{Error{File: "dir", Doc: -1, Message: "cannot read"}, "dir: cannot read"},
		{Error{Doc: 0, Line: 4, Field: "spec", Message: "bad"}, "spec: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	var l ErrorList
	if l.Err() != nil {
		t.Error("empty list is an error")
	}
	l = ErrorList{{File: "b", Doc: 0, Message: "x"}, {File: "a", Doc: 1, Line: 2, Message: "y"}, {File: "a", Doc: 1, Line: 1, Message: "z"}}
	l.Sort()
	if got := l.Error(); got != "a:doc 1 (line 1): z\na:doc 1 (line 2): y\nb:doc 0: x" {
		t.Errorf("sorted = %q", got)
	}
	if got, ok := AsErrorList(fmt.Errorf("sync: %w", l.Err())); !ok || len(got) != 3 {
		t.Errorf("AsErrorList = %v, %v", got, ok)
	}
}

func TestSplitPath(t *testing.T) {
	got := fmt.Sprint(splitPath("spec.containers[0].env[12].valueFrom.labels[app.kubernetes.io/name]"))
	want := "[{spec false} {containers false} {0 true} {env false} {12 true} {valueFrom false} {labels false} {app.kubernetes.io/name true}]"
	if got != want {
		t.Errorf("splitPath = %s", got)
	}
}

func TestYAMLErrorLine(t *testing.T) {
	line, msg := yamlErrorLine("yaml: line 3: mapping values are not allowed in this context", 10)
	if line != 12 || msg != "mapping values are not allowed in this context" {
		t.Errorf("got %d %q", line, msg)
	}
	line, msg = yamlErrorLine("yaml: unmarshal errors:\n  line 2: x\n  line 4: y", 5)
	if line != 6 || msg != "yaml: unmarshal errors: line 6: x line 8: y" {
		t.Errorf("got %d %q", line, msg)
	}
	line, _ = yamlErrorLine("yaml: line 1: did not find expected ',' or ']'", 5)
	if line != 6 {
		t.Errorf("parser error line = %d, want 6", line)
	}
	line, msg = yamlErrorLine("yaml: control characters are not allowed", 5)
	if line != 0 || msg != "yaml: control characters are not allowed" {
		t.Errorf("got %d %q", line, msg)
	}
}
