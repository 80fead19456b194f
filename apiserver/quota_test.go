package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/reconcile/quota"
	"github.com/berth-dev/berth/store"
)

// TestQuotaRefusal posts pods past a ResourceQuota enforced by the store
// hook: the one over is a 403 in Kubernetes' words, and the quota's
// status shows what is used.
func TestQuotaRefusal(t *testing.T) {
	e := newEnv(t, func(s *setup) { s.store.Admit = []store.AdmitFunc{quota.Admit} })
	e.mustCreate(&api.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compute"},
		Spec:       api.ResourceQuotaSpec{Hard: api.ResourceList{api.ResourcePods: resource.MustParse("2")}},
	})
	post := func(name string) (int, []byte) {
		body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"main","image":"busybox","command":["sleep","1000"]}]}}`
		code, _, data := e.do(http.MethodPost, "/api/v1/namespaces/default/pods", adminToken, "application/json", "", strings.NewReader(body))
		return code, data
	}
	for _, name := range []string{"a", "b"} {
		if code, data := post(name); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", name, code, data)
		}
	}
	code, data := post("c")
	st := status(t, code, data, http.StatusForbidden)
	want := `pods "c" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2`
	if st.Reason != metav1.StatusReasonForbidden || st.Message != want {
		t.Fatalf("Status %s %q\nwant %q", st.Reason, st.Message, want)
	}
	// A kind the quota does not limit passes.
	_, err := e.client.Create(context.Background(), &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "free"}})
	if err != nil {
		t.Fatalf("an unlimited kind: %v", err)
	}
	obj, err := e.client.Get(context.Background(), api.MustLookupResource("resourcequotas"), "default", "compute")
	if err != nil {
		t.Fatal(err)
	}
	if used := obj.(*api.ResourceQuota).Status.Used[api.ResourcePods]; used.Value() != 2 {
		t.Fatalf("status.used.pods %s", used.String())
	}
	// The Go client classifies the refusal as Kubernetes' clients do.
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"}, Spec: api.PodSpec{Containers: []api.Container{{Name: "main", Image: "busybox"}}}}
	if _, err := e.client.Create(context.Background(), p); !client.IsForbidden(err) {
		t.Fatalf("client create over quota: %v", err)
	}
}
