package apiserver_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/apiserver"
)

// FuzzDecodeJoinRequest: whatever the body, the join decoder answers
// without panicking, and what it accepts names a valid node and only the
// fields a join has.
func FuzzDecodeJoinRequest(f *testing.F) {
	for _, seed := range []string{
		`{"nodeName":"n1"}`,
		`{"nodeName":"n1","addresses":["10.0.0.1","n1","[2001:db8::1]"]}`,
		`{"nodeName":"n1"} {"nodeName":"n2"}`,
		`{"nodeName":"N1:evil"}`,
		`{"nodeName":"n1","admin":true}`,
		`{"nodeName":`,
		`{"nodeName":"n1","addresses":"10.0.0.1"}`,
		`[]`, `null`, ``, `"n1"`,
		`{"nodeName":"` + strings.Repeat("a", 300) + `"}`,
		`{"nodeName":"n1","addresses":[null,1,{}]}`,
		"{\"nodeName\":\"n\\u0000\"}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := apiserver.DecodeJoinRequest(strings.NewReader(body))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "join") && !strings.Contains(err.Error(), "join:") {
				t.Errorf("error %q does not say it is the join's", err)
			}
			return
		}
		if errs := validation.IsDNS1123Subdomain(req.NodeName); len(errs) > 0 {
			t.Errorf("accepted node name %q: %v", req.NodeName, errs)
		}
	})
}
