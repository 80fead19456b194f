package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestServerSideApply drives apply (PATCH application/apply-patch+yaml)
// as kubectl apply --server-side does: it creates, records who owns what,
// conflicts with another manager's value unless forced, removes what a
// manager stops setting, and records the fields of other writes to an
// applied object.
func TestServerSideApply(t *testing.T) {
	e := newEnv(t)
	const path = "/api/v1/namespaces/default/configmaps/cfg"
	apply := func(manager, force, body string) (int, []byte) {
		t.Helper()
		q := "?fieldManager=" + manager
		if force != "" {
			q += "&force=" + force
		}
		code, _, data := e.do("PATCH", path+q, adminToken, "application/apply-patch+yaml", "", strings.NewReader(body))
		return code, data
	}
	read := func(data []byte) (map[string]string, []managedEntry) {
		t.Helper()
		var cm struct {
			Metadata struct {
				ManagedFields []managedEntry `json:"managedFields"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal(data, &cm); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		return cm.Data, cm.Metadata.ManagedFields
	}

	// An apply of an object that does not exist creates it.
	code, data := apply("alice", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n  b: \"2\"\n")
	if code != http.StatusCreated {
		t.Fatalf("apply to create: %d %s", code, data)
	}
	d, mf := read(data)
	if d["a"] != "1" || d["b"] != "2" || len(mf) != 1 || mf[0].Manager != "alice" || mf[0].Operation != "Apply" ||
		!strings.Contains(string(mf[0].FieldsV1), `"f:a"`) {
		t.Fatalf("created: data %v, managed %+v", d, mf)
	}

	// Another manager setting a field to another value conflicts, and
	// the 409 names the field and its owner.
	code, data = apply("bob", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"9\"\n")
	if st := status(t, code, data, http.StatusConflict); !strings.Contains(st.Message, `conflict with "alice"`) || !strings.Contains(st.Message, ".data.a") {
		t.Fatalf("conflicting apply: %q", st.Message)
	}
	// The same value is shared ownership, not a conflict; forcing takes it.
	if code, data = apply("bob", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  b: \"2\"\n"); code != http.StatusOK {
		t.Fatalf("apply of the same value: %d %s", code, data)
	}
	if code, data = apply("bob", "true", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"9\"\n  b: \"2\"\n"); code != http.StatusOK {
		t.Fatalf("forced apply: %d %s", code, data)
	}
	if d, _ = read(data); d["a"] != "9" {
		t.Fatalf("after the forced apply: %v", d)
	}

	// alice no longer sets b, which bob still owns: it stays. bob drops
	// a and b: a, which nobody owns now, goes; so does b.
	if code, data = apply("alice", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  c: \"3\"\n"); code != http.StatusOK {
		t.Fatalf("alice's second apply: %d %s", code, data)
	}
	if d, _ = read(data); d["a"] != "9" || d["b"] != "2" || d["c"] != "3" {
		t.Fatalf("after alice's second apply: %v", d)
	}
	if code, data = apply("bob", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n"); code != http.StatusOK {
		t.Fatalf("bob's empty apply: %d %s", code, data)
	}
	if d, _ = read(data); len(d) != 1 || d["c"] != "3" {
		t.Fatalf("after bob's empty apply: %v", d)
	}

	// A merge patch to an applied object is recorded as its manager's,
	// so that an apply then conflicts with it.
	code, _, data = e.do("PATCH", path+"?fieldManager=editor", adminToken, "application/merge-patch+json", "", strings.NewReader(`{"data":{"c":"4"}}`))
	if code != http.StatusOK {
		t.Fatalf("merge patch: %d %s", code, data)
	}
	if _, mf = read(data); !managedBy(mf, "editor", "Update") {
		t.Fatalf("the patch's manager is not recorded: %+v", mf)
	}
	code, data = apply("alice", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  c: \"3\"\n")
	if st := status(t, code, data, http.StatusConflict); !strings.Contains(st.Message, `conflict with "editor"`) {
		t.Fatalf("apply after the patch: %q", st.Message)
	}

	// What an apply must carry.
	for _, tc := range []struct {
		query, body, want string
	}{
		{"", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n", "fieldManager is required"},
		{"?fieldManager=x&force=maybe", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n", "force"},
		{"?fieldManager=x", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n", "does not match the name in the path"},
		{"?fieldManager=x", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: kube-system\n", "does not match the namespace"},
		{"?fieldManager=x", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ncolour: red\n", `unknown field "colour"`},
		{"?fieldManager=x", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cfg\n", "Secret"},
		{"?fieldManager=x", "a: [", "not valid YAML"},
	} {
		code, _, data := e.do("PATCH", path+tc.query, adminToken, "application/apply-patch+yaml", "", strings.NewReader(tc.body))
		if st := status(t, code, data, http.StatusBadRequest); !strings.Contains(st.Message, tc.want) {
			t.Errorf("%s %q: %q, want it to say %q", tc.query, tc.body, st.Message, tc.want)
		}
	}
	// Of the subresources, apply is served on status alone: finalize is
	// the one other that a PATCH reaches.
	code, _, data = e.do("PATCH", "/api/v1/namespaces/default/finalize?fieldManager=x", adminToken, "application/apply-patch+yaml", "", strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n"))
	if st := status(t, code, data, http.StatusBadRequest); !strings.Contains(st.Message, "not on their finalize") {
		t.Errorf("apply to finalize: %q", st.Message)
	}
}

// managedEntry is what the tests read of a managedFields entry.
type managedEntry struct {
	Manager   string          `json:"manager"`
	Operation string          `json:"operation"`
	FieldsV1  json.RawMessage `json:"fieldsV1"`
}

// managedBy tells whether an entry is of this manager and operation.
func managedBy(mf []managedEntry, manager, operation string) bool {
	for _, m := range mf {
		if m.Manager == manager && m.Operation == operation {
			return true
		}
	}
	return false
}

// TestServerSideApplyListsByKey: containers are merged by name, so a
// second manager's sidecar lives beside the first manager's container
// and survives its next apply.
func TestServerSideApplyListsByKey(t *testing.T) {
	e := newEnv(t)
	const path = "/apis/apps/v1/namespaces/default/deployments/web"
	apply := func(manager, body string) []byte {
		t.Helper()
		code, _, data := e.do("PATCH", path+"?fieldManager="+manager, adminToken, "application/apply-patch+yaml", "", strings.NewReader(body))
		if code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("%s's apply: %d %s", manager, code, data)
		}
		return data
	}
	containers := func(data []byte) []string {
		var d struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name  string `json:"name"`
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range d.Spec.Template.Spec.Containers {
			out = append(out, c.Name+"="+c.Image)
		}
		return out
	}
	owner := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: web:%s
        command: [web]
`
	apply("alice", strings.ReplaceAll(owner, "%s", "1"))
	got := containers(apply("bob", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: proxy
        image: proxy:1
        command: [proxy]
`))
	if strings.Join(got, " ") != "web=web:1 proxy=proxy:1" {
		t.Fatalf("after bob's sidecar: %v", got)
	}
	if got = containers(apply("alice", strings.ReplaceAll(owner, "%s", "2"))); strings.Join(got, " ") != "web=web:2 proxy=proxy:1" {
		t.Fatalf("after alice's new image: %v", got)
	}
}

// TestServerSideApplyAfterCreate: an apply of the manifest a plain create
// wrote takes it over without a conflict, though the stored ports carry
// the protocol the manifest leaves to its default (the ports are a list
// keyed by containerPort and protocol, TCP by default, as in
// Kubernetes); another manager's port then joins by key.
func TestServerSideApplyAfterCreate(t *testing.T) {
	e := newEnv(t)
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: web:1
        command: [web]
        ports:
        - containerPort: %d
`
	if code, _, data := e.do("POST", "/apis/apps/v1/namespaces/default/deployments", adminToken, "application/yaml", "", strings.NewReader(fmt.Sprintf(manifest, 8080))); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	const path = "/apis/apps/v1/namespaces/default/deployments/web"
	for _, tc := range []struct {
		manager string
		port    int
		want    string
	}{
		{"kubectl", 8080, `[{"containerPort":8080,"protocol":"TCP"}]`},
		{"other", 9090, `[{"containerPort":8080,"protocol":"TCP"},{"containerPort":9090,"protocol":"TCP"}]`},
	} {
		code, _, data := e.do("PATCH", path+"?fieldManager="+tc.manager, adminToken, "application/apply-patch+yaml", "", strings.NewReader(fmt.Sprintf(manifest, tc.port)))
		if code != http.StatusOK {
			t.Fatalf("%s's apply: %d %s", tc.manager, code, data)
		}
		var d struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Ports json.RawMessage `json:"ports"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		if got := string(d.Spec.Template.Spec.Containers[0].Ports); got != tc.want {
			t.Errorf("after %s's apply: ports %s, want %s", tc.manager, got, tc.want)
		}
	}
}

// TestServerSideApplyStatus: an apply to the status subresource sets and
// owns the status alone, recorded under subresource "status", and a spec
// in it is left out; an apply to the object leaves the status alone.
func TestServerSideApplyStatus(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(testPod("default", "p", "", nil))
	const path = "/api/v1/namespaces/default/pods/p"
	code, _, data := e.do("PATCH", path+"/status?fieldManager=agent", adminToken, "application/apply-patch+yaml", "",
		strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeName: elsewhere\nstatus:\n  message: hello\n"))
	if code != http.StatusOK {
		t.Fatalf("status apply: %d %s", code, data)
	}
	var pod struct {
		Metadata struct {
			ManagedFields []struct {
				Manager     string          `json:"manager"`
				Subresource string          `json:"subresource"`
				FieldsV1    json.RawMessage `json:"fieldsV1"`
			} `json:"managedFields"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
		Status struct {
			Message string `json:"message"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &pod); err != nil {
		t.Fatal(err)
	}
	// The fields there before the first apply are kept under
	// before-first-apply, as Kubernetes keeps them.
	agent := -1
	for i, m := range pod.Metadata.ManagedFields {
		if m.Manager == "agent" {
			agent = i
		}
	}
	if pod.Status.Message != "hello" || pod.Spec.NodeName != "" || agent < 0 {
		t.Fatalf("after the status apply: %s", data)
	}
	if m := pod.Metadata.ManagedFields[agent]; m.Subresource != "status" || !strings.Contains(string(m.FieldsV1), `"f:message"`) || strings.Contains(string(m.FieldsV1), `"f:spec"`) {
		t.Fatalf("the agent's entry %+v", m)
	}
	// The object's own apply neither conflicts with the status nor
	// clears it.
	code, _, data = e.do("PATCH", path+"?fieldManager=owner", adminToken, "application/apply-patch+yaml", "",
		strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    a: b\nstatus:\n  message: other\n"))
	if code != http.StatusOK || !strings.Contains(string(data), `"message":"hello"`) || !strings.Contains(string(data), `"a":"b"`) {
		t.Fatalf("object apply: %d %s", code, data)
	}
	code, _, data = e.do("PATCH", "/api/v1/namespaces/default/pods/missing/status?fieldManager=agent", adminToken, "application/apply-patch+yaml", "",
		strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata:\n  name: missing\nstatus:\n  message: hello\n"))
	status(t, code, data, http.StatusNotFound)
}
