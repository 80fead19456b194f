package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
)

// staticFuzzGood is a manifest that reads well, the fuzzed file's last
// good content.
const staticFuzzGood = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: berth, command: [sleep, "60"]}
`

// staticFuzzOther is a second file of the directory, good throughout.
const staticFuzzOther = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other","namespace":"ops"},"spec":{"containers":[{"name":"c","image":"i"}]}}`

// FuzzStaticManifest feeds a manifest directory's file arbitrary bytes,
// through the decoding a --manifest-dir revision takes: it must never
// panic; every error names the file and the document; a file that fails
// keeps its last good pods and costs the other file nothing; and the pods
// it yields are bound to the node, named for it, and valid.
func FuzzStaticManifest(f *testing.F) {
	for _, seed := range []string{
		staticFuzzGood,
		staticFuzzGood + "---\n" + strings.Replace(staticFuzzGood, "web", "db", 1),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: []}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: Web_}\nspec:\n  containers: [{name: a, image: i}]\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: kube-system, uid: x, resourceVersion: \"3\"}\nspec:\n  nodeName: elsewhere\n  containers: [{name: a, image: i}]\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: " + strings.Repeat("a", 250) + "}\nspec:\n  containers: [{name: a, image: i}]\n",
		"kind: Pod\nspec: [\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"",
		"",
		"---\n",
		staticFuzzOther,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const node = "n1"
		s, err := NewStaticPods(StaticOptions{NodeName: node, ManifestDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		src := s.sources[0]
		revision := func(fuzzed []byte) source.Revision {
			return source.Contents{Files: []source.File{
				{Name: "fuzz.yaml", Data: fuzzed},
				{Name: "other.json", Data: []byte(staticFuzzOther)},
			}}.Revision("rev")
		}
		if errs := s.apply(src, revision([]byte(staticFuzzGood))); len(errs) > 0 {
			t.Fatalf("good manifest: %v", errs)
		}
		good := src.files["fuzz.yaml"]
		if len(good) != 1 {
			t.Fatalf("good manifest gave %d pods", len(good))
		}

		errs := s.apply(src, revision(data))
		fuzzBroken := false
		for _, err := range errs {
			msg := err.Error()
			if !strings.Contains(msg, "fuzz.yaml") || !strings.Contains(msg, "doc") {
				t.Errorf("error does not name the file and document: %q", msg)
			}
			// Only a duplicate object may be told as the other file's
			// error, and then it names the fuzzed file as well.
			if strings.HasPrefix(msg, "static pods: fuzz.yaml:") || strings.HasPrefix(msg, "static pods "+filepath.Join(src.base, "fuzz.yaml")+":") {
				fuzzBroken = true
			} else if !strings.Contains(msg, "Duplicate value") {
				t.Errorf("error blames the good file: %q", msg)
			}
		}
		if len(src.files["other.json"]) != 1 || src.files["other.json"][0].Name != "other-"+node {
			t.Fatalf("the other file's pods: %v", src.files["other.json"])
		}
		got := src.files["fuzz.yaml"]
		if fuzzBroken {
			if len(got) != 1 || got[0].UID != good[0].UID {
				t.Fatalf("after %v the file's last good pod is lost: %v", errs, got)
			}
			return
		}
		for _, p := range got {
			switch {
			case p.Spec.NodeName != node:
				t.Errorf("pod %s bound to %q", p.Name, p.Spec.NodeName)
			case !strings.HasSuffix(p.Name, "-"+node):
				t.Errorf("pod %s not named for the node", p.Name)
			case p.UID == "" || p.Annotations[pods.AnnotationConfigHash] != string(p.UID):
				t.Errorf("pod %s: uid %q, hash %q", p.Name, p.UID, p.Annotations[pods.AnnotationConfigHash])
			case p.Annotations[pods.AnnotationConfigSource] != pods.ConfigSourceFile:
				t.Errorf("pod %s: config source %q", p.Name, p.Annotations[pods.AnnotationConfigSource])
			}
			if errs := api.Validate(p); len(errs) > 0 {
				t.Errorf("pod %s accepted yet invalid: %v", p.Name, errs)
			}
		}
	})
}
