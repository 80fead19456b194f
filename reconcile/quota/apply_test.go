package quota

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

// TestApplierMeetsQuota applies a revision that holds one config map too
// many for the namespace's quota: the revision, one transaction, is
// refused whole with the quota's message, and nothing of it is written.
func TestApplierMeetsQuota(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	api.Default(ns)
	mustCreate(t, s, ns)
	mustCreate(t, s, &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: api.SourceSpec{Type: api.SourceTypeGit, URL: "file:///repo"}})
	mustCreate(t, s, newQuota("default", "objects", rl("configmaps", "1")))

	manifests := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
	objs, errs := api.DecodeStream("config.yaml", []byte(manifests), api.DecodeOptions{DropStatus: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := apply.New(s, apply.Options{Logger: slog.New(slog.DiscardHandler)})
	res, err := a.Apply(ctx, "fleet", source.Revision{ID: "r1", Objects: objs}, apply.ApplyOptions{})
	if err != nil || res.Ready || res.Reason != api.ReasonForbidden ||
		!strings.Contains(res.Message, "exceeded quota: objects, requested: configmaps=1, used: configmaps=1, limited: configmaps=1") {
		t.Fatalf("apply over quota: %v %+v", err, res)
	}
	obj, err := s.Get(api.MustLookupResource("sources"), "", "fleet")
	if err != nil {
		t.Fatal(err)
	}
	if c := obj.(*api.Source).Status.Conditions; len(c) == 0 || c[0].Reason != api.ReasonForbidden || !strings.Contains(c[0].Message, "exceeded quota") {
		t.Errorf("source status after a refused revision: %+v", c)
	}
	if cms, _, _ := s.List(configMapKind, store.Filter{Namespace: "default"}); len(cms) != 0 {
		t.Fatalf("%d config maps written by a refused revision", len(cms))
	}
	if got := used(t, s, "default", "objects"); got != "configmaps=0" {
		t.Fatalf("used %q after a refused revision", got)
	}
}
