package source

import (
	"fmt"
	"testing"
)

// thousand is 1,000 objects, one file each: 500 Deployments and 500
// ConfigMaps, under base/.
func thousand() []File {
	files := make([]File, 0, 1000)
	for i := range 500 {
		files = append(files,
			File{Name: fmt.Sprintf("base/cm-%03d.yaml", i), Data: []byte(configMap(fmt.Sprintf("cm-%03d", i)))},
			File{Name: fmt.Sprintf("base/deploy-%03d.yaml", i), Data: fmt.Appendf(nil, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%03d, labels: {app: web-%03d}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web-%03d}}
  template:
    metadata: {labels: {app: web-%03d}}
    spec:
      containers:
      - {name: web, image: "registry.example/web:1.0", ports: [{containerPort: 8080}]}
`, i, i, i, i)})
	}
	return files
}

// BenchmarkDecodePlain1000 is today's path: 1,000 manifest files decoded
// afresh (a new Decoder, no cache).
func BenchmarkDecodePlain1000(b *testing.B) {
	c := Contents{Files: thousand()}
	b.ReportAllocs()
	for b.Loop() {
		var d Decoder
		if objs, errs := d.Decode(c); len(objs) != 1000 || len(errs) > 0 {
			b.Fatal(len(objs), errs)
		}
	}
}

// BenchmarkDecodeKustomize1000 is the same 1,000 objects as a kustomize
// base under an overlay (namespace, name prefix, labels, an image and a
// patch of every Deployment), built and then decoded afresh.
func BenchmarkDecodeKustomize1000(b *testing.B) {
	files := thousand()
	k := []byte("resources:\n")
	for _, f := range files {
		k = append(k, "- "+f.Name[len("base/"):]+"\n"...)
	}
	files = append(files,
		File{Name: "base/kustomization.yaml", Data: k},
		File{Name: "overlays/prod/kustomization.yaml", Data: []byte(`namespace: prod
namePrefix: prod-
labels: [{pairs: {env: prod}}]
resources: [../../base]
images: [{name: registry.example/web, newTag: "1.0.3"}]
patches:
- target: {kind: Deployment}
  patch: |
    - {op: replace, path: /spec/replicas, value: 3}
`)})
	c := Contents{Files: files, BuildDir: "overlays/prod"}
	b.ReportAllocs()
	for b.Loop() {
		var d Decoder
		if objs, errs := d.Decode(c); len(objs) != 1000 || len(errs) > 0 {
			b.Fatal(len(objs), errs)
		}
	}
}
