package quota

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// rl builds a ResourceList from name, amount pairs.
func rl(kv ...string) api.ResourceList {
	l := api.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[api.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// show prints a ResourceList sorted, for comparison.
func show(l api.ResourceList) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func container(name string, req, lim api.ResourceList) api.Container {
	return api.Container{Name: name, Image: "busybox", Resources: api.ResourceRequirements{Requests: req, Limits: lim}}
}

func testPod(name string, cs ...api.Container) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       api.PodSpec{Containers: cs},
	}
}

func TestUsage(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name string
		obj  api.Object
		want string
	}{
		{"nil", nil, ""},
		{"best-effort pod", testPod("p", container("a", nil, nil)), "pods=1"},
		{"containers sum", testPod("p",
			container("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "128Mi")),
			container("b", rl("cpu", "250m", "memory", "64Mi"), rl("cpu", "1"))),
			"cpu=350m limits.cpu=1200m limits.memory=128Mi memory=128Mi pods=1 requests.cpu=350m requests.memory=128Mi"},
		{"init container larger than the sum", func() api.Object {
			p := testPod("p", container("a", rl("cpu", "100m", "memory", "64Mi"), nil), container("b", rl("cpu", "100m"), nil))
			p.Spec.InitContainers = []api.Container{
				container("init1", rl("cpu", "500m", "memory", "32Mi"), rl("cpu", "1")),
				container("init2", rl("cpu", "300m"), nil),
			}
			return p
		}(), "cpu=500m limits.cpu=1 memory=64Mi pods=1 requests.cpu=500m requests.memory=64Mi"},
		{"succeeded pod", func() api.Object {
			p := testPod("p", container("a", rl("cpu", "1"), nil))
			p.Status.Phase = api.PodSucceeded
			return p
		}(), ""},
		{"failed pod", func() api.Object {
			p := testPod("p", container("a", rl("cpu", "1"), nil))
			p.Status.Phase = api.PodFailed
			return p
		}(), ""},
		{"running pod", func() api.Object {
			p := testPod("p", container("a", rl("cpu", "1"), nil))
			p.Status.Phase = api.PodRunning
			return p
		}(), "cpu=1 pods=1 requests.cpu=1"},
		{"pod being deleted", func() api.Object {
			p := testPod("p", container("a", rl("cpu", "1"), nil))
			p.DeletionTimestamp = &now
			return p
		}(), ""},
		{"claim", &api.PersistentVolumeClaim{Spec: api.PersistentVolumeClaimSpec{
			Resources: api.VolumeResourceRequirements{Requests: rl("storage", "5Gi")}}},
			"persistentvolumeclaims=1 requests.storage=5Gi"},
		{"service", &api.Service{}, "services=1"},
		{"config map", &api.ConfigMap{}, "configmaps=1"},
		{"secret", &api.Secret{}, "secrets=1"},
		{"uncounted kind", &api.ServiceAccount{}, ""},
		{"quota itself", &api.ResourceQuota{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(Usage(tt.obj)); got != tt.want {
				t.Errorf("Usage = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSameUsage(t *testing.T) {
	base := testPod("p", container("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "1")))
	base.Spec.InitContainers = []api.Container{container("i", rl("cpu", "200m"), nil)}
	changed := func(f func(p *api.Pod)) *api.Pod {
		p := base.DeepCopy()
		f(p)
		return p
	}
	now := metav1.Now()
	tests := []struct {
		name     string
		obj, old api.Object
		want     bool
	}{
		{"binding", changed(func(p *api.Pod) { p.Spec.NodeName = "n1" }), base, true},
		{"running", changed(func(p *api.Pod) { p.Status.Phase = api.PodRunning }), base, true},
		{"same amount written otherwise", changed(func(p *api.Pod) {
			p.Spec.Containers[0].Resources.Requests[api.ResourceCPU] = resource.MustParse("0.1")
		}), base, true},
		{"finished", changed(func(p *api.Pod) { p.Status.Phase = api.PodSucceeded }), base, false},
		{"being deleted", changed(func(p *api.Pod) { p.DeletionTimestamp = &now }), base, false},
		{"both finished", changed(func(p *api.Pod) { p.Status.Phase = api.PodFailed }),
			changed(func(p *api.Pod) { p.Status.Phase = api.PodSucceeded }), true},
		{"request changed", changed(func(p *api.Pod) {
			p.Spec.Containers[0].Resources.Requests[api.ResourceCPU] = resource.MustParse("200m")
		}), base, false},
		{"limit added", changed(func(p *api.Pod) {
			p.Spec.Containers[0].Resources.Limits[api.ResourceMemory] = resource.MustParse("1Gi")
		}), base, false},
		{"init container changed", changed(func(p *api.Pod) {
			p.Spec.InitContainers[0].Resources.Requests = rl("cpu", "1")
		}), base, false},
		{"container added", changed(func(p *api.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, container("b", nil, nil))
		}), base, false},
		{"created", base, nil, false},
		{"removed", nil, base, false},
		{"not a pod", &api.Service{}, &api.Service{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SameUsage(tt.obj, tt.old)
			if got != tt.want {
				t.Errorf("SameUsage = %v, want %v", got, tt.want)
			}
			// The promise: when it says same, counting agrees.
			if got && show(Usage(tt.obj)) != show(Usage(tt.old)) {
				t.Errorf("SameUsage true but Usage %q vs %q", show(Usage(tt.obj)), show(Usage(tt.old)))
			}
		})
	}
}

func TestCounted(t *testing.T) {
	for _, r := range []string{"pods", "persistentvolumeclaims", "services", "configmaps", "secrets"} {
		if !Counted(api.MustLookupResource(r)) {
			t.Errorf("%s not counted", r)
		}
	}
	for _, r := range []string{"resourcequotas", "replicasets", "namespaces", "events", "serviceaccounts"} {
		if Counted(api.MustLookupResource(r)) {
			t.Errorf("%s counted", r)
		}
	}
}

func TestSubtract(t *testing.T) {
	tests := []struct {
		name string
		a, b api.ResourceList
		want string
	}{
		{"both nil", nil, nil, ""},
		{"create", rl("pods", "1", "requests.cpu", "100m"), nil, "pods=1 requests.cpu=100m"},
		{"remove", nil, rl("pods", "1"), "pods=-1"},
		{"equal amounts leave nothing", rl("requests.storage", "1Gi"), rl("requests.storage", "1024Mi"), ""},
		{"growth", rl("persistentvolumeclaims", "1", "requests.storage", "5Gi"), rl("persistentvolumeclaims", "1", "requests.storage", "1Gi"), "requests.storage=4Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Subtract(tt.a, tt.b)
			if show(got) != tt.want {
				t.Errorf("Subtract = %q, want %q", show(got), tt.want)
			}
			if tt.want == "" && got != nil {
				t.Errorf("Subtract of equal lists = %v, want nil", got)
			}
		})
	}
}

func TestExceededAndMessage(t *testing.T) {
	tests := []struct {
		name              string
		hard, used, delta api.ResourceList
		want              string // the message, or "" for none exceeded
	}{
		{"under", rl("pods", "3"), rl("pods", "1"), rl("pods", "1"), ""},
		{"up to the limit", rl("pods", "2"), rl("pods", "1"), rl("pods", "1"), ""},
		{"one over", rl("pods", "2"), rl("pods", "2"), rl("pods", "1"),
			"exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"},
		{"used missing counts as zero", rl("pods", "0"), nil, rl("pods", "1"),
			"exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0"},
		{"only exceeded resources, sorted", rl("pods", "10", "requests.memory", "1Gi", "limits.cpu", "1"),
			rl("pods", "1", "requests.memory", "1000Mi", "limits.cpu", "900m"),
			rl("pods", "1", "requests.memory", "64Mi", "limits.cpu", "200m"),
			"exceeded quota: q, requested: limits.cpu=200m,requests.memory=64Mi, used: limits.cpu=900m,requests.memory=1000Mi, limited: limits.cpu=1,requests.memory=1Gi"},
		{"unlimited resource", rl("pods", "5"), rl("pods", "1"), rl("pods", "1", "requests.cpu", "64"), ""},
		{"a decrease never exceeds", rl("pods", "1"), rl("pods", "5"), rl("pods", "-1"), ""},
		{"decrease beside an increase", rl("requests.storage", "1Gi", "persistentvolumeclaims", "1"),
			rl("requests.storage", "1Gi", "persistentvolumeclaims", "2"),
			rl("requests.storage", "1Mi", "persistentvolumeclaims", "-1"),
			"exceeded quota: q, requested: requests.storage=1Mi, used: requests.storage=1Gi, limited: requests.storage=1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := Exceeded(tt.hard, tt.used, tt.delta)
			got := ""
			if len(ex) > 0 {
				got = Message("q", tt.hard, tt.used, tt.delta, ex)
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestUnspecified(t *testing.T) {
	both := container("full", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "1", "memory", "128Mi"))
	reqOnly := container("req", rl("cpu", "100m", "memory", "64Mi"), nil)
	bare := container("bare", nil, nil)
	withInit := func(p *api.Pod, c api.Container) *api.Pod {
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		return p
	}
	tests := []struct {
		name string
		pod  *api.Pod
		hard api.ResourceList
		want string
	}{
		{"counts only", testPod("p", bare), rl("pods", "1", "requests.storage", "1Gi"), ""},
		{"all stated", testPod("p", both), rl("requests.cpu", "1", "limits.memory", "1Gi", "cpu", "1", "memory", "1Gi"), ""},
		{"requests stated, limits limited", testPod("p", reqOnly, both), rl("limits.cpu", "1", "requests.cpu", "1"),
			"must specify limits.cpu for: req"},
		{"every missing name, sorted", testPod("p", bare, reqOnly), rl("memory", "1Gi", "limits.memory", "1Gi", "limits.cpu", "1"),
			"must specify limits.cpu for: bare,req; limits.memory for: bare,req; memory for: bare"},
		{"init containers too", withInit(testPod("p", both), bare), rl("requests.memory", "1Gi"),
			"must specify requests.memory for: bare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unspecified(tt.pod, tt.hard); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
