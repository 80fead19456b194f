package controlplane

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// The paths anyone may read answer without a token, and the reviews list
// exactly them as open to a service account, the issuer discovery
// documents included; the join and webhook paths, which check secrets of
// their own, are not among them.
func TestPublicPaths(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), "memory")
	creds := r.Credentials()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: creds.CAPool}}}
	base := "https://" + r.Addr().String()
	public := []string{"/.well-known/openid-configuration", "/healthz", "/livez", "/metrics", "/openid/v1/jwks", "/readyz", "/version"}
	for _, p := range public {
		poll(t, "GET "+p+" without a token", func() error {
			resp, err := hc.Get(base + p)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", p, resp.Status)
			}
			return nil
		})
	}

	// The admin asks as a service account (impersonation).
	review := func(kind string, in, out any) {
		t.Helper()
		body, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, base+"/apis/authorization.k8s.io/v1/"+kind, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+creds.AdminToken)
		req.Header.Set("Impersonate-User", "system:serviceaccount:default:default")
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: %s: %s", kind, resp.Status, data)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
	}
	var rules authorizationv1.SelfSubjectRulesReview
	review("selfsubjectrulesreviews", &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, &rules)
	// The default roles' paths (system:discovery, system:public-info-viewer)
	// come first, then the paths served without a token.
	if nr := rules.Status.NonResourceRules; len(nr) == 0 || !slices.Equal(nr[len(nr)-1].NonResourceURLs, public) || !slices.Equal(nr[len(nr)-1].Verbs, []string{"get"}) ||
		!slices.ContainsFunc(nr, func(r authorizationv1.NonResourceRule) bool { return slices.Contains(r.NonResourceURLs, "/apis/*") }) {
		t.Errorf("non-resource rules %+v, want get on %v and discovery", nr, public)
	}
	for _, c := range []struct {
		verb, path string
		want       bool
	}{
		{"get", "/openid/v1/jwks", true}, {"get", "/version", true},
		{"post", "/version", false}, {"delete", "/healthz", false},
		{"get", "/join", false}, {"get", "/hooks/x", false}, {"get", "/debug/pprof/", false},
	} {
		var access authorizationv1.SelfSubjectAccessReview
		review("selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: c.path, Verb: c.verb},
		}}, &access)
		if access.Status.Allowed != c.want {
			t.Errorf("%s %s: allowed %v, want %v (%s)", c.verb, c.path, access.Status.Allowed, c.want, access.Status.Reason)
		}
	}
}

// The resource metrics refuse what they would otherwise ignore.
func TestMetricsQuery(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), "memory")
	creds := r.Credentials()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: creds.CAPool}}}
	for query, want := range map[string]int{
		"":                                 http.StatusOK,
		"?labelSelector=app%3Dweb":         http.StatusOK,
		"?labelSelector=app+in+(":          http.StatusBadRequest,
		"?fieldSelector=metadata.name%3Dx": http.StatusBadRequest,
		"?limit=5":                         http.StatusBadRequest,
	} {
		poll(t, "pod metrics"+query, func() error {
			req, err := http.NewRequest(http.MethodGet, "https://"+r.Addr().String()+"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"+query, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+creds.AdminToken)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != want {
				return fmt.Errorf("%s: %s", resp.Status, body)
			}
			return nil
		})
	}
}
