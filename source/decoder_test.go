package source

import (
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestDecoderReusesUnchangedFiles(t *testing.T) {
	var d Decoder
	a := File{Name: "a.yaml", Data: []byte(configMap("a"))}
	b := File{Name: "b.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\nbogus: 1\n")}
	objs1, errs1 := d.Decode(Contents{Files: []File{a, b}})
	if len(objs1) != 1 || len(errs1) != 1 {
		t.Fatalf("first decode: %d objects, errors %v", len(objs1), errs1)
	}
	// A namespaced object with no namespace: the duplicate check must see
	// it as in "default" without changing the shared object.
	if ns := objs1[0].Object.GetNamespace(); ns != "" {
		t.Fatalf("the decoded object was given namespace %q", ns)
	}

	c := File{Name: "c.yaml", Data: []byte(configMap("c"))}
	dup := File{Name: "d.yaml", Data: []byte(strings.Replace(configMap("a"), "name: a", "name: a\n  namespace: default", 1))}
	objs2, errs2 := d.Decode(Contents{Files: []File{c, a, b, dup}})
	if len(objs2) != 3 || objs2[0].Object.GetName() != "a" || objs2[1].Object.GetName() != "c" {
		t.Fatalf("second decode: %v", objs2)
	}
	if objs2[0] != objs1[0] {
		t.Error("an unchanged file did not give back the very same decoded object")
	}
	if ns := objs2[0].Object.GetNamespace(); ns != "" {
		t.Errorf("the duplicate check left namespace %q on a shared object", ns)
	}
	if len(errs2) != 2 || !strings.Contains(errs2.Err().Error(), "unknown field") || !strings.Contains(errs2.Err().Error(), "also defined at a.yaml") {
		t.Errorf("second decode errors %v", errs2)
	}
	if errs2[0] == errs1[0] || errs2[1] == errs1[0] {
		t.Error("a kept error was handed out; a receiver may change its errors")
	}
	if objs2[0].LineOf("data.k") != 6 {
		t.Errorf("a reused object lost its positions: line %d", objs2[0].LineOf("data.k"))
	}

	// A file that changes is decoded again; one that goes is forgotten.
	a2 := File{Name: "a.yaml", Data: []byte(strings.Replace(configMap("a"), "k: v", "k: w", 1))}
	objs3, _ := d.Decode(Contents{Files: []File{a2}})
	if len(objs3) != 1 || objs3[0].Object.(*api.ConfigMap).Data["k"] != "w" {
		t.Errorf("a changed file: %v", objs3)
	}
	if objs3[0] == objs1[0] || objs1[0].Object.(*api.ConfigMap).Data["k"] != "v" {
		t.Error("a changed file reused or changed the previous revision's object")
	}
	if len(d.files) != 1 {
		t.Errorf("the decoder keeps %d files; want the last revision's one", len(d.files))
	}
}

func sumOf(f File) string {
	var d Decoder
	d.Decode(Contents{Files: []File{f}})
	for k := range d.files {
		return k.sum
	}
	return ""
}

// TestDecoderValidatesTheRest: a revision's document with a value of the
// wrong type also reports the validation errors of its other fields, so
// that Ready=False carries every error of the document at once.
func TestDecoderValidatesTheRest(t *testing.T) {
	f := File{Name: "web.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Web\n  labels:\n    app: [web]\ndata:\n  k: v\n")}
	_, errs := Contents{Files: []File{f}}.Decode()
	got := errs.Err()
	if len(errs) != 2 || got == nil ||
		!strings.Contains(got.Error(), "web.yaml:doc 0 (line 6): metadata.labels[app]: Invalid type") ||
		!strings.Contains(got.Error(), `web.yaml:doc 0 (line 4): metadata.name: Invalid value: "Web"`) {
		t.Errorf("errors %v", errs)
	}
}
