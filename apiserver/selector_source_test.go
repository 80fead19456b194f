package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/client"
)

// A list or watch of any kind selects one source's objects by the
// berth.dev/source annotation; the others, and objects of no source, are
// left out, and an object that leaves the source is Deleted to the watch.
func TestSourceFieldSelectsOneSourcesObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cm := func(name, source string) *api.ConfigMap {
		m := metav1.ObjectMeta{Namespace: "default", Name: name}
		if source != "" {
			m.Annotations = map[string]string{api.AnnotationSource: source}
		}
		return &api.ConfigMap{ObjectMeta: m}
	}
	for _, o := range []*api.ConfigMap{cm("a1", "alpha"), cm("a2", "alpha"), cm("b1", "beta"), cm("none", "")} {
		e.mustCreate(o)
	}
	k := api.KindOf(&api.ConfigMap{})
	names := func(objs []api.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	for sel, want := range map[string]string{
		apiserver.SourceField + "=alpha":                              "[a1 a2]",
		apiserver.SourceField + "==beta":                              "[b1]",
		apiserver.SourceField + "=gamma":                              "[]",
		apiserver.SourceField + "=alpha,metadata.name=a2":             "[a2]",
		apiserver.SourceField + "!=alpha":                             "[b1 none]",
		apiserver.SourceField + "=":                                   "[none]",
		apiserver.SourceField + "=alpha,metadata.namespace=elsewhere": "[]",
	} {
		objs, _, err := e.client.List(ctx, k, "", client.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if got := fmt.Sprint(names(objs)); got != want {
			t.Errorf("%s: %s, want %s", sel, got, want)
		}
	}
	code, _, body := e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.annotations.other%3Dx", adminToken, "", "", nil)
	if code != http.StatusBadRequest || !contains(string(body), "field label not supported") {
		t.Errorf("another annotation: %d %s", code, body)
	}

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, rv, err := e.client.List(ctx, k, "", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.client.Watch(wctx, k, "default", client.WatchOptions{ListOptions: client.ListOptions{FieldSelector: apiserver.SourceField + "=alpha"}, ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e.mustCreate(cm("b2", "beta"))
	e.mustCreate(cm("a3", "alpha"))
	ev, err := w.Next(wctx)
	if err != nil || ev.Type != client.Added || ev.Object.GetName() != "a3" {
		t.Fatalf("first event %v %v, want a3 Added (b2 is beta's)", ev.Type, err)
	}
	obj, err := e.client.Get(ctx, k, "default", "a1")
	if err != nil {
		t.Fatal(err)
	}
	obj.SetAnnotations(map[string]string{api.AnnotationSource: "beta"})
	if _, err := e.client.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	ev, err = w.Next(wctx)
	if err != nil || ev.Type != client.Deleted || ev.Object.GetName() != "a1" {
		t.Fatalf("event %v %v, want a1 Deleted (moved to beta)", ev.Type, err)
	}
}
