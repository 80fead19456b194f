package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func TestDiffAgainstServer(t *testing.T) {
	berth := berthAgainstServer(t)
	dir := t.TempDir()
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: web:1
`
	file := filepath.Join(dir, "web.yaml")
	writeFile(t, file, deploy)

	// Nothing live: everything is added.
	r := berth("diff", "-f", file)
	if r.code != exitFailure || !strings.HasPrefix(r.stdout, "--- live/deployment.apps/default/web\n+++ merged/deployment.apps/default/web\n") ||
		!strings.Contains(r.stdout, "\n+  replicas: 2\n") || !strings.Contains(r.stdout, "+    berth.dev/source: api\n") {
		t.Fatalf("diff of a new object: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	if r := berth("apply", "-f", file); r.code != exitOK {
		t.Fatalf("apply: %s", r.stderr)
	}
	r = berth("diff", "-f", file)
	if r.code != exitOK || r.stdout != "" {
		t.Errorf("diff after apply: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	writeFile(t, file, strings.Replace(strings.Replace(deploy, "replicas: 2", "replicas: 3", 1), "web:1", "web:2", 1))
	r = berth("diff", "-f", file)
	if r.code != exitFailure {
		t.Errorf("diff of a change: exit %d\nstderr: %s", r.code, r.stderr)
	}
	for _, want := range []string{"-  replicas: 2\n", "+  replicas: 3\n", "-      - image: web:1\n", "+      - image: web:2\n", "@@ "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, unwanted := range []string{"resourceVersion", "uid:", "creationTimestamp", "status:", api.AnnotationLastAppliedConfig} {
		if strings.Contains(r.stdout, unwanted) {
			t.Errorf("diff shows %q:\n%s", unwanted, r.stdout)
		}
	}

	writeFile(t, filepath.Join(dir, "bad.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndatta: {}\n")
	r = berth("diff", "-f", dir)
	if r.code != exitUsage || !strings.Contains(r.stderr, `bad.yaml:doc 0 (line 5): datta: unknown field "datta"`) {
		t.Errorf("diff of an invalid manifest: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if r := berth("diff", "-f", filepath.Join(dir, "none.yaml")); r.code != exitUsage {
		t.Errorf("diff of a missing file: exit %d", r.code)
	}
	if r := runBerth(t, "", "diff", "-f", file, "--kubeconfig", filepath.Join(dir, "nope")); r.code != exitUsage {
		t.Errorf("diff without a server: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestDiffDocumentLeavesServerFieldsOut(t *testing.T) {
	k := api.KindOf(&api.ConfigMap{})
	cm := &api.ConfigMap{Data: map[string]string{"a": "1"}}
	cm.Name, cm.Namespace, cm.UID, cm.ResourceVersion, cm.Generation = "x", "default", "u", "7", 3
	cm.Annotations = map[string]string{api.AnnotationLastAppliedConfig: "{}"}
	got, err := diffDocument(k, cm)
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\ndata:\n  a: \"1\"\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestDiffClaimUnreadable: a caller who may not read Sources (a
// service account's read-only token in CI) still diffs an object a source
// claims, with the note that apply would refuse it, and apply refuses it
// as owned, rather than both failing on the Source they cannot read.
func TestDiffClaimUnreadable(t *testing.T) {
	cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings", Annotations: map[string]string{api.AnnotationSource: "fleet"}},
		Data: map[string]string{"k": "old"}}
	f := newFakeAPI(cm)
	f.fail["get sources /fleet"] = apierrors.NewForbidden(api.KindOf(&api.Source{}).GroupResource(), "fleet", errors.New("not allowed"))
	useFakeAPI(t, f)
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: new}\n"
	d := runBerth(t, manifest, "diff", "-f", "-")
	if d.code != exitFailure || !strings.Contains(d.stdout, "+  k: new") ||
		!strings.Contains(d.stderr, `note: configmap/settings is owned by source "fleet"`) {
		t.Errorf("diff: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	r := runBerth(t, manifest, "apply", "-f", "-")
	if r.code != exitFailure || !strings.Contains(r.stderr, `configmap/settings is owned by source "fleet"`) {
		t.Errorf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := f.objects["configmaps/default/settings"].(*api.ConfigMap).Data["k"]; got != "old" {
		t.Errorf("apply changed the claimed object: k=%q", got)
	}
}
