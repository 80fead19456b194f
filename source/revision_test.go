package source

import (
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

const cmYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  k: v
`

func configMap(name string) string { return strings.ReplaceAll(cmYAML, "%s", name) }

func TestDecodeOrderAndErrors(t *testing.T) {
	c := Contents{
		Files: []File{
			{Name: "b/two.yaml", Data: []byte(configMap("two") + "---\n" + configMap("three"))},
			{Name: "a.yaml", Data: []byte(configMap("one"))},
			{Name: "bad.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndatta: {}\n")},
		},
		Problems: api.ErrorList{TooBig("huge.yaml", 11<<20)},
	}
	objs, errs := c.Decode()
	var names []string
	for _, d := range objs {
		names = append(names, d.File+"/"+d.Object.GetName())
	}
	if got, want := strings.Join(names, " "), "a.yaml/one b/two.yaml/two b/two.yaml/three"; got != want {
		t.Errorf("objects %s; want %s", got, want)
	}
	if objs[2].Doc != 1 || objs[2].Line != 8 {
		t.Errorf("third object at doc %d line %d; want doc 1 line 8", objs[2].Doc, objs[2].Line)
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v; want 2", errs)
	}
	if e := errs[0]; e.File != "bad.yaml" || e.Doc != 0 || e.Field != "datta" || !strings.Contains(e.Message, "unknown field") {
		t.Errorf("first error %v; want bad.yaml doc 0 field datta", e)
	}
	if e := errs[1]; e.File != "huge.yaml" || e.Doc != -1 || !strings.Contains(e.Message, "10 MiB") {
		t.Errorf("second error %v; want huge.yaml too big", e)
	}
}

func TestDecodeDuplicatesAcrossFiles(t *testing.T) {
	withNS := strings.Replace(configMap("app"), "  name: app\n", "  name: app\n  namespace: default\n", 1)
	c := Contents{Files: []File{
		{Name: "a.yaml", Data: []byte(configMap("app"))},
		{Name: "b.yaml", Data: []byte(withNS)},
		{Name: "c.yaml", Data: []byte(strings.Replace(withNS, "default", "other", 1))},
	}}
	objs, errs := c.Decode()
	if len(objs) != 3 {
		t.Fatalf("%d objects; want 3", len(objs))
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v; want one duplicate", errs)
	}
	e := errs[0]
	if e.File != "b.yaml" || e.Field != "metadata.name" || !strings.Contains(e.Message, "ConfigMap/default/app is also defined at a.yaml:doc 0") {
		t.Errorf("duplicate error %q", e)
	}
	if ns := objs[0].Object.GetNamespace(); ns != "" {
		t.Errorf("the object without a namespace came back with %q; Decode must leave objects as decoded", ns)
	}
}

func TestContentHash(t *testing.T) {
	a := Contents{Files: []File{{Name: "a.yaml", Data: []byte("x")}, {Name: "b.yaml", Data: []byte("y")}}}
	b := Contents{Files: []File{{Name: "b.yaml", Data: []byte("y")}, {Name: "a.yaml", Data: []byte("x")}}}
	if a.ContentHash() != b.ContentHash() {
		t.Error("the hash depends on the order files were read in")
	}
	if !strings.HasPrefix(a.ContentHash(), "sha256:") || len(a.ContentHash()) != len("sha256:")+64 {
		t.Errorf("hash %q; want sha256:<64 hex>", a.ContentHash())
	}
	for name, c := range map[string]Contents{
		"renamed":     {Files: []File{{Name: "a.yaml", Data: []byte("x")}, {Name: "c.yaml", Data: []byte("y")}}},
		"edited":      {Files: []File{{Name: "a.yaml", Data: []byte("x")}, {Name: "b.yaml", Data: []byte("z")}}},
		"split":       {Files: []File{{Name: "a.yaml", Data: []byte("xb.yaml")}, {Name: "", Data: []byte("y")}}},
		"problematic": {Files: a.Files, Problems: api.ErrorList{TooBig("c.yaml", -1)}},
	} {
		if c.ContentHash() == a.ContentHash() {
			t.Errorf("%s contents hash like the original", name)
		}
	}
}
