package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// FuzzEviction posts arbitrary Eviction bodies for web-0, as the admin
// and as its node, through the real handler and policy: the server never
// answers 5xx (the pod has one budget), an error is a Status with a
// message and writes nothing, and the budget is never spent below zero, however many
// evictions pass. The seed corpus is testdata/fuzz/FuzzEviction.
func FuzzEviction(f *testing.F) {
	e := newEnv(f, withRealAuth())
	n1, err := e.signer.IssueNodeCredential("n1")
	if err != nil {
		f.Fatal(err)
	}
	ee := &evictionEnv{env: e, node1: n1}
	ee.runningPod("web-0", "n1", "web", true)
	ee.runningPod("web-1", "n1", "web", true)
	ee.budget("web", "web", api.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}, nil)
	tokens := []string{adminToken, n1}
	f.Add(uint8(0), []byte(`{"metadata":{"name":"web-0"}}`))
	f.Fuzz(func(t *testing.T, who uint8, body []byte) {
		rec := serveFuzzAs(t, e.server, e.store, tokens[int(who)%len(tokens)], http.MethodPost,
			"/api/v1/namespaces/default/pods/web-0/eviction", "application/json", body)
		code, out := rec.Code, rec.Body.Bytes()
		var st metav1.Status
		if err := json.Unmarshal(out, &st); err != nil || st.Kind != "Status" || int(st.Code) != code {
			t.Fatalf("%q: %d is not a Status: %s", body, code, out)
		}
		if code != http.StatusCreated && st.Message == "" {
			t.Fatalf("%q: %d without a message", body, code)
		}
		o, err := e.store.Get(budgetKind, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		if b := o.(*api.PodDisruptionBudget); b.Status.DisruptionsAllowed < 0 || len(b.Status.DisruptedPods) > 1 {
			t.Fatalf("%q: budget spent to %+v", body, b.Status)
		}
	})
}
