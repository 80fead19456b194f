package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

func newStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newQuota(ns, name string, hard api.ResourceList) *api.ResourceQuota {
	return &api.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: api.ResourceQuotaSpec{Hard: hard}}
}

func podIn(ns, name string, cs ...api.Container) *api.Pod {
	if len(cs) == 0 {
		cs = []api.Container{container("main", nil, nil)}
	}
	p := testPod(name, cs...)
	p.Namespace = ns
	return p
}

func claim(ns, name, size string) *api.PersistentVolumeClaim {
	return &api.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: api.PersistentVolumeClaimSpec{
			AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
			Resources:   api.VolumeResourceRequirements{Requests: rl("storage", size)},
		},
	}
}

func mustCreate(t testing.TB, s *store.Store, obj api.Object) api.Object {
	t.Helper()
	out, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// used returns a quota's status.used, printed sorted.
func used(t testing.TB, s *store.Store, ns, name string) string {
	t.Helper()
	obj, err := s.Get(quotaKind, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return show(obj.(*api.ResourceQuota).Status.Used)
}

// wantForbidden checks that err is the store's refusal of the named
// object with the given message.
func wantForbidden(t testing.TB, err error, name, message string) {
	t.Helper()
	var oe *store.ObjectError
	if !store.IsForbidden(err) || !errors.As(err, &oe) {
		t.Fatalf("err = %v, want a forbidden store error", err)
	}
	if oe.Name != name || oe.Detail != message {
		t.Fatalf("refused %s: %q\nwant   %s: %q", oe.Name, oe.Detail, name, message)
	}
}

func TestAdmitCountsPods(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, newQuota("team", "compute", rl("pods", "2")))
	if got := used(t, s, "team", "compute"); got != "pods=0" {
		t.Fatalf("new quota used %q", got)
	}
	obj, _ := s.Get(quotaKind, "team", "compute")
	if got := show(obj.(*api.ResourceQuota).Status.Hard); got != "pods=2" {
		t.Errorf("status.hard %q", got)
	}
	mustCreate(t, s, podIn("team", "a"))
	mustCreate(t, s, podIn("team", "b"))
	if got := used(t, s, "team", "compute"); got != "pods=2" {
		t.Fatalf("used %q after two pods", got)
	}
	_, err := s.Create(ctx, podIn("team", "c"))
	wantForbidden(t, err, "c", "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2")
	if _, err := s.Get(podKind, "team", "c"); !store.IsNotFound(err) {
		t.Fatalf("refused pod stored: %v", err)
	}
	// Another namespace has no quota; a quota there limits only there.
	for i := range 5 {
		mustCreate(t, s, podIn("other", fmt.Sprint("p", i)))
	}
	mustCreate(t, s, newQuota("elsewhere", "compute", rl("pods", "0")))
	if got := used(t, s, "team", "compute"); got != "pods=2" {
		t.Fatalf("used %q after writes in other namespaces", got)
	}

	// An unbound pod goes at once and frees its place.
	if _, err := s.Delete(ctx, podKind, "team", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=1" {
		t.Fatalf("used %q after a delete", got)
	}
	// A running pod frees its place when it is marked for deletion, not
	// again when it goes.
	c := mustCreate(t, s, podIn("team", "c")).(*api.Pod).DeepCopy()
	c.Spec.NodeName = "n1"
	c.Status.Phase = api.PodRunning
	if _, err := s.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, podKind, "team", "c", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=1" {
		t.Fatalf("used %q after marking a running pod", got)
	}
	zero := int64(0)
	if _, err := s.Delete(ctx, podKind, "team", "c", store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=1" {
		t.Fatalf("used %q after the marked pod went", got)
	}
	// A finished pod frees its place.
	mustCreate(t, s, podIn("team", "d"))
	if _, err := s.Create(ctx, podIn("team", "e")); !store.IsForbidden(err) {
		t.Fatalf("third pod: %v", err)
	}
	b, _ := s.Get(podKind, "team", "b")
	done := b.(*api.Pod).DeepCopy()
	done.Status.Phase = api.PodSucceeded
	if _, err := s.Update(ctx, done); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "compute"); got != "pods=1" {
		t.Fatalf("used %q after a pod finished", got)
	}
	mustCreate(t, s, podIn("team", "e"))
}

func TestAdmitComputeResources(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, newQuota("team", "compute", rl("requests.cpu", "1", "limits.memory", "1Gi", "cpu", "2")))
	small := func(name string) *api.Pod {
		return podIn("team", name, container("main", rl("cpu", "400m", "memory", "64Mi"), rl("memory", "512Mi")))
	}
	mustCreate(t, s, small("a"))
	mustCreate(t, s, small("b"))
	if got := used(t, s, "team", "compute"); got != "cpu=800m limits.memory=1Gi requests.cpu=800m" {
		t.Fatalf("used %q", got)
	}
	_, err := s.Create(ctx, small("c"))
	wantForbidden(t, err, "c", "exceeded quota: compute, requested: limits.memory=512Mi,requests.cpu=400m, used: limits.memory=1Gi,requests.cpu=800m, limited: limits.memory=1Gi,requests.cpu=1")
	// A pod must state what the quota limits, even when it would fit.
	_, err = s.Create(ctx, podIn("team", "idle"))
	wantForbidden(t, err, "idle", "failed quota: compute: must specify cpu for: main; limits.memory for: main; requests.cpu for: main")
	// A pod of one millicore fits beside them.
	mustCreate(t, s, podIn("team", "tiny", container("main", rl("cpu", "1m"), rl("memory", "0"))))
	if got := used(t, s, "team", "compute"); got != "cpu=801m limits.memory=1Gi requests.cpu=801m" {
		t.Fatalf("used %q after a tiny pod", got)
	}
}

func TestAdmitRefusalChargesNoQuota(t *testing.T) {
	s := newStore(t)
	mustCreate(t, s, newQuota("team", "a-counts", rl("pods", "10")))
	mustCreate(t, s, newQuota("team", "b-tight", rl("pods", "1")))
	mustCreate(t, s, podIn("team", "one"))
	_, err := s.Create(context.Background(), podIn("team", "two"))
	wantForbidden(t, err, "two", "exceeded quota: b-tight, requested: pods=1, used: pods=1, limited: pods=1")
	if got := used(t, s, "team", "a-counts"); got != "pods=1" {
		t.Errorf("a-counts used %q after a refusal by b-tight", got)
	}
}

func TestAdmitCountsExistingObjects(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for i := range 3 {
		mustCreate(t, s, podIn("team", fmt.Sprint("p", i)))
		mustCreate(t, s, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprint("c", i)}})
	}
	// A new quota is counted at once, whatever status it was given.
	q := newQuota("team", "objects", rl("pods", "4"))
	q.Status.Used = rl("pods", "0")
	mustCreate(t, s, q)
	if got := used(t, s, "team", "objects"); got != "pods=3" {
		t.Fatalf("used %q", got)
	}
	// A limit added later is counted when it is added.
	obj, _ := s.Get(quotaKind, "team", "objects")
	more := obj.(*api.ResourceQuota).DeepCopy()
	more.Spec.Hard["configmaps"] = resource.MustParse("3")
	if _, err := s.Update(ctx, more); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "objects"); got != "configmaps=3 pods=3" {
		t.Fatalf("used %q after adding a limit", got)
	}
	_, err := s.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "c3"}})
	wantForbidden(t, err, "c3", "exceeded quota: objects, requested: configmaps=1, used: configmaps=3, limited: configmaps=3")
	mustCreate(t, s, podIn("team", "p3"))
}

func TestAdmitClaimGrowth(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, newQuota("team", "storage", rl("requests.storage", "10Gi", "persistentvolumeclaims", "2")))
	mustCreate(t, s, claim("team", "data", "4Gi"))
	grow := func(size string) error {
		obj, _ := s.Get(claimKind, "team", "data")
		c := obj.(*api.PersistentVolumeClaim).DeepCopy()
		c.Spec.Resources.Requests = rl("storage", size)
		_, err := s.Update(ctx, c)
		return err
	}
	if err := grow("8Gi"); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "storage"); got != "persistentvolumeclaims=1 requests.storage=8Gi" {
		t.Fatalf("used %q", got)
	}
	wantForbidden(t, grow("12Gi"), "data",
		"exceeded quota: storage, requested: requests.storage=4Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi")
	if err := grow("2Gi"); err != nil {
		t.Fatal(err)
	}
	if got := used(t, s, "team", "storage"); got != "persistentvolumeclaims=1 requests.storage=2Gi" {
		t.Fatalf("used %q after shrinking", got)
	}
}

// TestAdmitConcurrentCreates races many writers at one quota: exactly the
// hard count get in.
func TestAdmitConcurrentCreates(t *testing.T) {
	s := newStore(t)
	const hard, writers, each = 30, 20, 5
	mustCreate(t, s, newQuota("team", "compute", rl("pods", fmt.Sprint(hard))))
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		created, denied int
		other           []error
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := s.Create(context.Background(), podIn("team", fmt.Sprintf("w%d-%d", w, i)))
				mu.Lock()
				switch {
				case err == nil:
					created++
				case store.IsForbidden(err):
					denied++
				default:
					other = append(other, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("unexpected errors: %v", other)
	}
	pods, _, err := s.List(podKind, store.Filter{Namespace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if created != hard || denied != writers*each-hard || len(pods) != hard {
		t.Fatalf("created %d, denied %d, stored %d; want %d, %d, %d", created, denied, len(pods), hard, writers*each-hard, hard)
	}
	if got := used(t, s, "team", "compute"); got != fmt.Sprintf("pods=%d", hard) {
		t.Fatalf("used %q", got)
	}
}

// BenchmarkCreatePod measures pod creation, 100 pods per transaction so
// that the hook's cost is not lost in the commit's: with no hook, with the
// quota hook in a namespace without quota (the common case), and with one
// quota to charge.
func BenchmarkCreatePod(b *testing.B) {
	const batch = 100
	for _, bc := range []struct {
		name  string
		hooks []store.AdmitFunc
		quota bool
	}{
		{"no-hook", nil, false},
		{"hook-no-quota", []store.AdmitFunc{Admit}, false},
		{"hook-one-quota", []store.AdmitFunc{Admit}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := store.New(store.Memory{}, store.Options{Admit: bc.hooks})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if bc.quota {
				mustCreate(b, s, newQuota("team", "compute", rl("pods", "1000000000", "requests.cpu", "1000000")))
			}
			// Quotas in other namespaces, as in a cluster that uses them.
			for i := range 100 {
				mustCreate(b, s, newQuota(fmt.Sprint("ns", i), "compute", rl("pods", "10")))
			}
			pod := podIn("team", "p", container("main", rl("cpu", "100m", "memory", "64Mi"), nil))
			n := 0
			for b.Loop() {
				_, err := s.Txn(ctx, func(tx *store.Txn) error {
					for range batch {
						p := pod.DeepCopy()
						p.Name = fmt.Sprint("p", n)
						n++
						if _, err := tx.Create(p); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pod")
		})
	}
}
