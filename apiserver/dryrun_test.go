package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// TestDryRun: dryRun=All (kubectl --dry-run=server, kubectl diff) answers
// with what each write would do, refuses what it would refuse, and
// changes nothing.
func TestDryRun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stored := e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Data: map[string]string{"k": "v"}})
	rv := stored.GetResourceVersion()
	const path = "/api/v1/namespaces/default/configmaps"
	unchanged := func(what string) {
		t.Helper()
		got, err := e.client.Get(ctx, cmKind, "default", "c")
		if err != nil || got.GetResourceVersion() != rv || got.(*api.ConfigMap).Data["k"] != "v" {
			t.Fatalf("%s changed the stored object: %v %+v", what, err, got)
		}
	}
	decode := func(what string, code, want int, body []byte) map[string]any {
		t.Helper()
		if code != want {
			t.Fatalf("%s: %d %s", what, code, body)
		}
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	meta := func(obj map[string]any, key string) any { return obj["metadata"].(map[string]any)[key] }

	// A create is answered as made, without a resourceVersion, and not made.
	code, _, body := e.do("POST", path+"?dryRun=All", adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`))
	out := decode("dry-run create", code, http.StatusCreated, body)
	if meta(out, "uid") == nil || meta(out, "creationTimestamp") == nil || meta(out, "resourceVersion") != nil {
		t.Errorf("dry-run create answered %s", body)
	}
	if _, err := e.client.Get(ctx, cmKind, "default", "new"); !client.IsNotFound(err) {
		t.Fatalf("dry-run create was kept: %v", err)
	}
	// What a create would refuse, it refuses.
	code, _, body = e.do("POST", path+"?dryRun=All", adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`))
	status(t, code, body, http.StatusConflict)

	// A patch is answered with the change and the current resourceVersion.
	code, _, body = e.do("PATCH", path+"/c?dryRun=All", adminToken, "application/merge-patch+json", "", strings.NewReader(`{"data":{"k":"w"}}`))
	out = decode("dry-run patch", code, http.StatusOK, body)
	if out["data"].(map[string]any)["k"] != "w" || meta(out, "resourceVersion") != rv {
		t.Errorf("dry-run patch answered %s", body)
	}
	unchanged("a dry-run patch")
	// An update too, and a stale one is a conflict as it would be.
	cm := stored.DeepCopyObject().(*api.ConfigMap)
	cm.Data["k"] = "x"
	data, _ := json.Marshal(cm)
	code, _, body = e.do("PUT", path+"/c?dryRun=All", adminToken, "application/json", "", strings.NewReader(string(data)))
	if out = decode("dry-run update", code, http.StatusOK, body); out["data"].(map[string]any)["k"] != "x" {
		t.Errorf("dry-run update answered %s", body)
	}
	cm.ResourceVersion = "1"
	data, _ = json.Marshal(cm)
	code, _, body = e.do("PUT", path+"/c?dryRun=All", adminToken, "application/json", "", strings.NewReader(string(data)))
	status(t, code, body, http.StatusConflict)
	unchanged("a dry-run update")

	// A delete, by query or by DeleteOptions, leaves the object.
	code, _, body = e.do("DELETE", path+"/c?dryRun=All", adminToken, "", "", nil)
	decode("dry-run delete", code, http.StatusOK, body)
	code, _, body = e.do("DELETE", path+"/c", adminToken, "application/json", "", strings.NewReader(`{"dryRun":["All"]}`))
	decode("dry-run delete by options", code, http.StatusOK, body)
	unchanged("a dry-run delete")

	// Only All is a dry run.
	code, _, body = e.do("PATCH", path+"/c?dryRun=Some", adminToken, "application/merge-patch+json", "", strings.NewReader(`{"data":{"k":"w"}}`))
	if st := status(t, code, body, http.StatusBadRequest); !strings.Contains(st.Message, `supported values: "All"`) {
		t.Errorf("bad dryRun: %s", st.Message)
	}
	unchanged("a bad dry run")
}
