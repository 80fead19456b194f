package api

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestPlainKeys(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"block keys", "a: 1\nb:\n  c: 2\n- d: 3\n", true},
		{"quoted key", "a: 1\n\"a\": 2\n", false},
		{"tag, anchor, alias, explicit key, merge", "!t a: 1\n", false},
		{"anchor", "&x a: 1\n", false},
		{"merge key", "<<: *x\n", false},
		{"flow value", "labels: {app: web, tier: front}\n", true},
		{"flow item", "ports:\n- {name: http, port: 80}\n", true},
		{"flow in a sequence", "ports: [{name: http, port: 80}, {name: https, port: 443}]\n", true},
		{"nested flows", "spec: {selector: {matchLabels: {app: a}}, ports: [1, 2]}\n", true},
		{"empty flow mapping", "labels: {}\n", true},
		{"root flow", "{a: 1, b: {c: 2}}\n", true},
		{"value with a colon", "env: {url: http://x:80/y}\n", true},
		{"quoted key in a flow", "labels: {app: a, \"app\": b}\n", false},
		{"quoted values in a flow", "env: {name: A, value: \"a, b}\"}\nx: ['it''s', \"q\\\"}\"]\n", true},
		{"quote inside a plain value", "m: {a: it's, b: 2}\n", true},
		{"quoted key in a sequence's single pair", "m: [\"a\": 1, b: 2]\n", true},
		{"quoted key after a plain one", "m: {a: 1, 'a': 2}\n", false},
		{"unterminated quote", "m: {a: \"x}\n", false},
		{"colon in a mapping's value", "m: {a: b: c}\n", false},
		{"tag in a value", "m: {a: !!str 1}\n", false},
		{"flow over two lines", "labels: {app: a,\n  tier: b}\n", false},
		{"comment after a flow", "labels: {app: a} # {x}\n", false},
		{"text after a flow", "labels: {app: a} b\n", false},
		{"unbalanced", "labels: {app: [a}\n", false},
		{"collection as a key", "m: {{a: 1}: 2}\n", false},
		{"sequence as a key", "m: {[a]: 2}\n", false},
		{"empty key", "m: {: 2}\n", false},
		{"trailing comma", "m: {a: 1, }\n", false},
		{"dash key", "m: {- a: 1}\n", false},
		{"brace in a plain value", "cmd: echo {a}\n", false},
		{"brace in a key", "a{b: {c: 1}\n", false},
		{"brace without space after the colon", "key:{a: 1}\n", false},
		{"tab after the colon", "labels:\t{app: a}\n", true},
		{"brace in a block scalar", "script: |\n  if x { y }\n", false},
		{"block scalar of a flow", "script: |\n  x: {a: 1, a: 2}\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainKeys([]byte(tt.in)); got != tt.want {
				t.Errorf("plainKeys(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzPlainKeys holds plainKeys to its promise: whenever it says a
// document's keys are all plain, the strict conversion fails on every
// document whose node tree repeats a key, so the decoder may skip building
// the tree.
func FuzzPlainKeys(f *testing.F) {
	for _, seed := range []string{
		"a: 1\na: 2\n",
		"labels: {app: a, app: b}\n",
		"ports: [{name: a, name: b}]\n",
		"m: {a: {b: 1, b: 2}}\n",
		"labels: {app: a, \"app\": b}\n",
		"m: {1: a, 01: b}\n",
		"m: {yes: a, true: b}\n",
		"m: {a: 1}\nm: 2\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !plainKeys(data) {
			return
		}
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return
		}
		if !repeatsKey(&root, 0) {
			return
		}
		if _, err := yamlToJSON(data, true); err == nil {
			t.Fatalf("plainKeys says plain, the node tree repeats a key, and the strict conversion took it:\n%s", data)
		}
	})
}

// repeatsKey reports whether a mapping under n has two scalar keys spelt
// the same.
func repeatsKey(n *yaml.Node, depth int) bool {
	if n == nil || depth > 100 {
		return false
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag != "!!merge" {
				if seen[k.Value] {
					return true
				}
				seen[k.Value] = true
			}
		}
	}
	for _, c := range n.Content {
		if repeatsKey(c, depth+1) {
			return true
		}
	}
	return false
}

func BenchmarkDecodeFlowStyle(b *testing.B) {
	doc := []byte(strings.TrimSpace(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        command: ["sleep", "3600"]
        ports: [{name: http, containerPort: 8080}]
        resources:
          requests: {cpu: 10m, memory: 16Mi}
`) + "\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := DecodeStream("web.yaml", doc, DecodeOptions{}); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
