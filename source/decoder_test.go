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
	keptA := d.files[fileKey{"a.yaml", sumOf(a)}].objs[0]

	// The caller changes what it got: defaulting, a label.
	objs1[0].Object.SetLabels(map[string]string{"changed": "yes"})
	errs1[0].Message = "changed"

	c := File{Name: "c.yaml", Data: []byte(configMap("c"))}
	objs2, errs2 := d.Decode(Contents{Files: []File{c, a, b}})
	if len(objs2) != 2 || objs2[0].Object.GetName() != "a" || objs2[1].Object.GetName() != "c" {
		t.Fatalf("second decode: %v", objs2)
	}
	if objs2[0].Object.GetLabels() != nil {
		t.Error("a change to a returned object reached the next revision")
	}
	if len(errs2) != 1 || !strings.Contains(errs2[0].Message, "unknown field") {
		t.Errorf("second decode errors %v", errs2)
	}
	if objs2[0] == keptA || objs2[0].Object == keptA.Object {
		t.Error("the kept object was handed out")
	}
	if kept := d.files[fileKey{"a.yaml", sumOf(a)}].objs[0]; kept != keptA {
		t.Error("an unchanged file was decoded again")
	}
	if objs2[0].LineOf("data.k") != 6 {
		t.Errorf("a copied object lost its positions: line %d", objs2[0].LineOf("data.k"))
	}

	// A file that changes is decoded again; one that goes is forgotten.
	a2 := File{Name: "a.yaml", Data: []byte(strings.Replace(configMap("a"), "k: v", "k: w", 1))}
	objs3, _ := d.Decode(Contents{Files: []File{a2}})
	if len(objs3) != 1 || objs3[0].Object.(*api.ConfigMap).Data["k"] != "w" {
		t.Errorf("a changed file: %v", objs3)
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
