package apiserver_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

// A malformed resourceVersion is the caller's mistake, answered 400 with
// the field it is in, as Kubernetes does, never a 409 that sends a
// client reading and retrying the same bad write.
func TestMalformedResourceVersionIsBadRequest(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(configMap("a"))
	const path = "/api/v1/namespaces/default/configmaps/a"
	for _, tc := range []struct {
		name, method, path, ct, body, field string
	}{
		{"put", "PUT", path, "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"a","resourceVersion":"abc"}}`, "metadata.resourceVersion"},
		{"put negative", "PUT", path, "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"a","resourceVersion":"-1"}}`, "metadata.resourceVersion"},
		{"merge patch", "PATCH", path, "application/merge-patch+json",
			`{"metadata":{"resourceVersion":"12x"}}`, "metadata.resourceVersion"},
		{"strategic patch", "PATCH", path, "application/strategic-merge-patch+json",
			`{"metadata":{"resourceVersion":" 7"}}`, "metadata.resourceVersion"},
		{"json patch", "PATCH", path, "application/json-patch+json",
			`[{"op":"replace","path":"/metadata/resourceVersion","value":"x"}]`, "metadata.resourceVersion"},
		{"delete precondition", "DELETE", path, "application/json",
			`{"preconditions":{"resourceVersion":"nope"}}`, "preconditions.resourceVersion"},
		{"list", "GET", "/api/v1/namespaces/default/configmaps?resourceVersion=x1", "", "", "resourceVersion"},
		{"watch", "GET", "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=x1", "", "", "resourceVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.do(tc.method, tc.path, adminToken, tc.ct, "", strings.NewReader(tc.body))
			st := status(t, code, body, http.StatusBadRequest)
			if !strings.Contains(st.Message, tc.field) {
				t.Fatalf("message %q names no %s", st.Message, tc.field)
			}
		})
	}
	// Nothing was written or deleted.
	got, err := e.store.Get(cmKind, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.(*api.ConfigMap).DeletionTimestamp != nil {
		t.Fatal("the object was deleted")
	}
}

// A timeoutSeconds whose nanoseconds overflow int64 is clamped: the watch
// stays open rather than ending at once (which sends a client watching
// again in a tight loop).
func TestWatchHugeTimeoutIsClamped(t *testing.T) {
	e := newEnv(t)
	for _, ts := range []string{"9223372037", "9223372036854775807"} {
		req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds="+ts, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("timeoutSeconds=%s: %d", ts, resp.StatusCode)
		}
		name := "cm" + ts[len(ts)-3:]
		e.mustCreate(configMap(name))
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		found := false
		for !found && sc.Scan() {
			found = strings.Contains(sc.Text(), `"name":"`+name+`"`)
		}
		resp.Body.Close()
		if !found {
			t.Fatalf("timeoutSeconds=%s: the watch ended before the change came (%v)", ts, sc.Err())
		}
	}
}
