package apiserver_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestValidatingAdmissionPolicy: a policy's CEL rules, through a binding,
// refuse (Deny), warn (Warn) or only log (Audit); a parameter object
// feeds them; an expression that runs too long is cut off and the
// policy's failurePolicy decides.
func TestValidatingAdmissionPolicy(t *testing.T) {
	e := newEnv(t)
	apply := func(path, body string) {
		t.Helper()
		code, _, data := e.do("POST", path, adminToken, "application/yaml", "", strings.NewReader(body))
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", path, code, data)
		}
	}
	const vaps = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	const bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	apply(vaps, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"]}
  variables:
  - {name: keys, expression: "has(object.data) ? size(object.data) : 0"}
  validations:
  - expression: "variables.keys <= int(params.data.max)"
    messageExpression: "'a configmap holds at most ' + params.data.max + ' keys, not ' + string(variables.keys)"
    reason: Forbidden
`)
	e.mustCreate(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "default", Labels: map[string]string{"limits": "yes"}},
		Data: map[string]string{"max": "2"}})
	apply(bindings, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-keys-deny}
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    objectSelector: {matchExpressions: [{key: limits, operator: DoesNotExist}]}
`)
	code, _, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"1","b":"2","c":"3"}}`))
	st := status(t, code, data, http.StatusForbidden)
	if want := `configmaps "big" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-deny' denied request: a configmap holds at most 2 keys, not 3`; st.Message != want {
		t.Fatalf("message %q, want %q", st.Message, want)
	}
	code, _, data = e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"small"},"data":{"a":"1"}}`))
	if code != http.StatusCreated {
		t.Fatalf("allowed: %d %s", code, data)
	}

	// Warn: the write goes through with a warning.
	apply(vaps, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: named}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - {expression: "object.metadata.name.startsWith('app-')", message: "names start with app-"}
`)
	apply(bindings, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: named-warn}
spec: {policyName: named, validationActions: [Warn, Audit]}
`)
	code, hdr, data := e.do("POST", "/api/v1/namespaces/default/configmaps", adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`))
	if code != http.StatusCreated || !strings.Contains(hdr.Get("Warning"), "Validation failed for ValidatingAdmissionPolicy 'named' with binding 'named-warn': names start with app-") {
		t.Fatalf("warn: %d %q %s", code, hdr.Get("Warning"), data)
	}

	// An expression past the cost limit is cut off; failurePolicy Fail refuses.
	list := "[" + strings.Repeat("1,", 29) + "1]"
	expr := list + ".all(a, " + list + ".all(b, " + list + ".all(c, " + list + ".all(d, " + list + ".all(f, a + b + c + d + f > 0)))))"
	apply(vaps, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: costly}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["secrets"]}
  validations:
  - expression: "`+expr+`"
`)
	apply(bindings, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: costly}
spec: {policyName: costly, validationActions: [Deny]}
`)
	start := time.Now()
	code, _, data = e.do("POST", "/api/v1/namespaces/default/secrets", adminToken, "application/json", "",
		strings.NewReader(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`))
	st = status(t, code, data, http.StatusUnprocessableEntity)
	if !strings.Contains(st.Message, "cost") {
		t.Fatalf("cost limit: %s (after %v)", st.Message, time.Since(start))
	}

	// A rule that does not compile is refused when the policy is written.
	code, _, data = e.do("POST", vaps, adminToken, "application/yaml", "", strings.NewReader(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
  validations:
  - {expression: "object.spec.containers.size( >"}
`))
	st = status(t, code, data, http.StatusUnprocessableEntity)
	if !strings.Contains(st.Message, "spec.validations[0].expression") {
		t.Fatalf("compile error: %s", st.Message)
	}
}
