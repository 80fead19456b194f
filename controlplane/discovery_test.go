package controlplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// accepting asks for one media type, as kubectl asks for aggregated
// discovery.
type accepting struct {
	next   http.RoundTripper
	accept string
}

func (a accepting) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", a.accept)
	return a.next.RoundTrip(r)
}

// TestDiscoveryListsServedSubresources: the legacy discovery documents and
// the aggregated one list exactly the subresources the router serves
// (pods/log, exec, attach, portforward, eviction, proxy, the scales, the statuses,
// serviceaccounts/token...), each with Kubernetes' verbs and kind; a new
// route that discovery does not list fails here. kubectl api-resources
// reads them, and kubectl auth can-i checks a subresource.
func TestDiscoveryListsServedSubresources(t *testing.T) {
	s := cptest.Start(t, controlplane.Config{})
	served := s.API().ServedSubresources()
	for _, want := range []string{"v1 pods/log", "v1 pods/exec", "v1 pods/attach", "v1 pods/portforward", "v1 pods/eviction", "v1 pods/proxy",
		"v1 pods/status", "v1 nodes/status", "v1 namespaces/finalize", "apps/v1 deployments/scale", "v1 serviceaccounts/token"} {
		if !slices.Contains(served, want) {
			t.Errorf("the router does not serve %s: %v", want, served)
		}
	}
	cfg, err := client.LoadKubeconfig(s.Credentials().Paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := client.NewTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, accept, path string, into any) {
		t.Helper()
		c := *cfg
		c.Transport = accepting{tr, accept}
		cl, err := client.New(&c)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Do(context.Background(), http.MethodGet, path, nil, nil, "")
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	// described is "gv resource/sub" -> "verbs kind".
	type described map[string]string
	var gvs []string
	for _, r := range served {
		gvs = append(gvs, strings.Fields(r)[0])
	}
	slices.Sort(gvs)
	legacy := described{}
	for _, gv := range slices.Compact(gvs) {
		path := "/apis/" + gv
		if gv == "v1" {
			path = "/api/v1"
		}
		var list metav1.APIResourceList
		get(t, "application/json", path, &list)
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				kind := r.Kind
				if r.Group != "" || r.Version != "" {
					kind = r.Group + "/" + r.Version + " " + r.Kind
				}
				legacy[gv+" "+r.Name] = strings.Join(r.Verbs, ",") + " " + kind
			}
		}
	}
	var agg struct {
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
			Versions []struct {
				Version   string `json:"version"`
				Resources []struct {
					Resource     string `json:"resource"`
					Subresources []struct {
						Subresource  string                   `json:"subresource"`
						ResponseKind *metav1.GroupVersionKind `json:"responseKind"`
						Verbs        []string                 `json:"verbs"`
					} `json:"subresources"`
				} `json:"resources"`
			} `json:"versions"`
		} `json:"items"`
	}
	aggregated := described{}
	for _, path := range []string{"/api", "/apis"} {
		get(t, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", path, &agg)
		for _, g := range agg.Items {
			for _, v := range g.Versions {
				gv := v.Version
				if g.Metadata.Name != "" {
					gv = g.Metadata.Name + "/" + v.Version
				}
				for _, r := range v.Resources {
					for _, sr := range r.Subresources {
						aggregated[gv+" "+r.Resource+"/"+sr.Subresource] = strings.Join(sr.Verbs, ",") + " " + sr.ResponseKind.Kind
					}
				}
			}
		}
	}
	for name, doc := range map[string]described{"legacy": legacy, "aggregated": aggregated} {
		var listed []string
		for r := range doc {
			listed = append(listed, r)
		}
		slices.Sort(listed)
		want := slices.Sorted(slices.Values(served))
		if !slices.Equal(listed, want) {
			t.Errorf("%s discovery lists\n%v\nthe router serves\n%v", name, listed, want)
		}
	}
	for r, want := range map[string]string{
		"v1 pods/log":               "get Pod",
		"v1 pods/exec":              "create,get PodExecOptions",
		"v1 pods/attach":            "create,get PodAttachOptions",
		"v1 pods/portforward":       "create,get PodPortForwardOptions",
		"v1 pods/eviction":          "create policy/v1 Eviction",
		"apps/v1 deployments/scale": "get,patch,update autoscaling/v1 Scale",
		"v1 serviceaccounts/token":  "create authentication.k8s.io/v1 TokenRequest",
	} {
		if legacy[r] != want {
			t.Errorf("legacy discovery: %s is %q, want %q", r, legacy[r], want)
		}
		verbs, kind, _ := strings.Cut(want, " ")
		if _, k, ok := strings.Cut(kind, " "); ok {
			kind = k
		}
		if aggregated[r] != verbs+" "+kind {
			t.Errorf("aggregated discovery: %s is %q, want %q", r, aggregated[r], verbs+" "+kind)
		}
	}

	kubectl := testtool.Need(t, "kubectl")
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.Credentials().Paths.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("api-resources"); err != nil || !strings.Contains(out, "deployments") || strings.Contains(out, "pods/") {
		t.Errorf("kubectl api-resources: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		// kubectl reads pods/NAME as a pod's name: a subresource is asked
		// with --subresource.
		{[]string{"auth", "can-i", "create", "pods", "--subresource=exec"}, "yes"},
		{[]string{"auth", "can-i", "get", "pods", "--subresource=log"}, "yes"},
		{[]string{"auth", "can-i", "create", "pods", "--subresource=exec", "--as", "system:serviceaccount:default:default"}, "no"},
		{[]string{"auth", "can-i", "create", "pods", "--subresource=attach"}, "yes"},
		{[]string{"auth", "can-i", "create", "pods", "--subresource=attach", "--as", "system:serviceaccount:default:default"}, "no"},
		{[]string{"auth", "can-i", "get", "pods", "--subresource=attach", "--as", "system:serviceaccount:default:default"}, "no"},
		// The default service account has discovery alone, as in
		// Kubernetes.
		{[]string{"auth", "can-i", "get", "pods", "--subresource=log", "--as", "system:serviceaccount:default:default"}, "no"},
		{[]string{"auth", "can-i", "create", "pods", "--subresource=attach", "--as", "system:node:n1"}, "no"},
	} {
		out, _ := run(c.args...)
		if answer, _, _ := strings.Cut(strings.TrimSpace(out), " "); answer != c.want {
			t.Errorf("kubectl %s: %q, want %s", strings.Join(c.args, " "), out, c.want)
		}
	}
}
