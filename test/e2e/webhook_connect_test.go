package e2e

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/testtool"
)

// TestConnectWebhookRefusesExec: a validating webhook on CONNECT of
// pods/exec refuses `kubectl exec` as Kubernetes' does, before any node is
// reached (the pod's node does not even exist): the webhook, an HTTPS
// server of the test, is sent the exec as a CONNECT with the
// PodExecOptions, and kubectl prints its message.
func TestConnectWebhookRefusesExec(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "kubectl")
	var connects atomic.Int32
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		req := review.Request
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		if req.Operation == admissionv1.Connect && req.Kind.Kind == "PodExecOptions" && req.SubResource == "exec" {
			connects.Add(1)
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: fmt.Sprintf("no exec into %s/%s", req.Namespace, req.Name)}
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})

	s := startServer(t)
	s.applyText(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: no-exec
webhooks:
- name: no-exec.example.com
  clientConfig:
    url: %s/validate
    caBundle: %s
  rules:
  - operations: [CONNECT]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods/exec]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  nodeName: nowhere
  containers:
  - name: app
    image: busybox
`, hook.URL, base64.StdEncoding.EncodeToString(ca)))
	out, err := s.kubectlErr(t, "exec", "p", "--", "sh", "-c", "true")
	if err == nil || !strings.Contains(out, `admission webhook "no-exec.example.com" denied the request: no exec into default/p`) {
		t.Fatalf("kubectl exec: %v\n%s", err, out)
	}
	if connects.Load() == 0 {
		t.Fatal("the webhook was not sent the CONNECT")
	}
}
