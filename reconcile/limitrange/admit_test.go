package limitrange

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/quota"
	"github.com/berth-dev/berth/store"
)

func newStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{Admit, quota.Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rl(kv ...string) api.ResourceList {
	l := api.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[api.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func limitRange(items ...api.LimitRangeItem) *api.LimitRange {
	lr := &api.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "limits"}, Spec: api.LimitRangeSpec{Limits: items}}
	api.Default(lr)
	return lr
}

func pod(name string, cs ...api.Container) *api.Pod {
	return &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: api.PodSpec{Containers: cs}}
}

func container(name string, requests, limits api.ResourceList) api.Container {
	return api.Container{Name: name, Image: "busybox", Resources: api.ResourceRequirements{Requests: requests, Limits: limits}}
}

func create(t *testing.T, s *store.Store, obj api.Object) (api.Object, error) {
	t.Helper()
	return s.Create(context.Background(), obj)
}

// TestDefaultsApplied gives a container what it does not set of the
// Container item's defaults, notes it as Kubernetes' annotation does, and
// leaves what it sets alone; the template the pod's containers came from
// is not changed.
func TestDefaultsApplied(t *testing.T) {
	s := newStore(t)
	if _, err := create(t, s, limitRange(api.LimitRangeItem{
		Type:           api.LimitTypeContainer,
		Default:        rl("cpu", "500m", "memory", "256Mi"),
		DefaultRequest: rl("cpu", "100m"),
	})); err != nil {
		t.Fatal(err)
	}
	template := []api.Container{
		container("app", nil, nil),
		container("side", rl("memory", "64Mi"), rl("memory", "128Mi")),
	}
	p := pod("web", template...)
	out, err := create(t, s, p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*api.Pod)
	app, side := got.Spec.Containers[0].Resources, got.Spec.Containers[1].Resources
	if show(app.Requests) != "cpu=100m memory=256Mi" || show(app.Limits) != "cpu=500m memory=256Mi" {
		t.Errorf("app: requests %s limits %s", show(app.Requests), show(app.Limits))
	}
	if show(side.Requests) != "cpu=100m memory=64Mi" || show(side.Limits) != "cpu=500m memory=128Mi" {
		t.Errorf("side: requests %s limits %s", show(side.Requests), show(side.Limits))
	}
	want := "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; cpu request for container side; cpu limit for container side"
	if a := got.Annotations[AnnotationLimitRanger]; a != want {
		t.Errorf("annotation %q\nwant %q", a, want)
	}
	if template[0].Resources.Requests != nil || show(template[1].Resources.Requests) != "memory=64Mi" {
		t.Errorf("the template changed: %+v", template)
	}
}

// TestBoundsRefused refuses pods and claims outside the ranges, with
// Kubernetes' messages.
func TestBoundsRefused(t *testing.T) {
	s := newStore(t)
	if _, err := create(t, s, limitRange(
		api.LimitRangeItem{Type: api.LimitTypeContainer, Max: rl("cpu", "1"), Min: rl("memory", "32Mi"), MaxLimitRequestRatio: rl("memory", "2")},
		api.LimitRangeItem{Type: api.LimitTypePod, Max: rl("memory", "1Gi")},
		api.LimitRangeItem{Type: api.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi")},
	)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		obj  api.Object
		want string // "" when admitted
	}{
		{"fits", pod("a", container("c", rl("memory", "64Mi"), rl("memory", "100Mi"))), ""},
		{"no-limit", pod("a2", container("c", nil, nil)),
			`pods "a2" is forbidden: [memory max limit to request ratio per Container is 2, but no limit is specified or limit is 0, maximum memory usage per Pod is 1Gi.  No limit is specified]`},
		{"over-max", pod("b", container("c", rl("cpu", "2"), rl("cpu", "2"))),
			`pods "b" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"under-min", pod("c", container("c", rl("memory", "16Mi"), rl("memory", "16Mi"))),
			`pods "c" is forbidden: minimum memory usage per Container is 32Mi, but request is 16Mi`},
		{"ratio", pod("d", container("c", rl("memory", "100Mi"), rl("memory", "300Mi"))),
			`pods "d" is forbidden: memory max limit to request ratio per Container is 2, but provided ratio is 3.000000`},
		{"pod-max", pod("e", container("c1", rl("memory", "600Mi"), rl("memory", "600Mi")), container("c2", rl("memory", "600Mi"), rl("memory", "600Mi"))),
			`pods "e" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1200Mi`},
		{"two", pod("f", container("c", rl("cpu", "3", "memory", "8Mi"), rl("cpu", "3", "memory", "8Mi"))),
			`pods "f" is forbidden: [minimum memory usage per Container is 32Mi, but request is 8Mi, maximum cpu usage per Container is 1, but limit is 3]`},
		{"claim-small", claim("g", "500Mi"), `persistentvolumeclaims "g" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`},
		{"claim-big", claim("h", "20Gi"), `persistentvolumeclaims "h" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi`},
		{"claim-fits", claim("i", "5Gi"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := create(t, s, c.obj)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (!store.IsForbidden(err) || !strings.Contains(err.Error(), strings.SplitN(c.want, "forbidden: ", 2)[1])):
				t.Fatalf("got %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestDefaultLimitUnderRequest refuses a pod whose request is over the
// default limit it was given, as Kubernetes' validation after admission.
func TestDefaultLimitUnderRequest(t *testing.T) {
	s := newStore(t)
	if _, err := create(t, s, limitRange(api.LimitRangeItem{Type: api.LimitTypeContainer, Default: rl("cpu", "500m")})); err != nil {
		t.Fatal(err)
	}
	_, err := create(t, s, pod("a", container("c", rl("cpu", "1"), nil)))
	want := `spec.containers[0].resources.requests[cpu]: Invalid value: "1": must be less than or equal to cpu limit of 500m`
	if !store.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// TestQuotaSeesDefaults admits into a namespace whose quota limits cpu a
// pod that states no cpu, since the range's default request comes first,
// and charges the quota with it.
func TestQuotaSeesDefaults(t *testing.T) {
	s := newStore(t)
	q := &api.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compute"}, Spec: api.ResourceQuotaSpec{Hard: rl("requests.cpu", "1")}}
	if _, err := create(t, s, q); err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, s, pod("before", container("c", nil, nil))); !store.IsForbidden(err) {
		t.Fatalf("a pod without cpu under a cpu quota: %v", err)
	}
	if _, err := create(t, s, limitRange(api.LimitRangeItem{Type: api.LimitTypeContainer, DefaultRequest: rl("cpu", "250m")})); err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, s, pod("after", container("c", nil, nil))); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Get(api.KindOf(q), "default", "compute")
	if err != nil {
		t.Fatal(err)
	}
	if u := obj.(*api.ResourceQuota).Status.Used[api.ResourceRequestsCPU]; u.String() != "250m" {
		t.Fatalf("quota used %s", u.String())
	}
}

// TestPodUpdateUntouched leaves a pod's update alone, as Kubernetes does:
// a range made after the pod neither defaults it nor refuses its status.
func TestPodUpdateUntouched(t *testing.T) {
	s := newStore(t)
	out, err := create(t, s, pod("a", container("c", rl("cpu", "2"), rl("cpu", "2"))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, s, limitRange(api.LimitRangeItem{Type: api.LimitTypeContainer, Max: rl("cpu", "1")})); err != nil {
		t.Fatal(err)
	}
	p := out.(*api.Pod).DeepCopy()
	p.Status.Phase = api.PodRunning
	if _, err := s.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func claim(name, size string) *api.PersistentVolumeClaim {
	return &api.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.PersistentVolumeClaimSpec{
			AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
			Resources:   api.VolumeResourceRequirements{Requests: rl("storage", size)},
		},
	}
}

func show(l api.ResourceList) string {
	var parts []string
	for _, name := range sortedNames(l) {
		q := l[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, " ")
}
