package agentproxy

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// FuzzPodLogQuery sends the pods/log query parser arbitrary query strings
// for a pod of one container and for one of several: it must never panic;
// a refusal is a 400 that names the option or container at fault; and
// what it accepts is a container of the pod and an agent query holding
// only follow, previous and tailLines, in the agent's spelling, which
// agentURL puts on the node's address without changing the path.
func FuzzPodLogQuery(f *testing.F) {
	for _, seed := range []string{
		"", "container=app", "follow=true&previous=1&tailLines=5&timestamps=false", "follow=false&previous=0",
		"tailLines=0", "tailLines=-1", "tailLines=1e3", "tailLines=99999999999999999999", "timestamps=true",
		"limitBytes=10", "stream=All", "follow=yes", "container=setup", "container=c", "container=a&container=b",
		"follow=true&follow=false", "%zz", "container=%2F..%2Fetc", "tailLines=+5", "=", "&&",
		"sinceSeconds=10", "sinceSeconds=99999999999999999", "sinceTime=2026-11-30T12:00:00Z", "sinceTime=2026-11-30T12:00:00.5+02:00",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	proxy := &Proxy{store: storeWithNode(f)}

	one := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	one.Spec.NodeName = "n1"
	one.Spec.Containers = []api.Container{{Name: "app"}}
	multi := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "multi"}}
	multi.Spec.NodeName = "n1"
	multi.Spec.Containers = []api.Container{{Name: "a"}, {Name: "b"}}
	multi.Spec.InitContainers = []api.Container{{Name: "setup"}}

	f.Fuzz(func(t *testing.T, raw string, several bool) {
		pod, names := one, []string{"app"}
		if several {
			pod, names = multi, []string{"a", "b", "setup"}
		}
		// As the API server's r.URL.Query() reads it: what parses.
		q, _ := url.ParseQuery(raw)
		req, err := parsePodLogQuery(pod, q)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("%q: %v is not a 400", raw, err)
			}
			msg := err.Error()
			named := strings.Contains(msg, "container")
			for k := range q {
				named = named || strings.Contains(msg, "log option "+k)
			}
			if !named {
				t.Fatalf("%q: %q names neither an option nor a container", raw, msg)
			}
			return
		}
		if !slices.Contains(names, req.container) {
			t.Fatalf("%q: container %q is not the pod's", raw, req.container)
		}
		for k, vs := range req.query {
			if len(vs) != 1 {
				t.Fatalf("%q: agent query %s=%v", raw, k, vs)
			}
			switch v := vs[0]; k {
			case "follow", "previous", "timestamps":
				if v != "true" {
					t.Fatalf("%q: agent query %s=%q", raw, k, v)
				}
			case "limitBytes":
				if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 || strconv.FormatInt(n, 10) != v {
					t.Fatalf("%q: agent query limitBytes=%q", raw, v)
				}
			case "tailLines":
				if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
					t.Fatalf("%q: agent query tailLines=%q", raw, v)
				}
			case "sinceSeconds":
				if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 || n > api.MaxSinceSeconds || req.query.Has("sinceTime") {
					t.Fatalf("%q: agent query sinceSeconds=%q", raw, v)
				}
			case "sinceTime":
				if tm, err := time.Parse(time.RFC3339, v); err != nil || tm.Location() != time.UTC {
					t.Fatalf("%q: agent query sinceTime=%q", raw, v)
				}
			default:
				t.Fatalf("%q: agent query holds %s", raw, k)
			}
		}
		u, err := proxy.agentURL(pod, api.ContainerLogsPath, req.container, req.query)
		if err != nil {
			t.Fatalf("%q: agent URL: %v", raw, err)
		}
		back, err := url.Parse(u.String())
		if err != nil || back.Host != "10.0.0.1:10250" || back.Path != api.ContainerLogsPath+"/default/"+pod.Name+"/"+req.container || back.Query().Encode() != req.query.Encode() {
			t.Fatalf("%q: agent URL %s (%v)", raw, u, err)
		}
	})
}
