package pods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// criManager is a pod manager over a new CRI runtime on env's containerd,
// running until the end of the test, when the pods it synced are
// forgotten and their sandboxes waited out.
type criManager struct {
	m   *Manager
	rt  *cri.Runtime
	rep *fakeReporter
	ev  *fakePodEvents
}

func startCRIManager(t *testing.T, ctx context.Context, env *critest.Env, refs *fakeRefs, change func(*Config), pods ...*api.Pod) *criManager {
	t.Helper()
	rt, err := cri.New(ctx, cri.Options{Endpoint: env.Containerd.Endpoint(), PollPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if refs == nil {
		refs = &fakeRefs{}
	}
	cm := &criManager{rt: rt, rep: newFakeReporter(), ev: &fakePodEvents{}}
	o := Config{
		NodeName: "n", NodeIP: "127.0.0.1", Runtime: rt, RuntimeName: "containerd", DataDir: env.Dir + "/data",
		Reporter: cm.rep, Refs: refs, Events: cm.ev, Clock: clock.RealClock{},
	}
	if change != nil {
		change(&o)
	}
	cm.m, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cm.m.Run(mctx) }()
	t.Cleanup(func() {
		// The test's ctx has ended by now.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, p := range pods {
			cm.m.Forget(p.UID)
		}
		testtool.WaitFor(t, time.Minute, "the pods' sandboxes gone", func() error {
			if runs, err := rt.List(ctx); err != nil || len(runs) != 0 {
				return fmt.Errorf("runs %+v, %v", runs, err)
			}
			for _, p := range pods {
				if ips := rt.PodIPs(string(p.UID)); len(ips) != 0 {
					return fmt.Errorf("pod %s still has %v", p.Name, ips)
				}
			}
			return nil
		})
		mcancel()
		<-done
		rt.Close()
	})
	for _, p := range pods {
		cm.m.Sync(p)
	}
	return cm
}

// startContainerd opens a containerd test: it skips t without the tools,
// runs it again in a network namespace of its own (ok is false in the
// parent, which returns) and there starts containerd and its registry,
// with ctx ending with the test or after 3 minutes.
func startContainerd(t *testing.T) (ctx context.Context, env *critest.Env, ok bool) {
	t.Helper()
	critest.Need(t)
	if !critest.InNetns(t) {
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx, critest.Start(t, ctx), true
}

// sleeper pushes the image most of these tests run, busybox sleeping for
// an hour, and returns its reference.
func sleeper(t *testing.T, env *critest.Env) string {
	t.Helper()
	return env.Registry.Push(t, "sh:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"sleep", "3600"}}))
}

// criPod is the pod name of namespace default, of UID uid-NAME, with spec
// and, unless spec has its own, a grace period of a second.
func criPod(name string, spec api.PodSpec) *api.Pod {
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = new(int64(1))
	}
	return &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}, Spec: spec}
}

// running waits for every named container of the pod to run.
func (cm *criManager) running(t *testing.T, uid types.UID, names ...string) api.PodStatus {
	t.Helper()
	var last api.PodStatus
	testtool.WaitFor(t, time.Minute, "containers "+strings.Join(names, ", ")+" running", func() error {
		st, _ := cm.rep.last(uid)
		last = st
		for _, n := range names {
			ok := false
			for _, cs := range st.ContainerStatuses {
				if cs.Name == n && cs.State.Running != nil {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("%s not running: %+v (%s: %s)", n, st.ContainerStatuses, st.Reason, st.Message)
			}
		}
		return nil
	})
	return last
}

// exec runs argv in a container of the pod and returns its output, which
// must come with exit code 0.
func (cm *criManager) exec(t *testing.T, ctx context.Context, uid types.UID, name string, argv ...string) string {
	t.Helper()
	out, code, err := cm.rt.Exec(ctx, runtime.ID{PodUID: string(uid), Name: name}, argv)
	if err != nil || code != 0 {
		t.Fatalf("%s: %q: %q, exit %d, %v", name, argv, out, code, err)
	}
	return strings.TrimSpace(string(out))
}

// procStatus is a field of /proc/self/status in a container.
func (cm *criManager) procStatus(t *testing.T, ctx context.Context, uid types.UID, name, field string) string {
	t.Helper()
	for _, line := range strings.Split(cm.exec(t, ctx, uid, name, "cat", "/proc/self/status"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s: no %s in /proc/self/status", name, field)
	return ""
}

// Capability bits, as /proc/self/status's CapEff numbers them.
const (
	capChown    = 0
	capNetAdmin = 12
	capSysAdmin = 21
)

func hasCap(t *testing.T, capEff string, bit uint) bool {
	t.Helper()
	n, err := strconv.ParseUint(capEff, 16, 64)
	if err != nil {
		t.Fatalf("CapEff %q: %v", capEff, err)
	}
	return n&(1<<bit) != 0
}

// TestContainerdSecurityContext runs a pod's securityContext on a real
// containerd as the kubelet does: the pod's user, group, fsGroup (the
// emptyDir's group, inherited by what is made in it; a ConfigMap's key of
// mode 0400 readable through it, and its update seen in the running
// container; a claim's files writable through it) and
// supplementalGroups; a container's own user, capabilities added and
// dropped, read-only root, no_new_privs; the pod's RuntimeDefault seccomp
// filter, and a container's Unconfined over it; a privileged container;
// and runAsNonRoot refusing a root image with Kubernetes' message while
// a container of the same pod with a user of its own starts.
func TestContainerdSecurityContext(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := sleeper(t, env)
	yes, no := true, false
	secure := criPod("secure", api.PodSpec{
		SecurityContext: &api.PodSecurityContext{
			RunAsUser: new(int64(1000)), RunAsGroup: new(int64(3000)), FSGroup: new(int64(2000)),
			SupplementalGroups: []int64{4000},
			SeccompProfile:     &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []api.Container{
			{Name: "user", Image: image, VolumeMounts: []api.VolumeMount{{Name: "data", MountPath: "/data"},
				{Name: "conf", MountPath: "/conf", ReadOnly: true}, {Name: "claim", MountPath: "/claim"}},
				SecurityContext: &api.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}},
			{Name: "root", Image: image, SecurityContext: &api.SecurityContext{
				RunAsUser: new(int64(0)), ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"CHOWN"}},
			}},
			{Name: "priv", Image: image, SecurityContext: &api.SecurityContext{RunAsUser: new(int64(0)), Privileged: &yes}},
		},
		Volumes: []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
			{Name: "conf", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{
				LocalObjectReference: api.LocalObjectReference{Name: "conf"}, DefaultMode: new(int32(0o400))}}},
			{Name: "claim", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}},
	})
	// The claim's directory holds a file of root's, as a volume written
	// before the pod.
	claim := filepath.Join(env.Dir, "claim")
	if err := os.MkdirAll(claim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(claim, "old"), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refs := &fakeRefs{configMaps: map[string]*api.ConfigMap{"default/conf": {Data: map[string]string{"k": "v"}}},
		claims: map[string]string{"default/claim": claim}}
	nonRoot := criPod("nonroot", api.PodSpec{
		SecurityContext: &api.PodSecurityContext{RunAsNonRoot: &yes},
		Containers: []api.Container{
			{Name: "root-image", Image: image},
			{Name: "own-user", Image: image, SecurityContext: &api.SecurityContext{RunAsUser: new(int64(1000))}},
		},
	})
	cm := startCRIManager(t, ctx, env, refs, nil, secure, nonRoot)
	cm.running(t, secure.UID, "user", "root", "priv")

	if got := cm.exec(t, ctx, secure.UID, "user", "id", "-u"); got != "1000" {
		t.Errorf("user: uid %s, want the pod's 1000", got)
	}
	if got := cm.exec(t, ctx, secure.UID, "user", "id", "-g"); got != "3000" {
		t.Errorf("user: gid %s, want the pod's 3000", got)
	}
	if got := strings.Fields(cm.exec(t, ctx, secure.UID, "user", "id", "-G")); !containsAll(got, "2000", "4000") {
		t.Errorf("user: groups %q, want fsGroup 2000 and supplemental 4000", got)
	}
	if got := cm.exec(t, ctx, secure.UID, "user", "sh", "-c", "echo x > /data/f && busybox stat -c %g /data/f"); got != "2000" {
		t.Errorf("a file made in the emptyDir has group %s, want fsGroup 2000", got)
	}
	// fsGroup on the other volumes: the ConfigMap's key of mode 0400 is
	// the group's to read; the claim's file of root's the group's to write.
	if got := cm.exec(t, ctx, secure.UID, "user", "sh", "-c", "cat /conf/k; busybox stat -c %g /conf/k"); got != "v2000" {
		t.Errorf("the ConfigMap key through fsGroup: %q, want v and group 2000", got)
	}
	// The ConfigMap changes: the running container reads the new value in
	// its mounted volume at the next refresh of the pod's volumes (every
	// minute, as the kubelet's sync), as the kubelet updates it.
	refs.mu.Lock()
	refs.configMaps["default/conf"] = &api.ConfigMap{Data: map[string]string{"k": "v2"}}
	refs.mu.Unlock()
	testtool.WaitFor(t, 2*volumeRefresh, "the ConfigMap's update in the container", func() error {
		out, code, err := cm.rt.Exec(ctx, runtime.ID{PodUID: string(secure.UID), Name: "user"}, []string{"cat", "/conf/k"})
		if err != nil || code != 0 || string(out) != "v2" {
			return fmt.Errorf("%q, exit %d, %v", out, code, err)
		}
		return nil
	})
	if got := cm.exec(t, ctx, secure.UID, "user", "sh", "-c", "echo new >> /claim/old && cat /claim/old && echo y > /claim/n && busybox stat -c %g /claim/n"); got != "old\nnew\n2000" {
		t.Errorf("the claim through fsGroup: %q", got)
	}
	if got := cm.procStatus(t, ctx, secure.UID, "user", "Seccomp"); got != "0" {
		t.Errorf("user: Seccomp %s, want 0 (its own Unconfined over the pod's RuntimeDefault)", got)
	}

	if got := cm.exec(t, ctx, secure.UID, "root", "id", "-u"); got != "0" {
		t.Errorf("root: uid %s, want its own 0 over the pod's", got)
	}
	capEff := cm.procStatus(t, ctx, secure.UID, "root", "CapEff")
	if !hasCap(t, capEff, capNetAdmin) || hasCap(t, capEff, capChown) || hasCap(t, capEff, capSysAdmin) {
		t.Errorf("root: CapEff %s, want NET_ADMIN added, CHOWN dropped, no SYS_ADMIN", capEff)
	}
	if got := cm.procStatus(t, ctx, secure.UID, "root", "NoNewPrivs"); got != "1" {
		t.Errorf("root: NoNewPrivs %s, want 1 (allowPrivilegeEscalation: false)", got)
	}
	if got := cm.procStatus(t, ctx, secure.UID, "root", "Seccomp"); got != "2" {
		t.Errorf("root: Seccomp %s, want 2 (the pod's RuntimeDefault filter)", got)
	}
	if out, code, _ := cm.rt.Exec(ctx, runtime.ID{PodUID: string(secure.UID), Name: "root"}, []string{"sh", "-c", "echo x > /tmp/x"}); code == 0 || !strings.Contains(string(out), "Read-only") {
		t.Errorf("root: wrote to its read-only root: %q, exit %d", out, code)
	}

	capEff = cm.procStatus(t, ctx, secure.UID, "priv", "CapEff")
	if !hasCap(t, capEff, capSysAdmin) {
		t.Errorf("priv: CapEff %s, want every capability", capEff)
	}
	if got := cm.procStatus(t, ctx, secure.UID, "priv", "Seccomp"); got != "0" {
		t.Errorf("priv: Seccomp %s, want 0 (privileged is unconfined)", got)
	}

	cm.running(t, nonRoot.UID, "own-user")
	want := `container has runAsNonRoot and image will run as root (pod: "nonroot_default(uid-nonroot)", container: root-image)`
	testtool.WaitFor(t, 30*time.Second, "runAsNonRoot refusing the root image", func() error {
		st, _ := cm.rep.last(nonRoot.UID)
		for _, cs := range st.ContainerStatuses {
			if cs.Name != "root-image" {
				continue
			}
			if w := cs.State.Waiting; w == nil || w.Reason != reasonCreateContainerConfigError || w.Message != want {
				return fmt.Errorf("root-image: %+v", cs.State)
			}
			return nil
		}
		return errors.New("no status of root-image")
	})
	if evs := strings.Join(cm.ev.all(), "\n"); !strings.Contains(evs, "Warning Failed Error: "+want) {
		t.Errorf("no Failed event with the refusal in:\n%s", evs)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestContainerdHostNetwork runs a hostNetwork pod on a real containerd:
// its sandbox is in the node's network namespace (the test's own), with
// no address of its own, so its server answers on the node's loopback,
// its status reports the node's IP, its probe dials the node's address,
// its host name is the node's, and with dnsPolicy ClusterFirst it asks
// the node's name servers, not the cluster's.
func TestContainerdHostNetwork(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	web := env.Registry.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"httpd", "-f", "-p", "127.0.0.1:18080", "-h", "/www"}}))
	pod := criPod("hostnet", api.PodSpec{
		HostNetwork: true,
		Containers: []api.Container{{
			Name: "web", Image: web,
			Ports:          []api.ContainerPort{{ContainerPort: 18080}},
			ReadinessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "/index.html", Port: intstr.FromInt32(18080)}}, PeriodSeconds: 1},
		}},
	})
	api.Default(pod)
	cm := startCRIManager(t, ctx, env, nil, func(o *Config) { o.NameServer = "198.18.7.1" }, pod)
	testtool.WaitFor(t, time.Minute, "the pod ready on the node's address", func() error {
		st, _ := cm.rep.last(pod.UID)
		if st.Phase != api.PodRunning || len(st.ContainerStatuses) != 1 || !st.ContainerStatuses[0].Ready {
			return fmt.Errorf("status %+v", st)
		}
		if st.PodIP != "127.0.0.1" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "127.0.0.1" {
			return fmt.Errorf("pod IPs %q %+v, want the node's", st.PodIP, st.PodIPs)
		}
		return nil
	})
	resp, err := http.Get("http://127.0.0.1:18080/index.html")
	if err != nil {
		t.Fatalf("the pod's server on the node's loopback: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello from an image\n" {
		t.Errorf("the pod's server said %q", b)
	}
	host, _ := os.Hostname()
	if got := cm.exec(t, ctx, pod.UID, "web", "hostname"); got != host {
		t.Errorf("host name %q, want the node's %q", got, host)
	}
	if got := cm.exec(t, ctx, pod.UID, "web", "cat", "/etc/resolv.conf"); strings.Contains(got, "198.18.7.1") || strings.Contains(got, "svc.cluster.local") {
		t.Errorf("resolv.conf of a hostNetwork ClusterFirst pod names the cluster's DNS:\n%s", got)
	}
	if ips := cm.rt.PodIPs(string(pod.UID)); len(ips) != 0 {
		t.Errorf("the sandbox has addresses of its own: %v", ips)
	}
}

// TestContainerdDNSConfig writes pods' resolv.conf on a real containerd
// as the kubelet does: ClusterFirst with dnsConfig (the cluster's server
// and search path, the node's search domains, the pod's additions and an
// option of its own over ndots:5), Default from the node's resolv.conf
// with the pod's additions, and None with only the pod's.
func TestContainerdDNSConfig(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := sleeper(t, env)
	resolv := env.Dir + "/node-resolv.conf"
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	two := "2"
	mk := func(name string, policy api.DNSPolicy, cfg *api.PodDNSConfig) *api.Pod {
		p := criPod(name, api.PodSpec{DNSPolicy: policy, DNSConfig: cfg, Containers: []api.Container{{Name: "c", Image: image}}})
		p.Namespace = "shop"
		return p
	}
	cluster := mk("cluster", api.DNSClusterFirst, &api.PodDNSConfig{Nameservers: []string{"198.18.9.9"}, Searches: []string{"extra.example"},
		Options: []api.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "rotate"}}})
	def := mk("default", api.DNSDefault, &api.PodDNSConfig{Searches: []string{"extra.example"}})
	none := mk("none", api.DNSNone, &api.PodDNSConfig{Nameservers: []string{"198.18.9.9"}, Searches: []string{"only.example"}})
	cm := startCRIManager(t, ctx, env, nil, func(o *Config) { o.NameServer, o.ResolvConf = "198.18.7.1", resolv }, cluster, def, none)
	for _, tt := range []struct {
		pod  *api.Pod
		want string
	}{
		{cluster, "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example extra.example\nnameserver 198.18.7.1\nnameserver 198.18.9.9\noptions ndots:2 rotate"},
		{def, "search corp.example extra.example\nnameserver 192.0.2.53\noptions edns0"},
		{none, "search only.example\nnameserver 198.18.9.9"},
	} {
		cm.running(t, tt.pod.UID, "c")
		if got := cm.exec(t, ctx, tt.pod.UID, "c", "cat", "/etc/resolv.conf"); got != tt.want {
			t.Errorf("%s: resolv.conf\n%s\nwant\n%s", tt.pod.Name, got, tt.want)
		}
	}
}

// TestContainerdImagePullSecrets pulls from a registry that asks for a
// password, on a real containerd: a pod whose imagePullSecrets hold the
// credentials (kubernetes.io/dockerconfigjson) runs, with a missing
// Secret among them reported in an event; a pod without them, or with a
// wrong password, waits with ErrImagePull.
func TestContainerdImagePullSecrets(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	private := critest.StartAuthRegistry(t, "robot", "s3cret")
	private.WriteHosts(t, filepath.Join(env.Dir, "containerd", "certs.d"))
	image := private.Push(t, "private/app:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"sleep", "3600"}}))
	cfg := func(user, pass string) string {
		return fmt.Sprintf(`{"auths":{"http://%s/private":{"username":%q,"password":%q}}}`, private.Host, user, pass)
	}
	refs := &fakeRefs{secrets: map[string]*api.Secret{
		"default/regcred": dockerConfigSecret("default", "regcred", cfg("robot", "s3cret")),
		"default/wrong":   dockerConfigSecret("default", "wrong", cfg("robot", "guess")),
	}}
	mk := func(name string, secrets ...string) *api.Pod {
		p := criPod(name, api.PodSpec{Containers: []api.Container{{Name: "c", Image: image}}})
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, api.LocalObjectReference{Name: s})
		}
		return p
	}
	withCreds, without, wrong := mk("with", "missing", "regcred"), mk("without"), mk("wrong", "wrong")
	cm := startCRIManager(t, ctx, env, refs, nil, withCreds, without, wrong)
	cm.running(t, withCreds.UID, "c")
	for _, p := range []*api.Pod{without, wrong} {
		testtool.WaitFor(t, time.Minute, p.Name+" waiting with ErrImagePull", func() error {
			cm.rep.mu.Lock()
			defer cm.rep.mu.Unlock()
			for _, st := range cm.rep.statuses[p.UID] {
				if len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Waiting != nil && st.ContainerStatuses[0].State.Waiting.Reason == reasonErrImagePull {
					if msg := st.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "401") && !strings.Contains(strings.ToLower(msg), "unauthorized") {
						return fmt.Errorf("message %q does not say unauthorized", msg)
					}
					return nil
				}
			}
			return errors.New("no ErrImagePull yet")
		})
	}
	if evs := strings.Join(cm.ev.all(), "\n"); !strings.Contains(evs, "Warning "+ReasonFailedPullSecret+" Unable to retrieve some image pull secrets (default/missing)") {
		t.Errorf("no %s event in:\n%s", ReasonFailedPullSecret, evs)
	}
}

// TestContainerdLifecycleHooks runs postStart and preStop hooks on a real
// containerd as the kubelet does: an exec postStart that ran before the
// container counts as started; an httpGet postStart and preStop sent to
// the host they name (a server of the test's, on the node), the preStop
// while the container still runs and cut short by the pod's grace period
// when it hangs; a failing postStart kills the container with the
// kubelet's FailedPostStartHook event.
func TestContainerdLifecycleHooks(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := sleeper(t, env)

	var cm *criManager
	hits := make(chan string, 16)
	preStopRunning := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hits <- r.URL.Path:
		default:
		}
		if r.URL.Path == "/prestop" {
			st, err := cm.rt.Status(r.Context(), runtime.ID{PodUID: "uid-hooks", Name: "http-hooks"})
			select {
			case preStopRunning <- err == nil && st.State == runtime.StateRunning:
			default:
			}
			// Hang: the grace period must end the hook.
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		}
	}))
	defer srv.Close()
	port, _ := strconv.Atoi(srv.URL[strings.LastIndexByte(srv.URL, ':')+1:])
	get := func(path string) *api.LifecycleHandler {
		return &api.LifecycleHandler{HTTPGet: &api.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: path}}
	}
	hooks := criPod("hooks", api.PodSpec{
		TerminationGracePeriodSeconds: new(int64(3)),
		Containers: []api.Container{
			{Name: "exec-hook", Image: image, Lifecycle: &api.Lifecycle{PostStart: &api.LifecycleHandler{Exec: &api.ExecAction{Command: []string{"sh", "-c", "echo hooked > /tmp/poststart"}}}}},
			{Name: "http-hooks", Image: image, Lifecycle: &api.Lifecycle{PostStart: get("/poststart"), PreStop: get("/prestop")}},
		},
	})
	failing := criPod("failing", api.PodSpec{
		RestartPolicy: api.RestartPolicyNever,
		Containers: []api.Container{
			{Name: "bad", Image: image, Lifecycle: &api.Lifecycle{PostStart: &api.LifecycleHandler{Exec: &api.ExecAction{Command: []string{"sh", "-c", "echo no; exit 3"}}}}},
		},
	})
	cm = startCRIManager(t, ctx, env, nil, nil, hooks, failing)
	cm.running(t, hooks.UID, "exec-hook", "http-hooks")
	if got := cm.exec(t, ctx, hooks.UID, "exec-hook", "cat", "/tmp/poststart"); got != "hooked" {
		t.Errorf("the exec postStart hook wrote %q", got)
	}
	select {
	case p := <-hits:
		if p != "/poststart" {
			t.Errorf("first request %s, want /poststart", p)
		}
	default:
		t.Error("no httpGet postStart request")
	}

	testtool.WaitFor(t, time.Minute, "the failing postStart's container killed", func() error {
		st, _ := cm.rep.last(failing.UID)
		if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil {
			return fmt.Errorf("status %+v", st.ContainerStatuses)
		}
		return nil
	})
	evs := strings.Join(cm.ev.all(), "\n")
	for _, want := range []string{
		`Warning FailedPostStartHook Exec lifecycle hook ([sh -c echo no; exit 3]) for Container "bad" in Pod "failing_default(uid-failing)" failed - error: command 'sh -c echo no; exit 3' exited with 3`,
		"Normal Killing FailedPostStartHook",
	} {
		if !strings.Contains(evs, want) {
			t.Errorf("no event %q in:\n%s", want, evs)
		}
	}

	deleting := hooks.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, new(int64(3))
	start := time.Now()
	cm.m.Sync(deleting)
	select {
	case running := <-preStopRunning:
		if !running {
			t.Error("the container was not running when its preStop hook was sent")
		}
	case <-time.After(time.Minute):
		t.Fatal("no preStop request")
	}
	testtool.WaitFor(t, time.Minute, "the deleted pod terminated", func() error {
		if cm.rep.terminations(hooks.UID) == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the pod took %s to stop: its hanging preStop hook was not cut at its 3s grace", d)
	}
}

// TestContainerdHostsAndSysctls runs, on a real containerd, a pod with
// hostAliases and safe sysctls, as the kubelet does: its /etc/hosts is
// the managed file, naming the pod's own address with its subdomain's
// name and the aliases; the sysctls are set in its sandbox; a container
// that mounts a volume at /etc/hosts keeps it; and a pod that asks for an
// unsafe sysctl is refused with the kubelet's reason and message. The
// node knows no cluster DNS server: a ClusterFirst pod is warned of it.
func TestContainerdHostsAndSysctls(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := sleeper(t, env)
	refs := &fakeRefs{configMaps: map[string]*api.ConfigMap{"default/hosts": {Data: map[string]string{"hosts": "198.18.9.1 own\n"}}}}
	pod := criPod("aliases", api.PodSpec{
		Subdomain:   "sub",
		HostAliases: []corev1.HostAlias{{IP: "198.18.9.9", Hostnames: []string{"foo.local", "bar.local"}}},
		SecurityContext: &api.PodSecurityContext{Sysctls: []corev1.Sysctl{
			{Name: "net.ipv4.ip_local_port_range", Value: "20000 30000"}, {Name: "kernel/shm_rmid_forced", Value: "1"},
			{Name: "kernel.msgmax", Value: "65536"}}},
		Containers: []api.Container{
			{Name: "c", Image: image, VolumeMounts: []api.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}},
			{Name: "own", Image: image, VolumeMounts: []api.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts", SubPath: "hosts"}}},
		},
		Volumes: []api.Volume{{Name: "hosts", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "hosts"}}}},
			{Name: "info", VolumeSource: api.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}},
	})
	pod.Labels = map[string]string{"app": "shop"}
	unsafe := criPod("unsafe", api.PodSpec{
		SecurityContext: &api.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.sem", Value: "250 32000 32 128"}}},
		Containers:      []api.Container{{Name: "c", Image: image}},
	})
	allow := func(o *Config) { o.AllowedUnsafeSysctls = []string{"kernel.msg*"} }
	cm := startCRIManager(t, ctx, env, refs, allow, pod, unsafe)
	st := cm.running(t, pod.UID, "c", "own")
	hosts := cm.exec(t, ctx, pod.UID, "c", "cat", "/etc/hosts")
	for _, want := range []string{"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n",
		"\n" + st.PodIP + "\taliases.sub.default.svc.cluster.local\taliases\n",
		"\n# Entries added by HostAliases.\n198.18.9.9\tfoo.local\tbar.local"} {
		if st.PodIP == "" || !strings.Contains(hosts, want) {
			t.Errorf("/etc/hosts lacks %q (pod IP %q):\n%s", want, st.PodIP, hosts)
		}
	}
	if got := cm.exec(t, ctx, pod.UID, "c", "cat", "/etc/podinfo/labels"); got != `app="shop"` {
		t.Errorf("the downwardAPI volume's labels: %q", got)
	}
	if got := cm.exec(t, ctx, pod.UID, "own", "cat", "/etc/hosts"); got != "198.18.9.1 own" {
		t.Errorf("the container's own /etc/hosts: %q", got)
	}
	if got := strings.Join(strings.Fields(cm.exec(t, ctx, pod.UID, "c", "cat", "/proc/sys/net/ipv4/ip_local_port_range")), " "); got != "20000 30000" {
		t.Errorf("net.ipv4.ip_local_port_range %q, want the pod's 20000 30000", got)
	}
	if got := cm.exec(t, ctx, pod.UID, "c", "cat", "/proc/sys/kernel/shm_rmid_forced"); got != "1" {
		t.Errorf("kernel.shm_rmid_forced %q, want the pod's 1", got)
	}
	if got := cm.exec(t, ctx, pod.UID, "c", "cat", "/proc/sys/kernel/msgmax"); got != "65536" {
		t.Errorf("kernel.msgmax %q, want the pod's 65536 (allowed by kernel.msg*)", got)
	}

	// The node knows no cluster DNS server here (no NameServer): the
	// ClusterFirst pod got the node's resolv.conf, and a warning, once.
	missing := `Warning MissingClusterDNS pod: "aliases_default(uid-aliases)". node has no cluster DNS server configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	if n := strings.Count(strings.Join(cm.ev.all(), "\n"), missing); n != 1 {
		t.Errorf("%d MissingClusterDNS events, want 1, in:\n%s", n, strings.Join(cm.ev.all(), "\n"))
	}

	want := `Pod was rejected: forbidden sysctl: "kernel.sem" not allowlisted`
	testtool.WaitFor(t, 30*time.Second, "the unsafe sysctl refused", func() error {
		st, _ := cm.rep.last(unsafe.UID)
		if st.Phase != api.PodFailed || st.Reason != ReasonSysctlForbidden || st.Message != want {
			return fmt.Errorf("status %s %s %q", st.Phase, st.Reason, st.Message)
		}
		return nil
	})
	if evs := strings.Join(cm.ev.all(), "\n"); !strings.Contains(evs, `Warning SysctlForbidden forbidden sysctl: "kernel.sem" not allowlisted`) {
		t.Errorf("no SysctlForbidden event in:\n%s", evs)
	}
	if runs, err := cm.rt.List(ctx); err != nil || slices.ContainsFunc(runs, func(r runtime.Status) bool { return r.ID.PodUID == string(unsafe.UID) }) {
		t.Errorf("the refused pod runs: %v, %v", runs, err)
	}
}

// TestContainerdNonRootReadsItsTokens runs pods as other users than root
// on a real containerd, each reading its service account's token, a
// projected serviceAccountToken, a projected ConfigMap key and a Secret
// key of mode 0400, as the kubelet lets them: a pod whose containers all
// run as user 1000 owns its tokens (0600); in a pod of users 1000 and
// 1001 with fsGroup 2000 both read every file through the group (the
// tokens 0640, the Secret key 0440, all the group's).
func TestContainerdNonRootReadsItsTokens(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := sleeper(t, env)
	mounts := []api.VolumeMount{{Name: "api", MountPath: "/var/run/secrets/tokens", ReadOnly: true},
		{Name: "creds", MountPath: "/creds", ReadOnly: true}}
	volumes := []api.Volume{
		{Name: "api", VolumeSource: api.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: new(int32(0o644)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "vault-token", Audience: "vault"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}},
			},
		}}},
		{Name: "creds", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "creds", DefaultMode: new(int32(0o400))}}},
	}
	alone := criPod("alone", api.PodSpec{
		ServiceAccountName: "default",
		SecurityContext:    &api.PodSecurityContext{RunAsUser: new(int64(1000))},
		Containers:         []api.Container{{Name: "app", Image: image, VolumeMounts: mounts[:1]}},
		Volumes:            volumes[:1],
	})
	group := criPod("group", api.PodSpec{
		ServiceAccountName: "default",
		SecurityContext:    &api.PodSecurityContext{RunAsUser: new(int64(1000)), FSGroup: new(int64(2000))},
		Containers: []api.Container{
			{Name: "app", Image: image, VolumeMounts: mounts},
			{Name: "sidecar", Image: image, VolumeMounts: mounts, SecurityContext: &api.SecurityContext{RunAsUser: new(int64(1001))}},
		},
		Volumes: volumes,
	})
	refs := &issuingRefs{fakeRefs: &fakeRefs{
		configMaps: map[string]*api.ConfigMap{"default/conf": {Data: map[string]string{"k": "v"}}},
		secrets:    map[string]*api.Secret{"default/creds": {Data: map[string][]byte{"pw": []byte("s3cret")}}},
	}, now: time.Now}
	cm := startCRIManager(t, ctx, env, nil, func(o *Config) { o.Refs, o.CAData = refs, []byte("ca\n") }, alone, group)
	cm.running(t, alone.UID, "app")
	cm.running(t, group.UID, "app", "sidecar")

	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	for _, tt := range []struct {
		pod       *api.Pod
		container string
		files     []string
		// want is `id -u` then the owner, group and mode of each file
		want string
	}{
		{alone, "app", []string{sa + "token", sa + "ca.crt", "/var/run/secrets/tokens/vault-token", "/var/run/secrets/tokens/k"},
			"1000 1000:0 600 0:0 644 1000:0 600 0:0 644"},
		{group, "app", []string{sa + "token", sa + "namespace", "/var/run/secrets/tokens/vault-token", "/creds/pw"},
			"1000 0:2000 640 0:2000 644 0:2000 640 0:2000 440"},
		{group, "sidecar", []string{sa + "token", "/var/run/secrets/tokens/vault-token", "/var/run/secrets/tokens/k", "/creds/pw"},
			"1001 0:2000 640 0:2000 640 0:2000 644 0:2000 440"},
	} {
		// Each file is read whole by the container's user, then its
		// owner and mode.
		script := `id -u; for f; do cat "$f" > /dev/null || exit 1; busybox stat -c '%u:%g %a' "$f"; done`
		got := strings.Join(strings.Fields(cm.exec(t, ctx, tt.pod.UID, tt.container, append([]string{"sh", "-c", script, "sh"}, tt.files...)...)), " ")
		if got != tt.want {
			t.Errorf("%s/%s: %q, want %q", tt.pod.Name, tt.container, got, tt.want)
		}
	}
	if tok := cm.exec(t, ctx, group.UID, "sidecar", "cat", sa+"token"); !strings.HasPrefix(tok, "e30.") {
		t.Errorf("the sidecar's token: %q", tok)
	}
}

// TestContainerdHostPort runs two pods listening on the same
// containerPort with a hostPort each on a real containerd and its CNI
// network: each turns ready by a tcpSocket probe of its own address, and
// the portmap plugin forwards each node port to its own pod, from the
// node and from inside the other pod (through the bridge).
func TestContainerdHostPort(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := env.Registry.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"/bin/sh", "-c",
		`mkdir -p /tmp/www && echo "$HOSTNAME" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`}}))
	mk := func(name string, hostPort int32) *api.Pod {
		return criPod(name, api.PodSpec{
			Containers: []api.Container{{Name: "web", Image: image,
				Ports: []api.ContainerPort{{ContainerPort: 8080, HostPort: hostPort, Protocol: api.ProtocolTCP}},
				// Dialled at the pod's own address: nothing of the
				// node's listens on 8080.
				ReadinessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{TCPSocket: &api.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			}},
		})
	}
	a, b := mk("web-a", 18081), mk("web-b", 18082)
	cm := startCRIManager(t, ctx, env, nil, nil, a, b)
	for _, p := range []*api.Pod{a, b} {
		testtool.WaitFor(t, time.Minute, p.Name+" ready by its tcpSocket probe", func() error {
			st, _ := cm.rep.last(p.UID)
			if len(st.ContainerStatuses) != 1 || !st.ContainerStatuses[0].Ready || st.PodIP == "" || st.PodIP == "127.0.0.1" {
				return fmt.Errorf("status %+v", st)
			}
			return nil
		})
	}
	// The node's address on the pods' bridge: the podCIDR's gateway.
	const node = "198.18.7.1"
	for port, want := range map[int]string{18081: "web-a", 18082: "web-b"} {
		url := fmt.Sprintf("http://%s:%d/index.html", node, port)
		testtool.WaitFor(t, 30*time.Second, "hostPort "+strconv.Itoa(port)+" from the node", func() error {
			resp, err := http.Get(url)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := strings.TrimSpace(string(body)); got != want {
				return fmt.Errorf("%s answered %q, want %s", url, got, want)
			}
			return nil
		})
	}
	if got := cm.exec(t, ctx, b.UID, "web", "wget", "-q", "-O", "-", "http://"+node+":18081/index.html"); got != "web-a" {
		t.Errorf("hostPort 18081 from inside web-b: %q, want web-a", got)
	}
}

// TestContainerdMemoryEmptyDir mounts emptyDirs of medium Memory into a
// pod on a real containerd: each is a tmpfs inside the container, sized
// by the pod's memory limit, or by its sizeLimit where that is less, as
// the kubelet sizes them.
func TestContainerdMemoryEmptyDir(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := sleeper(t, env)
	small := resource.MustParse("1Mi")
	pod := criPod("tmpfs", api.PodSpec{
		Containers: []api.Container{{Name: "c", Image: image,
			Resources:    api.ResourceRequirements{Limits: api.ResourceList{api.ResourceMemory: resource.MustParse("64Mi")}},
			VolumeMounts: []api.VolumeMount{{Name: "pod-sized", MountPath: "/pod-sized"}, {Name: "small", MountPath: "/small"}}}},
		Volumes: []api.Volume{
			{Name: "pod-sized", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{Medium: api.StorageMediumMemory}}},
			{Name: "small", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{Medium: api.StorageMediumMemory, SizeLimit: &small}}},
		},
	})
	cm := startCRIManager(t, ctx, env, nil, func(o *Config) {
		o.Allocatable = api.ResourceList{api.ResourceMemory: resource.MustParse("1Gi")}
	}, pod)
	cm.running(t, pod.UID, "c")
	// The file system type and size in KiB of each mount point.
	got := cm.exec(t, ctx, pod.UID, "c", "sh", "-c", `for d in /pod-sized /small; do busybox stat -f -c '%T' $d; df -k $d | tail -1 | awk '{print $2}'; done`)
	if got := strings.Fields(got); !slices.Equal(got, []string{"tmpfs", "65536", "tmpfs", "1024"}) {
		t.Errorf("the memory volumes: %q, want tmpfs of 65536 KiB (the pod's limit) and 1024 (its sizeLimit)", got)
	}
}
