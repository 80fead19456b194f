package main

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestAttach: as kubectl attach: the default container or the one -c
// names, input only with -i (and the prompt hint then, unless -q),
// stderr apart without a terminal, -t for a container without one
// refused with a warning, a container on a terminal attached on one when
// this input is one, -q saying nothing of its own, and a completed pod
// refused before any attach.
func TestAttach(t *testing.T) {
	shell := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "debug"},
		Spec:   api.PodSpec{Containers: []api.Container{{Name: "sh", Image: "busybox", Stdin: true, TTY: true}}},
		Status: api.PodStatus{Phase: api.PodRunning}}
	for _, tt := range []struct {
		args      []string
		code      int
		container string
		stdin     bool
		stderr    string
	}{
		{[]string{"attach", "web-7d4b9c-abcde"}, exitOK, "web", false, ""},
		{[]string{"attach", "cache-0"}, exitOK, "redis", false, "Defaulted container \"redis\" out of: redis, exporter, wait-db (init), seed (init)\n"},
		{[]string{"attach", "cache-0", "-c", "exporter", "-i"}, exitOK, "exporter", true, "If you don't see a command prompt, try pressing enter.\n"},
		{[]string{"attach", "-iq", "deploy/web"}, exitOK, "web", true, ""},
		{[]string{"attach", "-it", "web-7d4b9c-abcde"}, exitOK, "web", true,
			"error: Unable to use a TTY - container web did not allocate one\nIf you don't see a command prompt, try pressing enter.\n"},
		{[]string{"attach", "-it", "debug"}, exitOK, "sh", true,
			"Unable to use a TTY - input is not a terminal or the right kind of file\nIf you don't see a command prompt, try pressing enter.\n"},
		// -q: only what the container writes, as kubectl's.
		{[]string{"attach", "-q", "cache-0"}, exitOK, "redis", false, ""},
		{[]string{"attach", "-itq", "web-7d4b9c-abcde"}, exitOK, "web", true, ""},
		{[]string{"attach", "-itq", "debug"}, exitOK, "sh", true, ""},
		{[]string{"attach", "migrate-x7k2p"}, exitFailure, "", false, "cannot attach a container in a completed pod; current phase is Succeeded"},
		{[]string{"attach", "nope"}, exitFailure, "", false, `pods "nope" not found`},
		{[]string{"attach", "svc/web"}, exitUsage, "", false, "berth attach takes a pod"},
	} {
		f := cluster()
		f.put(shell.DeepCopy())
		useFakeAPI(t, f)
		r := runBerth(t, "input", tt.args...)
		// What an attach that ran says is all it says.
		if r.code != tt.code || (tt.code == exitOK && r.stderr != tt.stderr) || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", tt.args, r.code, r.stderr, tt.code, tt.stderr)
			continue
		}
		if tt.code != exitOK {
			if len(f.attaches) != 0 {
				t.Errorf("%v: attached", tt.args)
			}
			continue
		}
		if len(f.attaches) != 1 {
			t.Fatalf("%v: %d attaches", tt.args, len(f.attaches))
		}
		opts := f.attaches[0]
		if opts.Container != tt.container || (opts.Stdin != nil) != tt.stdin || opts.TTY || opts.Stderr == nil || opts.Stdout == nil {
			t.Errorf("%v: container %q, stdin %t, tty %t, stderr %t", tt.args, opts.Container, opts.Stdin != nil, opts.TTY, opts.Stderr != nil)
		}
	}
}
