package workload

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/reconcile/quota"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

var eventKind = api.KindOf(&api.Event{})

// eventsAbout lists the events about the object named kind/name, as
// "Type Reason Message" lines, sorted.
func eventsAbout(t *testing.T, s *store.Store, kind, name string) []string {
	t.Helper()
	objs, _, err := s.List(eventKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		ev := o.(*api.Event)
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, ev.Type+" "+ev.Reason+" "+ev.Message)
		}
	}
	slices.Sort(out)
	return out
}

// runEvents runs an event writer until the test ends.
func runEvents(t *testing.T, s *store.Store) *event.Writer {
	w := event.NewWriter(s, event.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

func runController(t *testing.T, c *reconcile.Controller) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// scaleReplicaSet sets a ReplicaSet's replicas as a client does: read,
// change, write, and again when its controller wrote the status in
// between (a conflict).
func scaleReplicaSet(t *testing.T, s *store.Store, name string, replicas int32) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, "the scale written", func() error {
		obj, err := s.Get(replicaSetKind, "default", name)
		if err != nil {
			return err
		}
		scaled := obj.(*api.ReplicaSet).DeepCopy()
		scaled.Spec.Replicas = &replicas
		_, err = s.Update(context.Background(), scaled)
		if err != nil && !store.IsConflict(err) {
			t.Fatal(err)
		}
		return err
	})
}

func TestReplicaSetRecordsCreatesAndDeletes(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := runEvents(t, s)
	mustCreate(t, s, replicaSet("web", 3))
	runController(t, NewReplicaSetController(s, Options{Events: w.Recorder("replicaset-controller", "")}))

	var want []string
	testtool.WaitFor(t, 10*time.Second, "a SuccessfulCreate per pod", func() error {
		want = want[:0]
		for name := range pods(t, s) {
			want = append(want, "Normal SuccessfulCreate Created pod: "+name)
		}
		slices.Sort(want)
		if got := eventsAbout(t, s, "ReplicaSet", "web"); len(want) != 3 || !slices.Equal(got, want) {
			return fmt.Errorf("events %q, want %q", got, want)
		}
		return nil
	})

	scaleReplicaSet(t, s, "web", 1)
	testtool.WaitFor(t, 10*time.Second, "two SuccessfulDelete", func() error {
		var deleted []string
		for _, e := range eventsAbout(t, s, "ReplicaSet", "web") {
			if name, ok := strings.CutPrefix(e, "Normal SuccessfulDelete Deleted pod: "); ok {
				deleted = append(deleted, name)
			}
		}
		left := pods(t, s)
		if len(deleted) != 2 || len(left) != 1 {
			return fmt.Errorf("deleted %q, %d pods left", deleted, len(left))
		}
		for _, name := range deleted {
			if _, ok := left[name]; ok {
				return fmt.Errorf("%s recorded deleted but is there", name)
			}
		}
		return nil
	})
}

func TestReplicaSetRecordsFailedCreateAtQuota(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{quota.Admit}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := runEvents(t, s)
	mustCreate(t, s, &api.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compute"},
		Spec:       api.ResourceQuotaSpec{Hard: api.ResourceList{api.ResourcePods: resource.MustParse("1")}},
	})
	mustCreate(t, s, replicaSet("web", 2))
	runController(t, NewReplicaSetController(s, Options{
		Events: w.Recorder("replicaset-controller", ""), Logger: slog.New(slog.DiscardHandler),
		Backoff: reconcile.Backoff{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond},
	}))
	testtool.WaitFor(t, 10*time.Second, "a FailedCreate naming the quota", func() error {
		for _, e := range eventsAbout(t, s, "ReplicaSet", "web") {
			if strings.HasPrefix(e, "Warning FailedCreate Error creating: ") && strings.Contains(e, "exceeded quota: compute") {
				return nil
			}
		}
		return fmt.Errorf("events %q", eventsAbout(t, s, "ReplicaSet", "web"))
	})
}

func TestDeploymentRecordsScalingReplicaSet(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := runEvents(t, s)
	d := mustCreate(t, s, deployment("web", 2)).(*api.Deployment)
	runController(t, NewDeploymentController(s, Options{Events: w.Recorder("deployment-controller", "")}))
	rs := "web-" + PodTemplateHash(&d.Spec.Template, nil)
	testtool.WaitFor(t, 10*time.Second, "ScalingReplicaSet", func() error {
		want := []string{"Normal ScalingReplicaSet Scaled up replica set " + rs + " to 2 from 0"}
		if got := eventsAbout(t, s, "Deployment", "web"); !slices.Equal(got, want) {
			return fmt.Errorf("events %q, want %q", got, want)
		}
		return nil
	})
}
