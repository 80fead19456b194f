package volume

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// recorder keeps the events the controller records.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Event(obj api.Object, eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s: %s", obj.GetName(), eventType, reason, message))
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) has(name, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.events, func(e string) bool {
		var n, typ, rsn string
		fmt.Sscanf(e, "%s %s %s", &n, &typ, &rsn)
		return n == name && rsn == reason+":"
	})
}

type fixture struct {
	t       *testing.T
	store   *store.Store
	clock   *clocktesting.FakeClock
	events  *recorder
	changed chan struct{}
	// scheduler is told when volumes change, once the test runs one.
	scheduler atomic.Pointer[func()]
}

// newFixture runs the volume controller over a real store on a fake clock
// until the test ends.
func newFixture(t *testing.T) *fixture { t.Helper(); return newFixtureWith(t, false) }

// newProtectedFixture is newFixture with the protection finalizers: the
// admission hook that adds them and the controller that removes them.
func newProtectedFixture(t *testing.T) *fixture { t.Helper(); return newFixtureWith(t, true) }

// newFixtureWith is newFixture with the protection finalizers or not,
// and with more admission hooks in the store (a refusal a test needs).
func newFixtureWith(t *testing.T, protect bool, more ...store.AdmitFunc) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	admit := []store.AdmitFunc{AdmitDefaultClass}
	if protect {
		admit = append(admit, AdmitProtection)
	}
	admit = append(admit, more...)
	st, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: admit})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: st, clock: clk, events: &recorder{}, changed: make(chan struct{}, 1)}
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	api.Default(ns)
	f.create(ns)
	c := NewController(st, Options{Clock: clk, Events: f.events, NodeGracePeriod: time.Minute, Logger: slog.New(slog.DiscardHandler), VolumesChanged: func() {
		select {
		case f.changed <- struct{}{}:
		default:
		}
		if fn := f.scheduler.Load(); fn != nil {
			(*fn)()
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	if protect {
		p := NewProtectionController(st, Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
		wg.Go(func() {
			if err := p.Run(ctx, 2); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		st.Close()
	})
	return f
}

func (f *fixture) create(obj api.Object) api.Object {
	f.t.Helper()
	out, err := f.store.Create(context.Background(), obj)
	if err != nil {
		f.t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	return out
}

func (f *fixture) claim(name string) *api.PersistentVolumeClaim {
	o, err := f.store.Get(claimKind, "default", name)
	if err != nil {
		return nil
	}
	return o.(*api.PersistentVolumeClaim)
}

func (f *fixture) volume(name string) *api.PersistentVolume {
	o, err := f.store.Get(volumeKind, "", name)
	if err != nil {
		return nil
	}
	return o.(*api.PersistentVolume)
}

// waitRetrying waits for cond as testtool.WaitFor does. A write that lost
// a race with another worker's is retried conflictRetry later on the
// controllers' clock, which is the fixture's fake one: once the wait has
// lasted a while, fake time passes as real time does, conflictRetry at a
// time.
func (f *fixture) waitRetrying(what string, cond func() error) {
	f.t.Helper()
	stepped := time.Now().Add(200 * time.Millisecond)
	testtool.WaitFor(f.t, 10*time.Second, what, func() error {
		if time.Since(stepped) >= conflictRetry {
			f.clock.Step(conflictRetry)
			stepped = time.Now()
		}
		return cond()
	})
}

// waitBound waits until claim is Bound to volume and the volume to it.
func (f *fixture) waitBound(claim, volume string) {
	f.t.Helper()
	f.waitRetrying("claim "+claim+" bound to "+volume, func() error {
		c, pv := f.claim(claim), f.volume(volume)
		switch {
		case c == nil || pv == nil:
			return fmt.Errorf("claim %v, volume %v", c != nil, pv != nil)
		case c.Spec.VolumeName != volume || c.Status.Phase != api.ClaimBound:
			return fmt.Errorf("claim: volumeName %q phase %s", c.Spec.VolumeName, c.Status.Phase)
		case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != string(c.UID) || pv.Status.Phase != api.VolumeBound:
			return fmt.Errorf("volume: claimRef %v phase %s", pv.Spec.ClaimRef, pv.Status.Phase)
		}
		if got, want := c.Status.Capacity[api.ResourceStorage], pv.Spec.Capacity[api.ResourceStorage]; got.Cmp(want) != 0 {
			return fmt.Errorf("claim capacity %s, volume %s", got.String(), want.String())
		}
		return nil
	})
}

func (f *fixture) waitVolumePhase(name string, phase api.PersistentVolumePhase) *api.PersistentVolume {
	f.t.Helper()
	var pv *api.PersistentVolume
	testtool.WaitFor(f.t, 10*time.Second, "volume "+name+" "+string(phase), func() error {
		pv = f.volume(name)
		if pv == nil {
			return fmt.Errorf("no volume")
		}
		if pv.Status.Phase != phase {
			return fmt.Errorf("phase %s (%s)", pv.Status.Phase, pv.Status.Message)
		}
		return nil
	})
	return pv
}

func (f *fixture) deleteClaim(name string) {
	f.t.Helper()
	if _, err := f.store.Delete(context.Background(), claimKind, "default", name, store.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func node(name string) *api.Node {
	n := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{api.LabelHostname: name},
		Annotations: map[string]string{api.AnnotationLocalPathRoot: "/var/lib/berth-agent/volumes"}}}
	n.Status.Conditions = []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}}
	return n
}

func class(name string, mode api.VolumeBindingMode, policy api.PersistentVolumeReclaimPolicy) *api.StorageClass {
	sc := &api.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: api.LocalPathProvisioner,
		VolumeBindingMode: &mode, ReclaimPolicy: &policy}
	api.Default(sc)
	return sc
}

func TestBindsSmallestFittingVolume(t *testing.T) {
	f := newFixture(t)
	f.create(pvOf("ten", "", "10Gi"))
	f.create(pvOf("five", "", "5Gi"))
	f.create(claimOf("data", "", "4Gi"))
	f.waitBound("data", "five")
	f.waitVolumePhase("ten", api.VolumeAvailable)
	if pv := f.volume("five"); pv.Annotations[api.AnnotationBoundByController] != "yes" {
		t.Errorf("volume annotations %v", pv.Annotations)
	}
}

// TestClaimWithoutClassWaitsForVolume: a claim asking for no class stays
// Pending, with an event, until a volume large enough appears.
func TestClaimWithoutClassWaitsForVolume(t *testing.T) {
	f := newFixture(t)
	f.create(pvOf("ten", "", "10Gi"))
	f.create(claimOf("big", "", "20Gi"))
	testtool.WaitFor(t, 10*time.Second, "a FailedBinding event", func() error {
		if !f.events.has("big", ReasonFailedBinding) {
			return fmt.Errorf("events: %v", f.events.list())
		}
		return nil
	})
	if c := f.claim("big"); c.Status.Phase != api.ClaimPending || c.Spec.VolumeName != "" {
		t.Fatalf("claim %s bound to %q", c.Status.Phase, c.Spec.VolumeName)
	}
	f.create(pvOf("twenty", "", "20Gi"))
	f.waitBound("big", "twenty")
}

// TestPreBoundVolumeComesFirst: a volume whose claimRef names the claim
// wins over a smaller available one, and a claim naming a volume gets it.
func TestPreBoundVolumeComesFirst(t *testing.T) {
	f := newFixture(t)
	f.create(pvOf("small", "", "1Gi"))
	pre := pvOf("reserved", "", "10Gi")
	pre.Spec.ClaimRef = &api.ObjectReference{Namespace: "default", Name: "data"}
	f.create(pre)
	f.waitVolumePhase("reserved", api.VolumeAvailable)
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "reserved")

	named := claimOf("named", "", "1Gi")
	named.Spec.VolumeName = "other"
	f.create(pvOf("other", "", "3Gi"))
	f.create(named)
	f.waitBound("named", "other")
	f.waitVolumePhase("small", api.VolumeAvailable)
}

// TestBindingSurvivesCrashBetweenSteps: a volume whose claimRef was
// written while the claim was not (a crash between the two writes)
// converges to a complete binding.
func TestBindingSurvivesCrashBetweenSteps(t *testing.T) {
	f := newFixture(t)
	c := f.create(claimOf("data", "", "1Gi")).(*api.PersistentVolumeClaim)
	half := pvOf("half", "", "2Gi")
	half.Spec.ClaimRef = claimRef(c)
	half.Annotations = map[string]string{api.AnnotationBoundByController: "yes"}
	half.Status.Phase = api.VolumeBound
	f.create(half)
	f.create(pvOf("smaller", "", "1Gi"))
	f.waitBound("data", "half")
	f.waitVolumePhase("smaller", api.VolumeAvailable)
}

// TestDefaultClassAdmission: a claim without storageClassName gets the
// default class; one with "" keeps none.
func TestDefaultClassAdmission(t *testing.T) {
	f := newFixture(t)
	f.create(DefaultClass())
	got := f.create(claimOf("defaulted", "-", "1Gi")).(*api.PersistentVolumeClaim)
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != DefaultClassName {
		t.Errorf("class %v, want %s", got.Spec.StorageClassName, DefaultClassName)
	}
	got = f.create(claimOf("none", "", "1Gi")).(*api.PersistentVolumeClaim)
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "" {
		t.Errorf("class %v, want empty", got.Spec.StorageClassName)
	}
}

// TestWaitForFirstConsumerProvisionsOnPodsNode: a claim of a
// WaitForFirstConsumer class waits until a pod using it is bound to a
// node, then gets a local-path volume on that node.
func TestWaitForFirstConsumerProvisionsOnPodsNode(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	f.create(node("n2"))
	f.create(DefaultClass())
	c := f.create(claimOf("data", "-", "1Gi")).(*api.PersistentVolumeClaim)
	testtool.WaitFor(t, 10*time.Second, "a WaitForFirstConsumer event", func() error {
		if !f.events.has("data", ReasonWaitForFirstConsumer) {
			return fmt.Errorf("events: %v", f.events.list())
		}
		return nil
	})
	f.create(podUsing("default", "app", "data", "n2", api.PodPending))
	name := "pvc-" + string(c.UID)
	f.waitBound("data", name)
	pv := f.volume(name)
	if got := api.LocalVolumeNode(pv); got != "n2" {
		t.Errorf("volume on node %q, want n2", got)
	}
	if pv.Spec.Local == nil || pv.Spec.Local.Path != "/var/lib/berth-agent/volumes/"+name {
		t.Errorf("volume source %+v", pv.Spec.PersistentVolumeSource)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != api.PersistentVolumeReclaimDelete || pv.Annotations[api.AnnotationProvisionedBy] != api.LocalPathProvisioner {
		t.Errorf("policy %s, annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
	}
	if got := f.claim("data").Annotations[api.AnnotationSelectedNode]; got != "n2" {
		t.Errorf("selected node %q", got)
	}
	select {
	case <-f.changed:
	default:
		t.Error("the scheduler was not told volumes changed")
	}
}

// TestImmediateClassProvisionsWithNodePath: an Immediate class picks a
// node itself, and its nodePath parameter sets the root.
func TestImmediateClassProvisionsWithNodePath(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	sc := class("fast", api.VolumeBindingImmediate, api.PersistentVolumeReclaimRetain)
	sc.Parameters = map[string]string{api.LocalPathNodePath: "/srv/fast"}
	f.create(sc)
	c := f.create(claimOf("data", "fast", "3Gi")).(*api.PersistentVolumeClaim)
	name := "pvc-" + string(c.UID)
	f.waitBound("data", name)
	pv := f.volume(name)
	if pv.Spec.Local.Path != "/srv/fast/"+name || api.LocalVolumeNode(pv) != "n1" || pv.Spec.PersistentVolumeReclaimPolicy != api.PersistentVolumeReclaimRetain {
		t.Errorf("volume %s on %s, policy %s", pv.Spec.Local.Path, api.LocalVolumeNode(pv), pv.Spec.PersistentVolumeReclaimPolicy)
	}
}

func localPV(name, node string, policy api.PersistentVolumeReclaimPolicy) *api.PersistentVolume {
	pv := pvOf(name, "", "1Gi")
	pv.Spec.HostPath = nil
	pv.Spec.Local = &api.LocalVolumeSource{Path: "/var/lib/berth-agent/volumes/" + name}
	pv.Spec.NodeAffinity = hostnameAffinity(node)
	pv.Spec.PersistentVolumeReclaimPolicy = policy
	return pv
}

func TestRetainReleases(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	f.create(localPV("keep", "n1", api.PersistentVolumeReclaimRetain))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "keep")
	f.deleteClaim("data")
	pv := f.waitVolumePhase("keep", api.VolumeReleased)
	if pv.Spec.ClaimRef == nil || pv.DeletionTimestamp != nil {
		t.Errorf("released volume: claimRef %v, deleting %v", pv.Spec.ClaimRef, pv.DeletionTimestamp)
	}
	// A new claim does not get a released volume.
	f.create(claimOf("again", "", "1Gi"))
	testtool.WaitFor(t, 10*time.Second, "a FailedBinding event", func() error {
		if !f.events.has("again", ReasonFailedBinding) {
			return fmt.Errorf("events: %v", f.events.list())
		}
		return nil
	})
}

// TestDeleteWaitsForAgent: under Delete the volume is labelled for its
// node and held by the local-path finalizer; when the agent removes the
// finalizer, the volume is gone.
func TestDeleteWaitsForAgent(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	f.create(localPV("gone", "n1", api.PersistentVolumeReclaimDelete))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "gone")
	f.deleteClaim("data")
	var pv *api.PersistentVolume
	testtool.WaitFor(t, 10*time.Second, "volume being deleted for its agent", func() error {
		pv = f.volume("gone")
		if pv == nil || pv.DeletionTimestamp == nil {
			return fmt.Errorf("not being deleted")
		}
		return nil
	})
	if pv.Labels[api.LabelReclaimNode] != "n1" || !slices.Contains(pv.Finalizers, api.FinalizerLocalPath) {
		t.Fatalf("labels %v finalizers %v", pv.Labels, pv.Finalizers)
	}
	// The agent's part.
	pv = pv.DeepCopy()
	pv.Finalizers = nil
	if _, err := f.store.Update(context.Background(), pv); err != nil {
		t.Fatal(err)
	}
	if f.volume("gone") != nil {
		t.Fatal("volume still there after its finalizer was removed")
	}
}

// TestRecycleWaitsForAgent: under Recycle the volume asks its node's
// agent for a wipe and, once the agent answers, is Available again.
func TestRecycleWaitsForAgent(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	f.create(localPV("reuse", "n1", api.PersistentVolumeReclaimRecycle))
	c := f.create(claimOf("data", "", "1Gi")).(*api.PersistentVolumeClaim)
	f.waitBound("data", "reuse")
	f.deleteClaim("data")
	var pv *api.PersistentVolume
	testtool.WaitFor(t, 10*time.Second, "a recycle request", func() error {
		pv = f.volume("reuse")
		if pv.Annotations[api.AnnotationRecycle] != string(c.UID) || pv.Labels[api.LabelReclaimNode] != "n1" {
			return fmt.Errorf("phase %s annotations %v labels %v", pv.Status.Phase, pv.Annotations, pv.Labels)
		}
		return nil
	})
	if pv.Status.Phase != api.VolumeReleased {
		t.Errorf("phase %s while recycling", pv.Status.Phase)
	}
	pv = pv.DeepCopy()
	pv.Annotations[api.AnnotationRecycled] = string(c.UID)
	if _, err := f.store.Update(context.Background(), pv); err != nil {
		t.Fatal(err)
	}
	pv = f.waitVolumePhase("reuse", api.VolumeAvailable)
	if pv.Spec.ClaimRef != nil || pv.Annotations[api.AnnotationRecycle] != "" || pv.Labels[api.LabelReclaimNode] != "" {
		t.Errorf("recycled volume: claimRef %v annotations %v labels %v", pv.Spec.ClaimRef, pv.Annotations, pv.Labels)
	}
	f.create(claimOf("next", "", "1Gi"))
	f.waitBound("next", "reuse")
}

// TestReclaimOnGoneNodeFails: a released Delete volume whose node has no
// Node object is marked Failed once the grace period has passed.
func TestReclaimOnGoneNodeFails(t *testing.T) {
	f := newFixture(t)
	f.create(localPV("orphan", "dead", api.PersistentVolumeReclaimDelete))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "orphan")
	f.deleteClaim("data")
	f.waitVolumePhase("orphan", api.VolumeReleased)
	// Not before the grace period.
	f.clock.Step(30 * time.Second)
	if pv := f.volume("orphan"); pv.Status.Phase != api.VolumeReleased {
		t.Fatalf("phase %s before the grace period", pv.Status.Phase)
	}
	testtool.WaitFor(t, 10*time.Second, "volume Failed", func() error {
		f.clock.Step(10 * time.Second)
		pv := f.volume("orphan")
		if pv.Status.Phase != api.VolumeFailed {
			return fmt.Errorf("phase %s", pv.Status.Phase)
		}
		if want := "node dead is gone"; len(pv.Status.Message) < len(want) || pv.Status.Message[:len(want)] != want {
			return fmt.Errorf("message %q", pv.Status.Message)
		}
		return nil
	})
}

// TestLostVolumeMarksClaimLost: a bound claim whose volume is deleted is
// Lost.
func TestLostVolumeMarksClaimLost(t *testing.T) {
	f := newFixture(t)
	f.create(pvOf("v", "", "1Gi"))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "v")
	if _, err := f.store.Delete(context.Background(), volumeKind, "", "v", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "claim Lost", func() error {
		if c := f.claim("data"); c.Status.Phase != api.ClaimLost {
			return fmt.Errorf("phase %s", c.Status.Phase)
		}
		return nil
	})
}

// TestBindsManyClaims binds a thousand claims over the store, each to a
// volume of its own.
func TestBindsManyClaims(t *testing.T) {
	f := newFixture(t)
	const n = 1000
	for i := range n {
		f.create(pvOf(fmt.Sprintf("pv-%04d", i), "", fmt.Sprintf("%dGi", 1+i%10)))
	}
	for i := range n {
		c := claimOf(fmt.Sprintf("c-%04d", i), "", fmt.Sprintf("%dGi", 1+i%10))
		f.create(c)
	}
	testtool.WaitFor(t, 30*time.Second, "every claim bound", func() error {
		// Two workers binding 1,000 claims may meet a conflict, which
		// the controller retries after a back-off on its (fake) clock:
		// time moves on with each look, so the retry comes.
		f.clock.Step(time.Second)
		claims, _, err := f.store.List(claimKind, store.Filter{})
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for _, o := range claims {
			c := o.(*api.PersistentVolumeClaim)
			if c.Status.Phase != api.ClaimBound {
				return fmt.Errorf("%s is %s", c.Name, c.Status.Phase)
			}
			if used[c.Spec.VolumeName] {
				return fmt.Errorf("volume %s bound twice", c.Spec.VolumeName)
			}
			used[c.Spec.VolumeName] = true
			req := c.Spec.Resources.Requests[api.ResourceStorage]
			if got := c.Status.Capacity[api.ResourceStorage]; got.Cmp(req) < 0 {
				return fmt.Errorf("%s got %s for %s", c.Name, got.String(), req.String())
			}
		}
		return nil
	})
}

// TestExpandLocalPathClaim: a bound local-path claim that asks for more
// gets it when its class allows expansion; a static volume keeps its size.
func TestExpandLocalPathClaim(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	sc := class("grow", api.VolumeBindingImmediate, api.PersistentVolumeReclaimDelete)
	yes := true
	sc.AllowVolumeExpansion = &yes
	f.create(sc)
	c := f.create(claimOf("data", "grow", "1Gi")).(*api.PersistentVolumeClaim)
	name := "pvc-" + string(c.UID)
	f.waitBound("data", name)
	grow := func(claim, size string) {
		t.Helper()
		cur := f.claim(claim).DeepCopy()
		cur.Spec.Resources.Requests[api.ResourceStorage] = resource.MustParse(size)
		if _, err := f.store.Update(context.Background(), cur); err != nil {
			t.Fatal(err)
		}
	}
	grow("data", "3Gi")
	testtool.WaitFor(t, 10*time.Second, "claim and volume at 3Gi", func() error {
		got := f.claim("data").Status.Capacity[api.ResourceStorage]
		pvGot := f.volume(name).Spec.Capacity[api.ResourceStorage]
		if got.Cmp(resource.MustParse("3Gi")) != 0 || pvGot.Cmp(resource.MustParse("3Gi")) != 0 {
			return fmt.Errorf("claim %s, volume %s", got.String(), pvGot.String())
		}
		return nil
	})

	f.create(pvOf("static", "", "1Gi"))
	f.create(claimOf("fixed", "", "1Gi"))
	f.waitBound("fixed", "static")
	grow("fixed", "2Gi")
	testtool.WaitFor(t, 10*time.Second, "a VolumeResizeFailed event", func() error {
		if !f.events.has("fixed", ReasonVolumeResizeFailed) {
			return fmt.Errorf("events: %v", f.events.list())
		}
		return nil
	})
	if got := f.volume("static").Spec.Capacity[api.ResourceStorage]; got.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("static volume resized to %s", got.String())
	}
}

// TestDeleteOutsideLocalPathFails: a released Delete volume that neither
// the provisioner made nor lives under its node's root is not removed by
// anyone; it is marked Failed with the reason.
func TestDeleteOutsideLocalPathFails(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	pv := localPV("mine", "n1", api.PersistentVolumeReclaimDelete)
	pv.Spec.Local.Path = "/srv/data"
	f.create(pv)
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "mine")
	f.deleteClaim("data")
	got := f.waitVolumePhase("mine", api.VolumeFailed)
	if got.DeletionTimestamp != nil || got.Status.Reason != ReasonVolumeFailedDelete || !strings.Contains(got.Status.Message, "/srv/data") {
		t.Errorf("volume: deleting %v, reason %q, message %q", got.DeletionTimestamp, got.Status.Reason, got.Status.Message)
	}
}

// TestDeletionOnGoneNodeFails: a volume waiting for its node's agent to
// remove its directory is marked Failed once the node has been gone for
// the grace period, instead of waiting without a word.
func TestDeletionOnGoneNodeFails(t *testing.T) {
	f := newFixture(t)
	f.create(node("n1"))
	f.create(localPV("late", "n1", api.PersistentVolumeReclaimDelete))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "late")
	f.deleteClaim("data")
	testtool.WaitFor(t, 10*time.Second, "volume being deleted", func() error {
		if pv := f.volume("late"); pv == nil || pv.DeletionTimestamp == nil {
			return fmt.Errorf("not being deleted")
		}
		return nil
	})
	if _, err := f.store.Delete(context.Background(), nodeKind, "", "n1", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "volume Failed", func() error {
		f.clock.Step(10 * time.Second)
		pv := f.volume("late")
		if pv == nil || pv.Status.Phase != api.VolumeFailed {
			return fmt.Errorf("volume %v", pv)
		}
		if !strings.Contains(pv.Status.Message, "node n1 is gone") || !slices.Contains(pv.Finalizers, api.FinalizerLocalPath) {
			return fmt.Errorf("message %q, finalizers %v", pv.Status.Message, pv.Finalizers)
		}
		return nil
	})
}
