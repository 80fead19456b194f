package apiserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// TestFieldValidation: a write's fieldValidation parameter (kubectl's
// --validate) decides what an unknown or duplicate field is, for create,
// update and patch alike: an error naming it (Strict, and berth's default),
// a Warning header and the field dropped (Warn), or only dropped (Ignore).
func TestFieldValidation(t *testing.T) {
	e := newEnv(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	warnings := func(h http.Header) []string {
		ws, errs := utilnet.ParseWarningHeaders(h.Values("Warning"))
		if len(errs) > 0 {
			t.Fatalf("malformed Warning headers %q: %v", h.Values("Warning"), errs)
		}
		var texts []string
		for _, w := range ws {
			if w.Code != 299 {
				t.Errorf("warning %+v: want code 299", w)
			}
			texts = append(texts, w.Text)
		}
		return texts
	}
	data := func(body []byte) map[string]any {
		var cm map[string]any
		if err := json.Unmarshal(body, &cm); err != nil {
			t.Fatalf("answer %s: %v", body, err)
		}
		if _, ok := cm["bogus"]; ok {
			t.Errorf("the unknown field was kept: %s", body)
		}
		d, _ := cm["data"].(map[string]any)
		return d
	}
	create := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"k":"a","k":"b"},"bogus":1}`
	}

	// Create.
	for _, q := range []string{"", "?fieldValidation=Strict"} {
		code, h, body := e.do("POST", cms+q, adminToken, "application/json", "", strings.NewReader(create("strict")))
		st := status(t, code, body, http.StatusBadRequest)
		if !strings.Contains(st.Message, `bogus: unknown field "bogus"`) || !strings.Contains(st.Message, `data[k]: duplicate field "k"`) {
			t.Errorf("create%s: message %q does not name both fields", q, st.Message)
		}
		if len(h.Values("Warning")) > 0 {
			t.Errorf("create%s: warnings %q with an error", q, h.Values("Warning"))
		}
	}
	code, h, body := e.do("POST", cms+"?fieldValidation=Warn", adminToken, "application/json", "", strings.NewReader(create("warn")))
	if code != http.StatusCreated {
		t.Fatalf("create with Warn: %d %s", code, body)
	}
	if got, want := warnings(h), []string{`duplicate field "data[k]"`, `unknown field "bogus"`}; !slices.Equal(got, want) {
		t.Errorf("create with Warn: warnings %q, want %q", got, want)
	}
	if d := data(body); d["k"] != "b" {
		t.Errorf("create with Warn: data %v, want the last k", d)
	}
	code, h, body = e.do("POST", cms+"?fieldValidation=Ignore", adminToken, "application/json", "", strings.NewReader(create("ignore")))
	if code != http.StatusCreated || len(h.Values("Warning")) > 0 {
		t.Fatalf("create with Ignore: %d, warnings %q: %s", code, h.Values("Warning"), body)
	}
	data(body)

	// Update (a PUT with no resourceVersion is unconditional) and patch
	// (the patched object is what is checked): refused by default, written
	// with a warning with Warn.
	for _, w := range []struct {
		method, ct, body, field, wantK string
	}{
		{"PUT", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warn","colour":"red"},"data":{"k":"c"}}`, "metadata.colour", "c"},
		{"PATCH", "application/merge-patch+json", `{"data":{"k":"d"},"spec":{"x":1}}`, "spec", "d"},
	} {
		code, _, body := e.do(w.method, cms+"/warn", adminToken, w.ct, "", strings.NewReader(w.body))
		if st := status(t, code, body, http.StatusBadRequest); !strings.Contains(st.Message, w.field+": unknown field") {
			t.Errorf("%s: message %q does not name %s", w.method, st.Message, w.field)
		}
		code, h, body := e.do(w.method, cms+"/warn?fieldValidation=Warn", adminToken, w.ct, "", strings.NewReader(w.body))
		if code != http.StatusOK {
			t.Fatalf("%s with Warn: %d %s", w.method, code, body)
		}
		if got, want := warnings(h), []string{`unknown field "` + w.field + `"`}; !slices.Equal(got, want) {
			t.Errorf("%s with Warn: warnings %q, want %q", w.method, got, want)
		}
		if d := data(body); d["k"] != w.wantK {
			t.Errorf("%s with Warn: data %v, want k=%s", w.method, d, w.wantK)
		}
	}

	// A value of the wrong type is an error whatever the parameter says,
	// and the parameter has three values.
	code, _, body = e.do("POST", cms+"?fieldValidation=Ignore", adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"k":1}}`))
	if st := status(t, code, body, http.StatusBadRequest); !strings.Contains(st.Message, "data[k]") {
		t.Errorf("wrong type with Ignore: %q", st.Message)
	}
	for _, method := range []string{"POST", "PATCH"} {
		path, ct := cms, "application/json"
		if method == "PATCH" {
			path, ct = cms+"/warn", "application/merge-patch+json"
		}
		code, _, body = e.do(method, path+"?fieldValidation=Lenient", adminToken, ct, "", strings.NewReader(create("bad-param")))
		if st := status(t, code, body, http.StatusBadRequest); !strings.Contains(st.Message, `fieldValidation: Unsupported value: "Lenient"`) {
			t.Errorf("%s with fieldValidation=Lenient: %q", method, st.Message)
		}
	}
}
