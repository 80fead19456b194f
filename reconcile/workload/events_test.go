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

// quotaStore is a memory store that enforces quotas, holding a quota
// "compute" of that many pods in namespace default.
func quotaStore(t *testing.T, pods string) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{quota.Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mustCreate(t, s, &api.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compute"},
		Spec:       api.ResourceQuotaSpec{Hard: api.ResourceList{api.ResourcePods: resource.MustParse(pods)}},
	})
	return s
}

// failedCreates lists the FailedCreate Events about the ReplicaSet.
func failedCreates(t *testing.T, s *store.Store, name string) []*api.Event {
	t.Helper()
	objs, _, err := s.List(eventKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*api.Event
	for _, o := range objs {
		if ev := o.(*api.Event); ev.InvolvedObject.Kind == "ReplicaSet" && ev.InvolvedObject.Name == name && ev.Reason == ReasonFailedCreate {
			out = append(out, ev)
		}
	}
	return out
}

// TestReplicaSetRefusedByQuota runs the ReplicaSet controller over a real
// store whose quota admission refuses its pods: the ReplicaSet gets the
// ReplicaFailure condition with the refusal's text, the retries make one
// FailedCreate Event that counts them (not an Event each), the retries
// log at info level, not as errors, and the condition goes once the
// quota lets the pods in.
func TestReplicaSetRefusedByQuota(t *testing.T) {
	s := quotaStore(t, "1")
	w := runEvents(t, s)
	mustCreate(t, s, replicaSet("web", 3))
	var logs testtool.Buffer
	c := NewReplicaSetController(s, Options{
		Events:  w.Recorder("replicaset-controller", ""),
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Backoff: reconcile.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond},
	})
	runController(t, c)

	const refusal = `pods "default/web-" forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1`
	testtool.WaitFor(t, 10*time.Second, "one FailedCreate Event counting several refusals", func() error {
		evs := failedCreates(t, s, "web")
		if len(evs) != 1 || evs[0].Count < 3 {
			var got []string
			for _, ev := range evs {
				got = append(got, fmt.Sprintf("%dx %s", ev.Count, ev.Message))
			}
			return fmt.Errorf("FailedCreate events %q", got)
		}
		if want := "Error creating: " + refusal; evs[0].Type != api.EventTypeWarning || evs[0].Message != want {
			return fmt.Errorf("event %s %q, want Warning %q", evs[0].Type, evs[0].Message, want)
		}
		return nil
	})
	rs := get(t, s, replicaSetKind, "web").(*api.ReplicaSet)
	cond := findCondition(rs.Status.Conditions, api.ReplicaFailure)
	if cond == nil || cond.Status != api.ConditionTrue || cond.Reason != ReasonFailedCreate || cond.Message != refusal {
		t.Errorf("ReplicaFailure %+v, want True %s %q", cond, ReasonFailedCreate, refusal)
	}
	if out := logs.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, `level=INFO msg="reconcile failed, will retry"`) {
		t.Errorf("refusals logged as errors, or not at info level:\n%s", out)
	}

	obj := get(t, s, quotaKind, "compute").(*api.ResourceQuota).DeepCopy()
	obj.Spec.Hard[api.ResourcePods] = resource.MustParse("3")
	if _, err := s.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "three pods and no ReplicaFailure", func() error {
		rs := get(t, s, replicaSetKind, "web").(*api.ReplicaSet)
		if c := findCondition(rs.Status.Conditions, api.ReplicaFailure); c != nil || rs.Status.Replicas != 3 {
			return fmt.Errorf("%d replicas, ReplicaFailure %+v", rs.Status.Replicas, c)
		}
		return nil
	})
}

// TestDeploymentCarriesReplicaFailure: a Deployment whose ReplicaSet
// cannot create its pods (a quota) says so in its own ReplicaFailure
// condition, copied from the ReplicaSet's, and drops it with the
// ReplicaSet's.
func TestDeploymentCarriesReplicaFailure(t *testing.T) {
	s := quotaStore(t, "1")
	mustCreate(t, s, deployment("web", 2))
	opts := Options{Logger: slog.New(slog.DiscardHandler), Backoff: reconcile.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}}
	runController(t, NewReplicaSetController(s, opts))
	runController(t, NewDeploymentController(s, opts))

	failure := func() (*api.WorkloadCondition, *api.WorkloadCondition) {
		d := get(t, s, deploymentKind, "web").(*api.Deployment)
		rss, _, err := s.List(replicaSetKind, store.Filter{Namespace: "default"})
		if err != nil || len(rss) != 1 {
			return findCondition(d.Status.Conditions, api.ReplicaFailure), nil
		}
		return findCondition(d.Status.Conditions, api.ReplicaFailure), findCondition(rss[0].(*api.ReplicaSet).Status.Conditions, api.ReplicaFailure)
	}
	testtool.WaitFor(t, 10*time.Second, "the ReplicaSet's ReplicaFailure on the Deployment", func() error {
		d, rs := failure()
		if d == nil || rs == nil || d.Status != rs.Status || d.Reason != ReasonFailedCreate || d.Message != rs.Message || !strings.Contains(d.Message, "exceeded quota: compute") {
			return fmt.Errorf("deployment %+v, replicaset %+v", d, rs)
		}
		return nil
	})
	obj := get(t, s, quotaKind, "compute").(*api.ResourceQuota).DeepCopy()
	obj.Spec.Hard[api.ResourcePods] = resource.MustParse("2")
	if _, err := s.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "no ReplicaFailure on the Deployment", func() error {
		if d, rs := failure(); d != nil || rs != nil {
			return fmt.Errorf("deployment %+v, replicaset %+v", d, rs)
		}
		return nil
	})
}

var quotaKind = api.MustLookupResource("resourcequotas")

// get reads an object the test made, failing the test if it is gone.
func get(t *testing.T, s *store.Store, k *api.Kind, name string) api.Object {
	t.Helper()
	obj, err := s.Get(k, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
