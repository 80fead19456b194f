package volume

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// podUsing is a pod of namespace ns using claim, bound to node ("" for
// none), in phase.
func podUsing(ns, name, claim, node string, phase api.PodPhase) *api.Pod {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: api.PodSpec{
		NodeName:   node,
		Containers: []api.Container{{Name: "app", Image: "app"}},
		Volumes:    []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}}
	api.Default(pod)
	pod.Status.Phase = phase
	return pod
}

// protectionStore is a store with the protection hook and the namespaces
// default and other, with a protector over it that the test drives.
func protectionStore(t *testing.T) (*store.Store, *protector) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: []store.AdmitFunc{AdmitProtection}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, name := range []string{"default", "other"} {
		ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		api.Default(ns)
		if _, err := st.Create(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	return st, &protector{store: st}
}

func TestAdmitProtectionOnCreate(t *testing.T) {
	st, _ := protectionStore(t)
	ctx := context.Background()
	c := claimOf("data", "", "1Gi")
	c.Finalizers = []string{"example.com/keep"}
	got, err := st.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"example.com/keep", api.FinalizerPVCProtection}; !slices.Equal(got.GetFinalizers(), want) {
		t.Errorf("claim finalizers %v, want %v", got.GetFinalizers(), want)
	}
	got, err = st.Create(ctx, pvOf("v", "", "1Gi"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{api.FinalizerPVProtection}; !slices.Equal(got.GetFinalizers(), want) {
		t.Errorf("volume finalizers %v, want %v", got.GetFinalizers(), want)
	}
	// Only at creation: a user may take it off a live object (the
	// controller then puts it back, as Kubernetes' does).
	pv := got.DeepCopyObject().(*api.PersistentVolume)
	pv.Finalizers = nil
	if got, err = st.Update(ctx, pv); err != nil || len(got.GetFinalizers()) != 0 {
		t.Errorf("update without the finalizer: %v, %v", got.GetFinalizers(), err)
	}
}

// TestClaimProtection: a claim being deleted keeps its finalizer while a
// pod bound to a node and not finished uses it, and only then.
func TestClaimProtection(t *testing.T) {
	tests := []struct {
		name string
		pods []*api.Pod
		keep bool
	}{
		{name: "no pod"},
		{name: "running pod", pods: []*api.Pod{podUsing("default", "app", "data", "n1", api.PodRunning)}, keep: true},
		{name: "pending pod on a node", pods: []*api.Pod{podUsing("default", "app", "data", "n1", api.PodPending)}, keep: true},
		{name: "pod not bound to a node", pods: []*api.Pod{podUsing("default", "app", "data", "", api.PodPending)}},
		{name: "succeeded pod", pods: []*api.Pod{podUsing("default", "app", "data", "n1", api.PodSucceeded)}},
		{name: "failed pod", pods: []*api.Pod{podUsing("default", "app", "data", "n1", api.PodFailed)}},
		{name: "pod of another claim", pods: []*api.Pod{podUsing("default", "app", "logs", "n1", api.PodRunning)}},
		{name: "pod of another namespace", pods: []*api.Pod{podUsing("other", "app", "data", "n1", api.PodRunning)}},
		{name: "one finished, one running", pods: []*api.Pod{
			podUsing("default", "a", "data", "n1", api.PodSucceeded), podUsing("default", "b", "data", "n2", api.PodRunning)}, keep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, p := protectionStore(t)
			ctx := context.Background()
			if _, err := st.Create(ctx, claimOf("data", "", "1Gi")); err != nil {
				t.Fatal(err)
			}
			for _, pod := range tt.pods {
				if _, err := st.Create(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Delete(ctx, claimKind, "default", "data", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := p.syncClaim(ctx, "default", "data"); err != nil {
				t.Fatal(err)
			}
			o, err := st.Get(claimKind, "default", "data")
			switch {
			case tt.keep && err != nil:
				t.Fatalf("claim gone while in use: %v", err)
			case tt.keep && (o.GetDeletionTimestamp() == nil || !slices.Equal(o.GetFinalizers(), []string{api.FinalizerPVCProtection})):
				t.Fatalf("claim in use: deletion %v finalizers %v", o.GetDeletionTimestamp(), o.GetFinalizers())
			case !tt.keep && !store.IsNotFound(err):
				t.Fatalf("claim no pod uses: %v, finalizers %v", err, o.GetFinalizers())
			}
		})
	}
}

// TestVolumeProtection: a volume being deleted keeps its finalizer while
// it is Bound; a volume that lacks the finalizer gets it.
func TestVolumeProtection(t *testing.T) {
	for _, phase := range []api.PersistentVolumePhase{api.VolumeBound, api.VolumeReleased, api.VolumeAvailable, api.VolumeFailed} {
		t.Run(string(phase), func(t *testing.T) {
			st, p := protectionStore(t)
			ctx := context.Background()
			pv := pvOf("v", "", "1Gi")
			pv.Status.Phase = phase
			if _, err := st.Create(ctx, pv); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Delete(ctx, volumeKind, "", "v", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := p.syncVolume(ctx, "v"); err != nil {
				t.Fatal(err)
			}
			_, err := st.Get(volumeKind, "", "v")
			if phase == api.VolumeBound && err != nil {
				t.Fatalf("bound volume gone: %v", err)
			}
			if phase != api.VolumeBound && !store.IsNotFound(err) {
				t.Fatalf("%s volume being deleted still there: %v", phase, err)
			}
		})
	}
}

// TestProtectionAddedToOlderObjects: claims and volumes stored before
// protection existed, and live, get the finalizer from the controller;
// one already being deleted does not.
func TestProtectionAddedToOlderObjects(t *testing.T) {
	st, p := protectionStore(t)
	ctx := context.Background()
	// Written with the finalizer taken off again, as a store from before
	// the hook holds them.
	strip := func(obj api.Object) {
		t.Helper()
		o, err := st.Create(ctx, obj)
		if err != nil {
			t.Fatal(err)
		}
		o = o.DeepCopyObject().(api.Object)
		o.SetFinalizers(nil)
		if _, err := st.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	strip(claimOf("data", "", "1Gi"))
	strip(pvOf("v", "", "1Gi"))
	if err := p.syncClaim(ctx, "default", "data"); err != nil {
		t.Fatal(err)
	}
	if err := p.syncVolume(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if o, _ := st.Get(claimKind, "default", "data"); !slices.Equal(o.GetFinalizers(), []string{api.FinalizerPVCProtection}) {
		t.Errorf("claim finalizers %v", o.GetFinalizers())
	}
	if o, _ := st.Get(volumeKind, "", "v"); !slices.Equal(o.GetFinalizers(), []string{api.FinalizerPVProtection}) {
		t.Errorf("volume finalizers %v", o.GetFinalizers())
	}
}

// TestClaimInUseReclaimedOnceItsPodGoes runs the volume and protection
// controllers: a claim deleted while its pod runs is kept, with its
// volume; once the pod is deleted the claim goes and the volume's Delete
// policy hands it to its node's agent.
func TestClaimInUseReclaimedOnceItsPodGoes(t *testing.T) {
	f := newProtectedFixture(t)
	f.create(node("n1"))
	f.create(localPV("gone", "n1", api.PersistentVolumeReclaimDelete))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "gone")
	f.create(podUsing("default", "app", "data", "n1", api.PodRunning))
	f.deleteClaim("data")
	if c := f.claim("data"); c == nil || c.DeletionTimestamp == nil || !slices.Contains(c.Finalizers, api.FinalizerPVCProtection) {
		t.Fatalf("claim in use after its deletion: %+v", c)
	}
	if _, err := f.store.Delete(context.Background(), podKind, "default", "app", store.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	f.waitRetrying("claim gone, volume handed to its agent", func() error {
		if c := f.claim("data"); c != nil {
			return fmt.Errorf("claim finalizers %v", c.Finalizers)
		}
		pv := f.volume("gone")
		if pv == nil || pv.DeletionTimestamp == nil || pv.Labels[api.LabelReclaimNode] != "n1" ||
			!slices.Equal(pv.Finalizers, []string{api.FinalizerLocalPath}) {
			return fmt.Errorf("volume %+v", pv)
		}
		return nil
	})
}

// TestBoundVolumeDeletedWaitsForItsClaim: a volume deleted while Bound
// stays, bound, until its claim is gone; then its reclaim policy runs
// before it goes: Delete behind the local-path finalizer, Retain at once.
func TestBoundVolumeDeletedWaitsForItsClaim(t *testing.T) {
	f := newProtectedFixture(t)
	f.create(node("n1"))
	f.create(localPV("wiped", "n1", api.PersistentVolumeReclaimDelete))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "wiped")
	f.create(localPV("kept", "n1", api.PersistentVolumeReclaimRetain))
	f.create(claimOf("logs", "", "1Gi"))
	f.waitBound("logs", "kept")
	for _, name := range []string{"wiped", "kept"} {
		if _, err := f.store.Delete(context.Background(), volumeKind, "", name, store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if pv := f.volume(name); pv == nil || pv.DeletionTimestamp == nil {
			t.Fatalf("bound volume %s after its deletion: %+v", name, pv)
		}
	}
	f.deleteClaim("data")
	f.deleteClaim("logs")
	f.waitRetrying("volumes reclaimed", func() error {
		if pv := f.volume("kept"); pv != nil {
			return fmt.Errorf("retained volume still there: %s %v", pv.Status.Phase, pv.Finalizers)
		}
		pv := f.volume("wiped")
		if pv == nil || pv.Status.Phase != api.VolumeReleased || pv.Labels[api.LabelReclaimNode] != "n1" ||
			!slices.Equal(pv.Finalizers, []string{api.FinalizerLocalPath}) {
			return fmt.Errorf("volume %+v", pv)
		}
		return nil
	})
}
