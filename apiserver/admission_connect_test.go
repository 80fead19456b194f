package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestConnectWebhook: a webhook whose rules name CONNECT on pods/exec is
// sent the exec as Kubernetes sends it (operation CONNECT, the
// PodExecOptions as the object) before the node is reached, and its
// refusal ends the request; a connect its rules do not name (attach),
// and every connect before the configuration, reach the handler.
func TestConnectWebhook(t *testing.T) {
	e := newEnv(t)
	var reached atomic.Int32
	for _, sub := range []string{"exec", "attach", "portforward"} {
		e.server.HandleSubresource(podKind, sub, func(w http.ResponseWriter, _ *http.Request, _ api.Object) {
			reached.Add(1)
			w.WriteHeader(http.StatusNoContent)
		})
	}
	e.mustCreate(testPod("default", "p", "n1", nil))
	ws := newWebhookServer(t, func(req *admissionv1.AdmissionRequest, _ *http.Request) *admissionv1.AdmissionResponse {
		if req.Operation != admissionv1.Connect || req.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}) ||
			req.Resource.Resource != "pods" || req.SubResource != "exec" || req.Name != "p" || req.Namespace != "default" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "unexpected request " + string(req.Operation) + " " + req.Kind.String()}}
		}
		var opts corev1.PodExecOptions
		if err := json.Unmarshal(req.Object.Raw, &opts); err != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error()}}
		}
		if len(opts.Command) > 0 && opts.Command[0] == "sh" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: "no shells in " + req.Name + " (container " + opts.Container + ", tty " + map[bool]string{true: "on", false: "off"}[opts.TTY] + ")"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	const exec = "/api/v1/namespaces/default/pods/p/exec?container=app&stdout=true&tty=true&command="
	if code, _, data := e.do("POST", exec+"sh", adminToken, "", "", nil); code != http.StatusNoContent {
		t.Fatalf("exec before the webhook: %d %s", code, data)
	}

	h := ws.hook("no-shells.example.com", admissionregistrationv1.Connect)
	h.Rules[0].Resources = []string{"pods/exec"}
	e.mustCreate(&api.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "no-shells"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{h}})
	reached.Store(0)
	code, _, data := e.do("POST", exec+"sh", adminToken, "", "", nil)
	st := status(t, code, data, http.StatusForbidden)
	if want := `admission webhook "no-shells.example.com" denied the request: no shells in p (container app, tty on)`; st.Message != want {
		t.Fatalf("message %q, want %q", st.Message, want)
	}
	if code, _, data := e.do("GET", exec+"date", adminToken, "", "", nil); code != http.StatusNoContent {
		t.Fatalf("exec the webhook allows: %d %s", code, data)
	}
	if code, _, data := e.do("POST", "/api/v1/namespaces/default/pods/p/attach?stdout=true", adminToken, "", "", nil); code != http.StatusNoContent {
		t.Fatalf("attach, which the rules leave out: %d %s", code, data)
	}
	if n := reached.Load(); n != 2 || ws.calls.Load() != 2 {
		t.Errorf("handlers reached %d times, webhook called %d times; want 2 and 2", n, ws.calls.Load())
	}
	code, _, data = e.do("POST", "/api/v1/namespaces/default/pods/p/exec?stdout=true&tty=maybe&command=date", adminToken, "", "", nil)
	if st := status(t, code, data, http.StatusBadRequest); !strings.Contains(st.Message, `tty="maybe"`) {
		t.Errorf("a bad option: %s", st.Message)
	}
}
