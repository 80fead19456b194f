package build

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/berth-dev/berth/api"
)

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// helmCreate lays out a chart as `helm create` does, under charts/web of
// a tree, with a CRD in its crds/ folder.
func helmCreate(t testing.TB) []File {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "charts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Create("web", filepath.Join(root, "charts")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "charts/web/crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "charts/web/crds/widget.yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files = append(files, File{Name: filepath.ToSlash(rel), Data: data})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestHelmChart(t *testing.T) {
	files := helmCreate(t)
	opts := Options{Helm: Helm{ReleaseName: "shop", Namespace: "prod", Values: []File{
		{Name: "ConfigMap/prod/web-values key values.yaml", Data: []byte("replicaCount: 2\nimage: {tag: '1.27'}\n")},
		{Name: "values", Data: []byte("replicaCount: 3\n")},
	}}}
	out, errs := Build(Tree{Files: files, Dir: "charts/web"}, opts)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var names []string
	for _, f := range out {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "charts/web/crds/widget.yaml charts/web/templates/deployment.yaml charts/web/templates/service.yaml charts/web/templates/serviceaccount.yaml" {
		t.Errorf("rendered files: %s (CRDs first, no hooks, partials nor notes)", got)
	}
	// berth's decoder takes no CustomResourceDefinition from a source yet:
	// the CRD's place is checked above, the rest decoded.
	for _, d := range decode(t, out[1:]) {
		if dep, ok := d.Object.(*api.Deployment); ok {
			if dep.Name != "shop-web" || *dep.Spec.Replicas != 3 || dep.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
				t.Errorf("Deployment %s: replicas %d, image %s", dep.Name, *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image)
			}
		}
		if d.Object.GetNamespace() != "" && d.Object.GetNamespace() != "prod" {
			t.Errorf("%s in namespace %s", d.Object.GetName(), d.Object.GetNamespace())
		}
	}

	// Values that are not a map, and a template that fails: the file is
	// named.
	opts.Helm.Values = []File{{Name: "values", Data: []byte("- a list\n")}}
	if _, errs := Build(Tree{Files: files, Dir: "charts/web"}, opts); len(errs) != 1 || errs[0].File != "values" {
		t.Errorf("values not a map: %v", errs)
	}
	opts.Helm.Values = []File{{Name: "values", Data: []byte("service: {port: {a: 1}}\nreplicaCount: [1]\n")}}
	out, errs = Build(Tree{Files: files, Dir: "charts/web"}, opts)
	if len(errs) == 0 {
		// Helm renders a wrong type as text: berth's decoder names the
		// template, document and field.
		var derrs api.ErrorList
		for _, f := range out {
			_, e := api.DecodeStream(f.Name, f.Data, api.DecodeOptions{DropStatus: true})
			derrs = append(derrs, e...)
		}
		if len(derrs) == 0 || !strings.Contains(derrs.Error(), "charts/web/templates/deployment.yaml") || !strings.Contains(derrs.Error(), "spec.replicas") {
			t.Errorf("a value of the wrong type: %v", derrs)
		}
	}
}

func TestHelmRenderErrorNamesTheChart(t *testing.T) {
	files := append(helmCreate(t), File{Name: "charts/web/templates/bad.yaml", Data: []byte("{{ .Values.nope.deeper }}")})
	_, errs := Build(Tree{Files: files, Dir: "charts/web"}, Options{})
	if len(errs) != 1 || errs[0].File != "charts/web/Chart.yaml" || !strings.Contains(errs[0].Message, "templates/bad.yaml") {
		t.Errorf("errors %v", errs)
	}
}

func FuzzMergeValues(f *testing.F) {
	f.Add("replicaCount: 3\nimage: {tag: x}\n", "image: {repository: y}\n")
	f.Add("- 1", "a: [")
	f.Add("a: {b: {c: 1}}", "a: {b: 2}")
	f.Fuzz(func(t *testing.T, a, b string) {
		merged, errs := MergeValues([]File{{Name: "a", Data: []byte(a)}, {Name: "b", Data: []byte(b)}})
		for _, e := range errs {
			if e.File != "a" && e.File != "b" {
				t.Fatalf("error names no values: %v", e)
			}
		}
		if merged == nil {
			t.Fatal("nil values")
		}
	})
}
