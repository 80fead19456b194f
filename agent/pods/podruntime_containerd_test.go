package pods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestPodsRunImagesOnContainerd runs pods through the pod workers on a
// real containerd: an image's entrypoint with the pod's args, env and
// ConfigMap volume at its mountPath, on an address of its own reported in
// the status; an image that cannot be pulled waits with ErrImagePull then
// ImagePullBackOff; a new manager over a new runtime (an agent restart)
// takes the running pod over without starting it again; a forgotten pod's
// sandbox is removed.
func TestPodsRunImagesOnContainerd(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	dir, reg, cd := env.Dir, env.Registry, env.Containerd
	web := reg.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `echo "serving $(cat /config/greeting) as $NAME"; exec httpd -f -p "$0" -h /www`},
		Cmd:        []string{"80"},
	}))

	refs := &fakeRefs{configMaps: map[string]*api.ConfigMap{
		"default/web": {Data: map[string]string{"greeting": "hello"}},
	}}
	pod := criPod("web", api.PodSpec{
		Containers: []api.Container{{
			Name: "web", Image: web, Args: []string{"$(PORT)"},
			Env:          []api.EnvVar{{Name: "PORT", Value: "8080"}, {Name: "NAME", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			VolumeMounts: []api.VolumeMount{{Name: "config", MountPath: "/config", ReadOnly: true}},
			// Probed at the pod's own address: nothing listens on
			// the node's.
			ReadinessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "/index.html", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
		}},
		Volumes: []api.Volume{{Name: "config", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "web"}}}}},
	})
	missing := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "default", UID: "uid-missing"},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "c", Image: reg.Host + "/nothing:1"}}},
	}

	start := func() (*Manager, *cri.Runtime, *fakeReporter, *fakePodEvents, func()) {
		rt, err := cri.New(ctx, cri.Options{Endpoint: cd.Endpoint(), PollPeriod: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rep, ev := newFakeReporter(), &fakePodEvents{}
		m, err := New(Config{
			NodeName: "n", NodeIP: "127.0.0.1", Runtime: rt, RuntimeName: "containerd", DataDir: dir + "/data",
			Reporter: rep, Refs: refs, Events: ev, NameServer: "198.18.7.1", Clock: clock.RealClock{},
		})
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.Run(mctx) }()
		return m, rt, rep, ev, func() {
			mcancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			rt.Close()
		}
	}
	m, rt, rep, ev, stop := start()
	m.Sync(pod)
	m.Sync(missing)

	var podIP string
	testtool.WaitFor(t, time.Minute, "the pod running on an address of its own", func() error {
		st, ok := rep.last(pod.UID)
		if !ok || st.Phase != api.PodRunning || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil || !st.ContainerStatuses[0].Ready {
			return fmt.Errorf("status %+v", st)
		}
		ip, err := netip.ParseAddr(st.PodIP)
		if err != nil || !netip.MustParsePrefix(critest.PodCIDR).Contains(ip) || st.HostIP != "127.0.0.1" || len(st.PodIPs) != 1 {
			return fmt.Errorf("pod IP %q, host IP %q", st.PodIP, st.HostIP)
		}
		podIP = st.PodIP
		return nil
	})
	testtool.WaitFor(t, 30*time.Second, "the pod serving on its address", func() error {
		resp, err := http.Get("http://" + podIP + ":8080/index.html")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "hello from an image\n" {
			return errors.New(string(b))
		}
		return nil
	})
	id := runtime.ID{PodUID: string(pod.UID), Name: "web"}
	var logs strings.Builder
	testtool.WaitFor(t, 10*time.Second, "the entrypoint's line", func() error {
		logs.Reset()
		if err := rt.Logs(ctx, id, runtime.LogOptions{}, &logs); err != nil {
			return err
		}
		if logs.String() != "serving hello as web\n" {
			return fmt.Errorf("log %q", logs.String())
		}
		return nil
	})
	out, code, err := rt.Exec(ctx, id, []string{"cat", "/etc/resolv.conf"})
	if err != nil || code != 0 || !strings.Contains(string(out), "nameserver 198.18.7.1") || !strings.Contains(string(out), "search default.svc.cluster.local svc.cluster.local cluster.local") || !strings.Contains(string(out), "ndots:5") {
		t.Errorf("resolv.conf: %q, %d, %v", out, code, err)
	}
	if out, _, _ := rt.Exec(ctx, id, []string{"sh", "-c", "echo x > /config/new"}); !strings.Contains(string(out), "Read-only") {
		t.Errorf("the readOnly volume was written: %q", out)
	}

	waiting := func(reason string) func() error {
		return func() error {
			st, _ := rep.last(missing.UID)
			if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Reason != reason {
				return fmt.Errorf("status %+v", st.ContainerStatuses)
			}
			return nil
		}
	}
	testtool.WaitFor(t, 30*time.Second, "ImagePullBackOff", waiting(reasonImagePullBackOff))
	rep.mu.Lock()
	var reasons []string
	for _, st := range rep.statuses[missing.UID] {
		if len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Waiting != nil {
			reasons = append(reasons, st.ContainerStatuses[0].State.Waiting.Reason)
		}
	}
	rep.mu.Unlock()
	if !slices.Contains(reasons, reasonErrImagePull) {
		t.Errorf("waiting reasons %q: want ErrImagePull before ImagePullBackOff", reasons)
	}
	evs := strings.Join(ev.all(), "\n")
	for _, want := range []string{
		"Normal Pulling Pulling image \"" + web + "\"",
		"Normal Pulled Successfully pulled image \"" + web + "\"",
		"Normal Started Started container web",
		"Warning Failed Error: ErrImagePull",
		"Normal BackOff Back-off pulling image \"" + reg.Host + "/nothing:1\"",
		"Warning Failed Error: ImagePullBackOff",
	} {
		if !strings.Contains(evs, want) {
			t.Errorf("no event %q in:\n%s", want, evs)
		}
	}
	stop()

	// An agent restart: the running pod is taken over, not started again.
	m, rt, rep, ev, stop = start()
	defer stop()
	m.Sync(pod)
	testtool.WaitFor(t, 30*time.Second, "the adopted pod's status", func() error {
		st, ok := rep.last(pod.UID)
		if !ok || st.Phase != api.PodRunning || st.PodIP != podIP {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	runs, err := rt.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []runtime.Status
	for _, r := range runs {
		if r.ID.PodUID == string(pod.UID) {
			mine = append(mine, r)
		}
	}
	if len(mine) != 1 || mine[0].ID != id || mine[0].State != runtime.StateRunning {
		t.Fatalf("runs after the restart: %+v", mine)
	}
	if evs := ev.all(); slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, "Started") || strings.Contains(e, "Pulling") }) {
		t.Errorf("the adopted pod was started again: %q", evs)
	}

	m.Forget(pod.UID)
	m.Forget(missing.UID)
	testtool.WaitFor(t, time.Minute, "the forgotten pod's containers and sandbox gone", func() error {
		runs, err := rt.List(ctx)
		if err != nil {
			return err
		}
		if len(runs) != 0 || len(rt.PodIPs(string(pod.UID))) != 0 {
			return fmt.Errorf("runs %+v", runs)
		}
		return nil
	})
}

// TestContainerdStatuses: a pod's container statuses on containerd are
// Kubernetes' own: containerd's container IDs, the message a container
// left at its terminationMessagePath (the default /dev/termination-log or
// its own), its log's tail with FallbackToLogsOnError, and OOMKilled
// (exit 137) for a container the OOM killer ended.
func TestContainerdStatuses(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := env.Registry.Push(t, "sh:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"/bin/sh", "-c"}}))
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ends", Namespace: "default", UID: "uid-ends"},
		Spec: api.PodSpec{
			RestartPolicy: api.RestartPolicyNever,
			Containers: []api.Container{
				{Name: "default-path", Image: image, Args: []string{"echo bye > /dev/termination-log"}},
				{Name: "own-path", Image: image, Args: []string{"echo -n custom > /tmp/why; echo logged; exit 2"},
					TerminationMessagePath: "/tmp/why", TerminationMessagePolicy: "FallbackToLogsOnError"},
				{Name: "fallback", Image: image, Args: []string{"echo it broke; exit 3"}, TerminationMessagePolicy: "FallbackToLogsOnError"},
				{Name: "no-fallback", Image: image, Args: []string{"echo not a message; exit 4"}},
				{Name: "oom", Image: image, Args: []string{"a=0123456789; while :; do a=$a$a; done"},
					Resources: api.ResourceRequirements{Limits: api.ResourceList{api.ResourceMemory: resource.MustParse("32Mi")}}},
			},
		},
	}
	rt, err := cri.New(ctx, cri.Options{Endpoint: env.Containerd.Endpoint(), PollPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rep := newFakeReporter()
	m, err := New(Config{
		NodeName: "n", NodeIP: "127.0.0.1", Runtime: rt, RuntimeName: "containerd", DataDir: env.Dir + "/data",
		Reporter: rep, Refs: &fakeRefs{}, Events: &fakePodEvents{}, Clock: clock.RealClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	defer func() {
		m.Forget(pod.UID)
		testtool.WaitFor(t, time.Minute, "the pod's sandbox gone", func() error {
			if runs, err := rt.List(ctx); err != nil || len(runs) != 0 || len(rt.PodIPs(string(pod.UID))) != 0 {
				return fmt.Errorf("runs %+v, %v", runs, err)
			}
			return nil
		})
		mcancel()
		<-done
	}()
	m.Sync(pod)

	type want struct {
		code        int32
		reason, msg string
	}
	wants := map[string]want{
		"default-path": {0, "Completed", "bye\n"},
		"own-path":     {2, "Error", "custom"},
		"fallback":     {3, "Error", "it broke\n"},
		"no-fallback":  {4, "Error", ""},
		"oom":          {137, "OOMKilled", ""},
	}
	testtool.WaitFor(t, 2*time.Minute, "every container terminated as it should", func() error {
		st, _ := rep.last(pod.UID)
		if len(st.ContainerStatuses) != len(wants) {
			return fmt.Errorf("statuses %+v", st.ContainerStatuses)
		}
		var errs []error
		for _, cs := range st.ContainerStatuses {
			w, term := wants[cs.Name], cs.State.Terminated
			switch {
			case term == nil:
				errs = append(errs, fmt.Errorf("%s: not terminated: %+v", cs.Name, cs.State))
			case term.ExitCode != w.code || term.Reason != w.reason || term.Message != w.msg:
				errs = append(errs, fmt.Errorf("%s: exit %d reason %q message %q, want %d %q %q", cs.Name, term.ExitCode, term.Reason, term.Message, w.code, w.reason, w.msg))
			case !strings.HasPrefix(cs.ContainerID, "containerd://") || term.ContainerID != cs.ContainerID || len(cs.ContainerID) != len("containerd://")+64:
				errs = append(errs, fmt.Errorf("%s: container ID %q (terminated: %q), want containerd's", cs.Name, cs.ContainerID, term.ContainerID))
			}
		}
		return errors.Join(errs...)
	})
}

// TestContainerdKilledUnderRunningPods SIGKILLs containerd while a pod
// runs, as k3s's supervisor sees its containerd die: the container runs
// on under its shim and keeps serving; containerd is started again after
// its back-off and finds the container, and the agent goes on with the
// same run (same container ID, no restart, nothing started twice), the
// pod Running and ready throughout.
func TestContainerdKilledUnderRunningPods(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	web := env.Registry.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"httpd", "-f", "-p", "8080", "-h", "/www"}}))
	pod := criPod("web", api.PodSpec{
		Containers: []api.Container{{
			Name: "web", Image: web,
			ReadinessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "/index.html", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			LivenessProbe:  &api.Probe{ProbeHandler: api.ProbeHandler{Exec: &api.ExecAction{Command: []string{"cat", "/www/index.html"}}}, PeriodSeconds: 1, FailureThreshold: 30},
		}},
	})
	rt, err := cri.New(ctx, cri.Options{Endpoint: env.Containerd.Endpoint(), PollPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rep, ev := newFakeReporter(), &fakePodEvents{}
	m, err := New(Config{
		NodeName: "n", NodeIP: "127.0.0.1", Runtime: rt, RuntimeName: "containerd", DataDir: env.Dir + "/data",
		Reporter: rep, Refs: &fakeRefs{}, Events: ev, Clock: clock.RealClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	defer func() {
		m.Forget(pod.UID)
		testtool.WaitFor(t, time.Minute, "the pod's sandbox gone", func() error {
			if runs, err := rt.List(ctx); err != nil || len(runs) != 0 || len(rt.PodIPs(string(pod.UID))) != 0 {
				return fmt.Errorf("runs %+v, %v", runs, err)
			}
			return nil
		})
		mcancel()
		<-done
	}()
	m.Sync(pod)

	var podIP, containerID string
	ready := func() error {
		st, _ := rep.last(pod.UID)
		if st.Phase != api.PodRunning || len(st.ContainerStatuses) != 1 || !st.ContainerStatuses[0].Ready || st.ContainerStatuses[0].State.Running == nil {
			return fmt.Errorf("status %+v", st)
		}
		cs := st.ContainerStatuses[0]
		if containerID != "" && (cs.ContainerID != containerID || cs.RestartCount != 0 || st.PodIP != podIP) {
			t.Fatalf("the pod changed: %s restarts %d at %s, was %s at %s", cs.ContainerID, cs.RestartCount, st.PodIP, containerID, podIP)
		}
		podIP, containerID = st.PodIP, cs.ContainerID
		return nil
	}
	testtool.WaitFor(t, time.Minute, "the pod ready", ready)
	serves := func() error {
		resp, err := http.Get("http://" + podIP + ":8080/index.html")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "hello from an image\n" {
			return errors.New(string(b))
		}
		return nil
	}
	testtool.WaitFor(t, 30*time.Second, "the pod serving", serves)
	started := len(ev.all())

	cd := env.Containerd
	pid := cd.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "containerd dead", func() error {
		if syscall.Kill(pid, 0) == nil && cd.PID() == pid {
			return errors.New("alive")
		}
		return nil
	})
	if err := serves(); err != nil {
		t.Errorf("the pod while containerd is down: %v", err)
	}
	testtool.WaitFor(t, 30*time.Second, "containerd started again", func() error {
		if cd.Starts() < 2 || cd.PID() == pid {
			return fmt.Errorf("%d starts", cd.Starts())
		}
		return nil
	})
	// The liveness probe's ExecSync goes through the new containerd:
	// passing, it leaves the run alone.
	testtool.WaitFor(t, time.Minute, "the same run back in the status", func() error {
		if err := ready(); err != nil {
			return err
		}
		out, code, err := rt.Exec(ctx, runtime.ID{PodUID: string(pod.UID), Name: "web"}, []string{"cat", "/www/index.html"})
		if err != nil || code != 0 || string(out) != "hello from an image\n" {
			return fmt.Errorf("exec through the new containerd: %q %d %v", out, code, err)
		}
		return nil
	})
	if err := serves(); err != nil {
		t.Errorf("the pod after containerd's restart: %v", err)
	}
	runs, err := rt.List(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID.Attempt != 0 || runs[0].State != runtime.StateRunning || runs[0].RuntimeID != containerID {
		t.Fatalf("runs after containerd's restart: %+v, %v", runs, err)
	}
	if evs := ev.all()[started:]; slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, "Started") || strings.Contains(e, "Killing") }) {
		t.Errorf("the pod was started again: %q", evs)
	}
}
