package apply

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/volume"
)

// TestPrunedClaimInUseWaits: a claim the source no longer declares is
// pruned as any object is, but while a pod uses it its protection
// finalizer holds it, Terminating; later revisions neither prune it again
// nor count it as the source's.
func TestPrunedClaimInUseWaits(t *testing.T) {
	f := newFixture(t, volume.AdmitProtection)
	claim := `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`
	f.mustApply(decode(t, "r1", "all.yaml", docs(claim, configMap("settings", "1"))))
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Spec: api.PodSpec{
		NodeName:   "n1",
		Containers: []api.Container{{Name: "app", Image: "app"}},
		Volumes:    []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
	api.Default(pod)
	f.create(pod)

	if res := f.mustApply(decode(t, "r2", "all.yaml", configMap("settings", "1"))); res.Counts.Pruned != 1 {
		t.Fatalf("counts %+v, want the claim pruned", res.Counts)
	}
	c := f.get("PersistentVolumeClaim", "default", "data")
	if c.GetDeletionTimestamp() == nil || !slices.Equal(c.GetFinalizers(), []string{api.FinalizerPVCProtection}) {
		t.Fatalf("pruned claim: deletionTimestamp %v, finalizers %v", c.GetDeletionTimestamp(), c.GetFinalizers())
	}
	res := f.mustApply(decode(t, "r3", "all.yaml", configMap("settings", "2")))
	if res.Counts.Pruned != 0 || f.source().Status.Objects != 1 {
		t.Errorf("counts %+v, objects %d: want the terminating claim left to its finalizer", res.Counts, f.source().Status.Objects)
	}
	if c2 := f.get("PersistentVolumeClaim", "default", "data"); c2.GetResourceVersion() != c.GetResourceVersion() {
		t.Errorf("claim written by r3: resourceVersion %s, was %s", c2.GetResourceVersion(), c.GetResourceVersion())
	}
}
