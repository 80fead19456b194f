package cri_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// TestContainerdRunsPodsFromImages drives a real containerd through the
// runtime: a pulled image whose entrypoint the pod's args go after, on a
// pod address of its own, its log, a probe's exec, a stop with grace, a
// pull that fails, and a new runtime that finds the running pod again.
func TestContainerdRunsPodsFromImages(t *testing.T) {
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := critest.Start(t, ctx)
	dir, reg, cd := env.Dir, env.Registry, env.Containerd
	web := reg.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `echo "started as $0 $1 in $(pwd) with $GREETING"; exec httpd -f -p "$1" -h /www`},
		Cmd:        []string{"web", "80"},
		Env:        []string{"GREETING=image"},
	}))

	r, err := cri.New(ctx, cri.Options{Endpoint: cd.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	pod := &runtime.Pod{UID: "uid-web", Namespace: "default", Name: "web", LogDir: dir + "/logs/uid-web"}
	c := &runtime.Container{
		ID:         runtime.ID{PodUID: pod.UID, Name: "web", Attempt: 0},
		Image:      &runtime.Image{Ref: web, PullPolicy: cri.PullIfNotPresent, Args: []string{"web", "8080"}},
		Env:        []string{"GREETING=pod"},
		WorkingDir: "/tmp",
		Pod:        pod,
	}
	pulled, err := r.PullImage(ctx, c)
	if err != nil || !pulled {
		t.Fatalf("pull: pulled %v, %v", pulled, err)
	}
	if pulled, err := r.PullImage(ctx, c); err != nil || pulled {
		t.Fatalf("IfNotPresent pulled a present image again: %v, %v", pulled, err)
	}
	st, err := r.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateRunning {
		t.Fatalf("started: %+v", st)
	}
	ips := r.PodIPs(pod.UID)
	if len(ips) == 0 {
		t.Fatal("the pod has no address")
	}
	ip := netip.MustParseAddr(ips[0])
	if !netip.MustParsePrefix(critest.PodCIDR).Contains(ip) || ip == netip.MustParseAddr("198.18.7.1") {
		t.Fatalf("pod address %s, want one of %s past the gateway", ip, critest.PodCIDR)
	}
	testtool.WaitFor(t, 30*time.Second, "the pod serving on its address", func() error {
		resp, err := http.Get("http://" + ips[0] + ":8080/index.html")
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

	var logs bytes.Buffer
	if err := r.Logs(ctx, c.ID, runtime.LogOptions{Timestamps: true}, &logs); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(logs.String())
	ts, msg, _ := strings.Cut(line, " ")
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || msg != "started as web 8080 in /tmp with pod" {
		t.Fatalf("log %q: want a timestamp and the entrypoint's line with the pod's args, dir and env", line)
	}
	logs.Reset()
	if err := r.Logs(ctx, c.ID, runtime.LogOptions{Since: time.Now().Add(time.Hour)}, &logs); err != nil || logs.Len() != 0 {
		t.Fatalf("logs since an hour ahead: %q, %v", logs.String(), err)
	}

	out, code, err := r.Exec(ctx, c.ID, []string{"sh", "-c", "cat /www/index.html; exit 3"})
	if err != nil || code != 3 || string(out) != "hello from an image\n" {
		t.Fatalf("exec: %q, code %d, %v", out, code, err)
	}
	var so, se bytes.Buffer
	code, err = r.ExecStream(ctx, c.ID, runtime.ExecOptions{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, Stdout: &so, Stderr: &se})
	if err != nil || code != 4 || so.String() != "out\n" || se.String() != "err\n" {
		t.Fatalf("exec stream: out %q err %q code %d, %v", so.String(), se.String(), code, err)
	}

	// Port-forward goes through the runtime's streaming server, inside
	// the pod's network namespace: a server on the pod's loopback alone,
	// which the pod's address does not reach, answers.
	lo := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "lo"}, Image: &runtime.Image{Ref: web, PullPolicy: cri.PullNever, Command: []string{"httpd", "-f", "-p", "127.0.0.1:9090", "-h", "/www"}}, Pod: pod}
	if _, err := r.Start(ctx, lo); err != nil {
		t.Fatal(err)
	}
	sess, err := r.PortForward(ctx, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 30*time.Second, "the pod's loopback server through port-forward", func() error {
		st, err := sess.Open(9090)
		if err != nil {
			return err
		}
		defer st.Close()
		io.WriteString(st, "GET /index.html HTTP/1.0\r\n\r\n")
		st.CloseWrite()
		b, _ := io.ReadAll(st)
		if !strings.HasSuffix(string(b), "\r\n\r\nhello from an image\n") {
			e, _ := io.ReadAll(st.Errors())
			return fmt.Errorf("answer %q, error stream %q", b, e)
		}
		return nil
	})
	if resp, err := http.Get("http://" + ips[0] + ":9090/index.html"); err == nil {
		resp.Body.Close()
		t.Fatal("the pod's loopback server answered on the pod's address")
	}
	st9, err := sess.Open(9)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(st9.Errors()); !strings.Contains(string(b), "9") {
		t.Errorf("forwarding to a port nothing listens on: error stream %q", b)
	}
	st9.Close()
	sess.Close()
	if _, err := r.PortForward(ctx, "no-such-pod"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("port-forward to a pod with no sandbox: %v", err)
	}
	if err := r.Stop(ctx, lo.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if id := <-r.Exited(); id != lo.ID {
		t.Fatalf("exited %s, want %s", id, lo.ID)
	}
	if err := r.Remove(ctx, lo.ID); err != nil {
		t.Fatal(err)
	}

	// A new runtime, as after an agent restart, finds the run as it is.
	r2, err := cri.New(ctx, cri.Options{Endpoint: cd.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	list, err := r2.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].State != runtime.StateRunning {
		t.Fatalf("list after restart: %+v, %v", list, err)
	}
	if got := r2.PodIPs(pod.UID); len(got) == 0 || got[0] != ips[0] {
		t.Fatalf("pod address after restart: %v, want %s", got, ips[0])
	}
	r2.Close()

	// httpd is its namespace's init, deaf to SIGTERM: killed once the
	// grace has passed, 128+9.
	if err := r.Stop(ctx, c.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	st, err = r.Status(ctx, c.ID)
	if err != nil || st.State != runtime.StateExited || st.ExitCode != 137 || st.Reason != "Error" {
		t.Fatalf("after stop: %+v, %v", st, err)
	}
	select {
	case id := <-r.Exited():
		if id != c.ID {
			t.Fatalf("exited %s, want %s", id, c.ID)
		}
	case <-ctx.Done():
		t.Fatal("no exit reported")
	}

	// A run that exits by itself, in the same sandbox, and its exit code.
	c2 := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "job"}, Image: &runtime.Image{Ref: web, PullPolicy: cri.PullNever, Command: []string{"sh", "-c", "echo done; exit 7"}}, Pod: pod}
	if _, err := r.PullImage(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx, c2); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 30*time.Second, "the job's exit", func() error {
		st, err := r.Status(ctx, c2.ID)
		if err != nil {
			return err
		}
		if st.State != runtime.StateExited || st.ExitCode != 7 {
			return errors.New(string(st.State))
		}
		return nil
	})

	// Attach to a process reading its input: what the session writes is
	// read, and what the process writes comes back.
	cat := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "cat"}, Image: &runtime.Image{Ref: web, PullPolicy: cri.PullNever, Command: []string{"sh", "-c", "while read l; do echo \"got $l\"; done"}}, Pod: pod, Stdin: true}
	if _, err := r.Start(ctx, cat); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var ao testtool.Buffer
	actx, acancel := context.WithCancel(ctx)
	attached := make(chan error, 1)
	go func() { attached <- r.Attach(actx, cat.ID, runtime.AttachOptions{Stdin: pr, Stdout: &ao, Stderr: &ao}) }()
	testtool.SayUntil(t, 30*time.Second, pw, "hello\n", &ao, "got hello\n")
	acancel()
	<-attached
	pw.Close()
	if err := r.Stop(ctx, cat.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, cat.ID); err != nil {
		t.Fatal(err)
	}

	bad := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "bad"}, Image: &runtime.Image{Ref: reg.Host + "/nothing:here", PullPolicy: cri.PullIfNotPresent}, Pod: pod}
	var pe *runtime.ImagePullError
	if _, err := r.PullImage(ctx, bad); !errors.As(err, &pe) || pe.Reason != cri.ReasonErrImagePull {
		t.Fatalf("pull of a missing image: %v", err)
	}
	bad.Image.PullPolicy = cri.PullNever
	if _, err := r.PullImage(ctx, bad); !errors.As(err, &pe) || pe.Reason != cri.ReasonErrImageNeverPull {
		t.Fatalf("Never of a missing image: %v", err)
	}

	for _, id := range []runtime.ID{c.ID, c2.ID} {
		if err := r.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if list, err := r.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("list after removal: %+v, %v", list, err)
	}
}
