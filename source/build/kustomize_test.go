package build

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

// tree makes a Tree of the files, in name order.
func tree(dir string, files map[string]string) Tree {
	t := Tree{Dir: dir}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		t.Files = append(t.Files, File{Name: name, Data: []byte(files[name])})
	}
	return t
}

// decode decodes what a build produced with berth's decoder.
func decode(t *testing.T, out []File) []*api.Decoded {
	t.Helper()
	var objs []*api.Decoded
	for _, f := range out {
		o, errs := api.DecodeStream(f.Name, f.Data, api.DecodeOptions{DropStatus: true})
		if len(errs) > 0 {
			t.Fatalf("decode %s: %v\n%s", f.Name, errs, f.Data)
		}
		objs = append(objs, o...)
	}
	return objs
}

// overlayRepo is a repository with a base, a component and an overlay
// per environment.
var overlayRepo = map[string]string{
	"base/kustomization.yaml": `
resources: [deploy.yaml, service.yaml]
configMapGenerator:
- name: web-config
  envs: [.env]
`,
	"base/.env": "GREETING=hello\n",
	"base/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0
        envFrom: [{configMapRef: {name: web-config}}]
`,
	"base/service.yaml": `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
`,
	"components/debug/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
commonAnnotations: {debug: "on"}
`,
	"overlays/staging/kustomization.yaml": `
namespace: staging
resources: [../../base]
components: [../../components/debug]
images: [{name: registry.example/web, newTag: "1.1-rc"}]
`,
	"overlays/prod/kustomization.yaml": `
namespace: prod
namePrefix: prod-
resources: [../../base]
patches:
- path: replicas.yaml
images: [{name: registry.example/web, newTag: "1.0.3"}]
`,
	"overlays/prod/replicas.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 3}
`,
}

func TestKustomizeOverlays(t *testing.T) {
	for _, tc := range []struct {
		dir, want string
	}{
		{"overlays/staging", "Deployment/staging/web replicas=1 image=registry.example/web:1.1-rc debug=on Service/staging/web ConfigMap/staging/web-config-*"},
		{"overlays/prod", "Deployment/prod/prod-web replicas=3 image=registry.example/web:1.0.3 debug= Service/prod/prod-web ConfigMap/prod/prod-web-config-*"},
	} {
		out, errs := Build(tree(tc.dir, overlayRepo), Options{})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", tc.dir, errs)
		}
		if len(out) != 1 || out[0].Name != tc.dir+"/kustomization.yaml" {
			t.Fatalf("%s: output files %v", tc.dir, out)
		}
		var got []string
		var cmName, ref string
		for _, d := range decode(t, out) {
			m := d.Object
			name := m.GetName()
			switch o := d.Object.(type) {
			case *api.ConfigMap:
				cmName = name
				if o.Data["GREETING"] != "hello" {
					t.Errorf("%s: generated ConfigMap %v", tc.dir, o.Data)
				}
				name = name[:strings.LastIndexByte(name, '-')] + "-*"
			case *api.Deployment:
				name += " replicas=" + itoa(*o.Spec.Replicas) + " image=" + o.Spec.Template.Spec.Containers[0].Image + " debug=" + m.GetAnnotations()["debug"]
				ref = o.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name
			}
			got = append(got, d.Object.GetObjectKind().GroupVersionKind().Kind+"/"+m.GetNamespace()+"/"+name)
		}
		if ref != cmName {
			t.Errorf("%s: the Deployment refers to %q, not the generated %q", tc.dir, ref, cmName)
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.dir, s, tc.want)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func TestKustomizeRefusesRemote(t *testing.T) {
	for _, tc := range []struct {
		kustomization, field string
	}{
		{"resources: ['github.com/example/repo//base?ref=v1']", "resources[0]"},
		{"resources: [deploy.yaml, 'https://example.com/x.yaml']", "resources[1]"},
		{"resources: [git@example.com:org/repo.git]", "resources[0]"},
		{"patches: [{path: 'http://example.com/p.yaml'}]", "patches[0].path"},
		{"resources: [../base]\n", "resources[0]"}, // the remote is in the base
		{"configMapGenerator: [{name: c, files: ['k=ssh://example.com/f']}]", "configMapGenerator[0].files[0]"},
		{"helmCharts: [{name: x}]", "helmCharts"},
	} {
		files := map[string]string{
			"app/kustomization.yaml":  tc.kustomization,
			"app/deploy.yaml":         overlayRepo["base/service.yaml"],
			"base/kustomization.yaml": "resources: ['git::https://example.com/org/repo//x']",
		}
		_, errs := Build(tree("app", files), Options{})
		if len(errs) != 1 || errs[0].Field != tc.field {
			t.Errorf("%q: %v; want one error at %s", tc.kustomization, errs, tc.field)
			continue
		}
		want := "app/kustomization.yaml"
		if tc.kustomization == "resources: [../base]\n" {
			want = "base/kustomization.yaml"
		}
		if errs[0].File != want {
			t.Errorf("%q: the error names %s, want %s", tc.kustomization, errs[0].File, want)
		}
	}
}

func TestKustomizeErrorsNameTheFile(t *testing.T) {
	files := map[string]string{
		"app/kustomization.yaml": "resources: [missing.yaml]\n",
	}
	_, errs := Build(tree("app", files), Options{})
	if len(errs) != 1 || errs[0].File != "app/kustomization.yaml" || !strings.Contains(errs[0].Message, "missing.yaml") {
		t.Errorf("errors %v", errs)
	}
	files = map[string]string{"app/kustomization.yaml": "resources: [\n"}
	_, errs = Build(tree("app", files), Options{})
	if len(errs) != 1 || errs[0].File != "app/kustomization.yaml" {
		t.Errorf("errors %v", errs)
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  Kind
	}{
		{[]string{"a.yaml"}, Plain},
		{[]string{"kustomization.yml"}, Kustomize},
		{[]string{"Kustomization"}, Kustomize},
		{[]string{"Chart.yaml", "kustomization.yaml"}, Kustomize},
		{[]string{"Chart.yaml"}, Chart},
	} {
		if got := KindOf(func(n string) bool { return slices.Contains(tc.names, n) }); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestRemote(t *testing.T) {
	for ref, want := range map[string]bool{
		"../base": false, "deploy.yaml": false, "github.com/org/repo": true, "GitHub.com/org/repo": true,
		"https://example.com/x": true, "git::https://x/y": true, "user@host:repo": true, "file:///etc/passwd": true,
		"a/b@c": false, "ssh://git@x/y": true,
	} {
		if got := remote(ref); got != want {
			t.Errorf("remote(%q) = %v", ref, got)
		}
	}
}

// FuzzKustomization builds a fuzzed kustomization over a fixed base: it
// never panics, never reaches outside the tree, and every error names a
// file of it.
func FuzzKustomization(f *testing.F) {
	for _, s := range []string{
		overlayRepo["overlays/prod/kustomization.yaml"],
		overlayRepo["overlays/staging/kustomization.yaml"],
		"resources: [github.com/x/y]",
		"namePrefix: [",
		"patches: [{patch: '[{\"op\": \"add\"}]', target: {kind: Deployment}}]",
		"replicas: [{name: web, count: -1}]\nresources: [../../base]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		files := maps.Clone(overlayRepo)
		files["overlays/prod/kustomization.yaml"] = k
		out, errs := Build(tree("overlays/prod", files), Options{})
		for _, e := range errs {
			if _, ok := files[e.File]; !ok {
				t.Fatalf("error names no file of the tree: %v", e)
			}
		}
		if len(errs) == 0 && len(out) != 1 {
			t.Fatalf("no error and %d outputs", len(out))
		}
	})
}
