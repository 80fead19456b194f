package plan

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
)

// FuzzRun plans whatever a request body decodes to: no panic, a report
// whose failures name the bad input, and a store left as it was.
func FuzzRun(f *testing.F) {
	f.Add([]byte(deployment("web", 2, "500m", "web:1")))
	f.Add([]byte(service + "\n---\n" + claim))
	f.Add([]byte(configMap + "\n---\n" + orphanService))
	f.Add([]byte("kind: Deployment\napiVersion: apps/v1\nmetadata: {name: x}\nspec: {replicas: -1}\n"))
	s := cluster(f, 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, errs := api.DecodeStream("fuzz.yaml", data, api.DecodeOptions{DropStatus: true})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rev := s.Revision()
		rep, err := Run(ctx, s, objs, errs, Options{Clock: clocktesting.NewFakePassiveClock(now)})
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if s.Revision() != rev {
			t.Fatalf("the plan moved the store from %d to %d", rev, s.Revision())
		}
		if len(errs) > 0 && rep.Fits {
			t.Fatalf("input with errors %v fits", errs)
		}
	})
}
