package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// TestClaimInUseOutlivesItsDeletion checks, through the API as kubectl
// would, that a claim deleted while a pod uses it is only marked
// (Terminating, held by kubernetes.io/pvc-protection) and its volume kept;
// once the pod is deleted the claim goes and the volume's Delete policy
// hands it to its node's agent.
func TestClaimInUseOutlivesItsDeletion(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreMemory)
	c, err := client.New(&client.Config{Server: "https://" + r.Addr().String(), Token: r.Credentials().AdminToken, CAData: r.Credentials().CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claims, volumes, pods := api.MustLookupResource("persistentvolumeclaims"), api.MustLookupResource("persistentvolumes"), api.MustLookupResource("pods")
	// The node's agent, as far as the volume controller can tell.
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{api.LabelHostname: "n1"},
		Annotations: map[string]string{api.AnnotationLocalPathRoot: "/var/lib/berth-agent/volumes"}}}
	node.Status.Conditions = []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}}
	api.Default(node)
	if _, err := r.Store().Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	claim := &api.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"}, Spec: api.PersistentVolumeClaimSpec{
		AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
		Resources:   api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Spec: api.PodSpec{
		NodeName:   "n1",
		Containers: []api.Container{{Name: "app", Image: "app"}},
		Volumes:    []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
	for _, o := range []api.Object{claim, pod} {
		if _, err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var volume string
	testtool.WaitFor(t, 20*time.Second, "claim bound", func() error {
		o, err := c.Get(ctx, claims, "default", "data")
		if err != nil {
			return err
		}
		if cl := o.(*api.PersistentVolumeClaim); cl.Status.Phase != api.ClaimBound {
			return fmt.Errorf("phase %s", cl.Status.Phase)
		}
		volume = o.(*api.PersistentVolumeClaim).Spec.VolumeName
		return nil
	})

	// kubectl delete pvc data: the claim is Terminating, not gone.
	if _, err := c.Delete(ctx, claims, "default", "data", nil); err != nil {
		t.Fatal(err)
	}
	o, err := c.Get(ctx, claims, "default", "data")
	if err != nil {
		t.Fatalf("claim in use after its deletion: %v", err)
	}
	if o.GetDeletionTimestamp() == nil || !slices.Equal(o.GetFinalizers(), []string{api.FinalizerPVCProtection}) {
		t.Fatalf("claim in use: deletionTimestamp %v, finalizers %v", o.GetDeletionTimestamp(), o.GetFinalizers())
	}
	if o, err := c.Get(ctx, volumes, "", volume); err != nil || o.(*api.PersistentVolume).Status.Phase != api.VolumeBound || o.GetDeletionTimestamp() != nil {
		t.Fatalf("volume of a claim in use: %v, %v", o, err)
	}

	// kubectl delete pod app --grace-period=0 --force: the claim goes, and
	// the volume is handed to its node's agent to remove the directory.
	if _, err := c.Delete(ctx, pods, "default", "app", &metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 20*time.Second, "claim gone, volume handed to its agent", func() error {
		if _, err := c.Get(ctx, claims, "default", "data"); !client.IsNotFound(err) {
			return fmt.Errorf("claim: %v", err)
		}
		o, err := c.Get(ctx, volumes, "", volume)
		if err != nil {
			return err
		}
		pv := o.(*api.PersistentVolume)
		if pv.DeletionTimestamp == nil || pv.Labels[api.LabelReclaimNode] != "n1" || !slices.Equal(pv.Finalizers, []string{api.FinalizerLocalPath}) {
			return fmt.Errorf("volume: deletionTimestamp %v labels %v finalizers %v", pv.DeletionTimestamp, pv.Labels, pv.Finalizers)
		}
		return nil
	})
	// The agent's part: the directory removed, the finalizer taken off.
	o, err = c.Get(ctx, volumes, "", volume)
	if err != nil {
		t.Fatal(err)
	}
	o.SetFinalizers(nil)
	if _, err := c.Update(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, volumes, "", volume); !client.IsNotFound(err) {
		t.Fatalf("volume after the agent's part: %v", err)
	}
}

// TestClaimResizeRules checks, through the API, Kubernetes' rules for a
// claim's storage request: it may not shrink, may grow only once the
// claim is bound, and only when its StorageClass allows expansion.
func TestClaimResizeRules(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreMemory)
	c, err := client.New(&client.Config{Server: "https://" + r.Addr().String(), Token: r.Credentials().AdminToken, CAData: r.Credentials().CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claims := api.MustLookupResource("persistentvolumeclaims")
	yes := true
	grow := &api.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "grow"}, Provisioner: api.LocalPathProvisioner,
		Parameters: map[string]string{api.LocalPathNodePath: "/srv/grow"}, AllowVolumeExpansion: &yes}
	fixed := &api.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: api.LocalPathProvisioner,
		Parameters: map[string]string{api.LocalPathNodePath: "/srv/fixed"}}
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{api.LabelHostname: "n1"}}}
	node.Status.Conditions = []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}}
	api.Default(node)
	if _, err := r.Store().Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	claim := func(name, class string) *api.PersistentVolumeClaim {
		return &api.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: api.PersistentVolumeClaimSpec{
			AccessModes:      []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse("2Gi")}},
		}}
	}
	for _, o := range []api.Object{grow, fixed, claim("elastic", "grow"), claim("rigid", "fixed"), claim("waiting", "nowhere")} {
		if _, err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"elastic", "rigid"} {
		testtool.WaitFor(t, 20*time.Second, "claim "+name+" bound", func() error {
			o, err := c.Get(ctx, claims, "default", name)
			if err != nil {
				return err
			}
			if phase := o.(*api.PersistentVolumeClaim).Status.Phase; phase != api.ClaimBound {
				return fmt.Errorf("phase %s", phase)
			}
			return nil
		})
	}
	resize := func(name, size string) error {
		o, err := c.Get(ctx, claims, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		cl := o.(*api.PersistentVolumeClaim)
		cl.Spec.Resources.Requests[api.ResourceStorage] = resource.MustParse(size)
		_, err = c.Update(ctx, cl)
		return err
	}
	tests := []struct {
		claim, size string
		want        string // "" for accepted
		forbidden   bool
	}{
		{claim: "elastic", size: "1Gi", want: `PersistentVolumeClaim "elastic" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than previous value`},
		{claim: "rigid", size: "3Gi", forbidden: true,
			want: `persistentvolumeclaims "rigid" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`},
		{claim: "waiting", size: "3Gi", forbidden: true, want: `persistentvolumeclaims "waiting" is forbidden: Only bound persistent volume claims can be expanded`},
		{claim: "elastic", size: "3Gi"},
		{claim: "rigid", size: "2Gi"},
	}
	for _, tt := range tests {
		err := resize(tt.claim, tt.size)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("resize %s to %s: %v", tt.claim, tt.size, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || client.IsForbidden(err) != tt.forbidden):
			t.Errorf("resize %s to %s: %v\nwant (forbidden %v) %q", tt.claim, tt.size, err, tt.forbidden, tt.want)
		}
	}
}
