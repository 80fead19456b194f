package main

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

// FuzzLogsTarget reads arbitrary `berth logs` arguments: it must never
// panic; a refusal is a usage error (exit 2) that quotes the argument or
// names the kind; and what it accepts is a pod (no kind) or a workload
// kind, with one non-empty name that holds no slash.
func FuzzLogsTarget(f *testing.F) {
	for _, seed := range []string{
		"web", "pod/web", "po/web", "deploy/web", "deployments/web", "rs/web", "rc/web", "svc/web", "nope/web",
		"", "/", "deploy/", "/web", "pod/a/b", "a/b/c", "Deploy/web", "..", "pod/..",
	} {
		f.Add(seed)
	}
	workloads := []*api.Kind{api.KindOf(&api.Deployment{}), api.KindOf(&api.ReplicaSet{}), api.KindOf(&api.ReplicationController{})}
	f.Fuzz(func(t *testing.T, arg string) {
		k, name, err := logsTarget(arg)
		if err != nil {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage {
				t.Fatalf("%q: %v is not a usage error", arg, err)
			}
			kind, _, _ := strings.Cut(arg, "/")
			msg := err.Error()
			if !strings.Contains(msg, strconv.Quote(arg)) && !strings.Contains(msg, strconv.Quote(kind)) && !strings.Contains(msg, kind) {
				t.Fatalf("%q: error %q names neither the argument nor its kind", arg, msg)
			}
			return
		}
		if name == "" || strings.Contains(name, "/") || !strings.HasSuffix(arg, name) {
			t.Fatalf("%q: name %q", arg, name)
		}
		if k != nil && !slices.Contains(workloads, k) {
			t.Fatalf("%q: kind %v accepted", arg, k)
		}
		if k == nil && arg != name && !strings.HasSuffix(arg, "/"+name) {
			t.Fatalf("%q: pod %q", arg, name)
		}
	})
}
