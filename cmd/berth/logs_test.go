package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/testtool"
)

// logsAgent stands in for a node's agent: it serves fixed logs on the
// agent's path, over TLS with the certificate the node got at join, to
// the API server's client certificate. Its followed log writes "one",
// then waits for more before it writes "two" and ends.
type logsAgent struct {
	more chan struct{}

	mu    sync.Mutex
	tails []string // the tailLines of each request, in order
}

var logsAgentLines = map[string][]string{
	"web/app":          {"hello", "world"},
	"web/app/previous": {"before the crash"},
	"multi/a":          {"I am a"},
	"multi/b":          {"I am b"},
}

func (a *logsAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != api.APIServerClientName {
		http.Error(w, "not the API server", http.StatusForbidden)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, api.ContainerLogsPath+"/default/")
	q := r.URL.Query()
	if q.Get("previous") == "true" {
		rest += "/previous"
	}
	a.mu.Lock()
	a.tails = append(a.tails, q.Get("tailLines"))
	a.mu.Unlock()
	lines, found := logsAgentLines[rest]
	if !ok || !found {
		http.Error(w, "no such container run "+rest, http.StatusNotFound)
		return
	}
	if q.Get("follow") == "true" {
		fmt.Fprintln(w, "one")
		http.NewResponseController(w).Flush()
		select {
		case <-a.more:
			fmt.Fprintln(w, "two")
		case <-r.Context().Done():
		}
		return
	}
	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// startLogsCluster runs a control plane and an agent stand-in joined as
// node n1, with pods web (container app) and multi (a and b) bound to it,
// and returns the admin kubeconfig.
func startLogsCluster(t *testing.T) (string, *logsAgent) {
	t.Helper()
	dir := t.TempDir()
	s := cptest.Start(t, controlplane.Config{DataDir: dir})
	creds := s.Credentials()
	server := "https://" + s.Addr().String()
	kubeconfig := filepath.Join(dir, "test.kubeconfig")
	if err := pki.WriteKubeconfig(kubeconfig, server, creds.CAPEM, creds.AdminToken); err != nil {
		t.Fatal(err)
	}

	joiner, err := client.New(&client.Config{Server: server, Token: creds.NodeToken, CAData: creds.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	var joined api.JoinResponse
	testtool.WaitFor(t, 10*time.Second, "a join", func() error {
		joined, err = joiner.Join(context.Background(), api.JoinRequest{NodeName: "n1", Addresses: []string{"127.0.0.1"}})
		return err
	})
	cert, err := tls.X509KeyPair([]byte(joined.ServingCertificate), []byte(joined.ServingKey))
	if err != nil {
		t.Fatal(err)
	}
	agent := &logsAgent{more: make(chan struct{})}
	srv := httptest.NewUnstartedServer(agent)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: creds.CAPool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node.Status.Addresses = []api.NodeAddress{{Type: api.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	objs := []api.Object{node}
	for name, ctrs := range map[string][]string{"web": {"app"}, "multi": {"a", "b"}} {
		p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: api.NamespaceDefault, Labels: map[string]string{"app": name}}}
		p.Spec.NodeName = "n1"
		for _, c := range ctrs {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: c, Image: "busybox"})
		}
		objs = append(objs, p)
	}
	rs := &api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-rs", Namespace: api.NamespaceDefault}}
	rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	rs.Spec.Template.Labels = map[string]string{"app": "web"}
	rs.Spec.Template.Spec.Containers = []api.Container{{Name: "app", Image: "busybox"}}
	objs = append(objs, rs)
	for _, o := range objs {
		api.Default(o)
		if _, err := s.Store().Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return kubeconfig, agent
}

func TestLogsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig, _ := startLogsCluster(t)
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"logs", "web"}, exitOK, "hello\nworld\n", ""},
		{[]string{"logs", "pod/web", "--tail", "1"}, exitOK, "world\n", ""},
		{[]string{"logs", "po/web", "-c", "app", "--previous"}, exitOK, "before the crash\n", ""},
		{[]string{"logs", "multi", "-c", "b"}, exitOK, "I am b\n", ""},
		{[]string{"logs", "multi"}, exitOK, "I am a\n", "Defaulted container \"a\" out of: a, b\n"},
		{[]string{"logs", "multi", "-c", "c"}, exitFailure, "", "Error from server (BadRequest): container c is not valid for pod multi\n"},
		{[]string{"logs", "multi", "-c", "a", "-p"}, exitFailure, "", "Error from server (NotFound): no such container run multi/a/previous\n"},
		{[]string{"logs", "nope"}, exitFailure, "", "Error from server (NotFound): pods \"nope\" not found\n"},
		{[]string{"logs", "web", "-n", "shop"}, exitFailure, "", "Error from server (NotFound): pods \"web\" not found\n"},
		{[]string{"logs", "rs/web-rs", "--tail", "1"}, exitOK, "world\n", ""},
		{[]string{"logs", "deploy/web"}, exitFailure, "", "Error from server (NotFound): deployments.apps \"web\" not found\n"},
		{[]string{"logs", "svc/web"}, exitUsage, "", "Error: berth logs takes a pod or a deployment, replicaset or replicationcontroller, not \"svc/web\"\n"},
		{[]string{"logs", "web", "--tail", "-2"}, exitUsage, "", "Error: --tail must be -1 (all) or more, not -2\n"},
		{[]string{"logs", "web", "--since", "5m", "--since-time", "2026-11-30T12:00:00Z"}, exitUsage, "", "Error: --since and --since-time cannot both be given\n"},
		{[]string{"logs", "web", "--since", "-5m"}, exitUsage, "", "Error: --since must be a positive duration, not -5m0s\n"},
		{[]string{"logs", "web", "--limit-bytes", "-1"}, exitUsage, "", "Error: --limit-bytes must be 0 or more, not -1\n"},
		{[]string{"logs", "web", "--since-time", "noon"}, exitUsage, "", "Error: --since-time \"noon\": want an RFC 3339 time, as 2026-11-30T12:00:00Z\n"},
		// Every container, every pod a selector matches, with their names.
		{[]string{"logs", "multi", "--all-containers"}, exitOK, "I am a\nI am b\n", ""},
		{[]string{"logs", "multi", "--all-containers", "--prefix"}, exitOK, "[pod/multi/a] I am a\n[pod/multi/b] I am b\n", ""},
		{[]string{"logs", "-l", "app=web"}, exitOK, "hello\nworld\n", ""},
		{[]string{"logs", "-l", "app in (web,multi)", "--all-containers", "--prefix", "--tail", "1"}, exitOK,
			"[pod/multi/a] I am a\n[pod/multi/b] I am b\n[pod/web/app] world\n", ""},
		{[]string{"logs", "-l", "app=multi"}, exitOK, "I am a\n", "Defaulted container \"a\" out of: a, b\n"},
		{[]string{"logs", "-l", "app=none"}, exitOK, "", "No resources found in default namespace.\n"},
		{[]string{"logs", "-l", "app=multi", "--all-containers", "-f", "--max-log-requests", "1"}, exitFailure, "",
			"Error: you are attempting to follow 2 log streams, but at most 1 may be followed at once: use --max-log-requests to raise it\n"},
		{[]string{"logs", "-l", "app in (web,multi)", "--all-containers", "--previous"}, exitFailure, "",
			"Error from server (NotFound): no such container run multi/a/previous\n"},
		{[]string{"logs", "-l", "app in (web,multi)", "--all-containers", "--previous", "--ignore-errors"}, exitOK, "before the crash\n",
			"Error from server (NotFound): no such container run multi/a/previous\nError from server (NotFound): no such container run multi/b/previous\n"},
		{[]string{"logs", "web", "-l", "app=web"}, exitUsage, "", "Error: give a pod or a selector (-l), not both\n"},
		{[]string{"logs", "-l", "app=("}, exitUsage, "", "Error: invalid label selector \"app=(\": unable to parse requirement: found '(', expected: identifier\n"},
		{[]string{"logs", "multi", "-c", "a", "--all-containers"}, exitUsage, "", "Error: --container and --all-containers cannot both be given\n"},
		{[]string{"logs", "web", "-f", "--max-log-requests", "0"}, exitUsage, "", "Error: --max-log-requests must be 1 or more, not 0\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runBerth(t, "", append(tc.args, "--kubeconfig", kubeconfig)...)
			if r.code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	if r := runBerth(t, "", "logs", "--kubeconfig", kubeconfig); r.code != exitUsage {
		t.Errorf("no pod: exit %d, stderr %q; want %d", r.code, r.stderr, exitUsage)
	}
}

// TestLogsSelectorTail: with a selector, the last 10 lines of each pod
// unless --tail says otherwise, as kubectl; without one, all.
func TestLogsSelectorTail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig, agent := startLogsCluster(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "web"}, ""},
		{[]string{"logs", "-l", "app=web"}, "10"},
		{[]string{"logs", "-l", "app=web", "--tail", "-1"}, ""},
		{[]string{"logs", "-l", "app=web", "--tail", "3"}, "3"},
	} {
		agent.mu.Lock()
		agent.tails = nil
		agent.mu.Unlock()
		if r := runBerth(t, "", append(tc.args, "--kubeconfig", kubeconfig)...); r.code != exitOK {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, r.code, r.stderr)
		}
		agent.mu.Lock()
		got := agent.tails
		agent.mu.Unlock()
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%v: the agent was asked for tailLines %q, want [%q]", tc.args, got, tc.want)
		}
	}
}

// TestLogsFollowSeveral: -f with a selector follows every container at
// once, each line whole and prefixed, until all end.
func TestLogsFollowSeveral(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	agent, out, errOut, done := followLogs(t, "logs", "-l", "app=multi", "--all-containers", "-f", "--prefix")
	lines := func() []string {
		l := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		slices.Sort(l)
		return l
	}
	testtool.WaitFor(t, 10*time.Second, "the first line of each", func() error {
		if got := lines(); !slices.Equal(got, []string{"[pod/multi/a] one", "[pod/multi/b] one"}) {
			return fmt.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
		}
		return nil
	})
	close(agent.more)
	select {
	case code := <-done:
		want := []string{"[pod/multi/a] one", "[pod/multi/a] two", "[pod/multi/b] one", "[pod/multi/b] two"}
		if got := lines(); code != exitOK || !slices.Equal(got, want) {
			t.Errorf("exit %d, lines %q, stderr %q; want %q", code, got, errOut.String(), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("berth logs -f -l did not end with the logs")
	}
}

func TestDefaultContainer(t *testing.T) {
	pod := func(annotation string, init []string, ctrs ...string) *api.Pod {
		p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		if annotation != "" {
			p.Annotations = map[string]string{defaultContainerAnnotation: annotation}
		}
		for _, c := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, api.Container{Name: c})
		}
		for _, c := range ctrs {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: c})
		}
		return p
	}
	for _, tc := range []struct {
		pod        *api.Pod
		want, said string
	}{
		{pod("", nil, "web"), "web", ""},
		{pod("", nil, "web", "proxy"), "web", "Defaulted container \"web\" out of: web, proxy\n"},
		{pod("proxy", nil, "web", "proxy"), "proxy", "Defaulted container \"proxy\" out of: web, proxy\n"},
		{pod("nope", nil, "web", "proxy"), "web", "Defaulted container \"web\" out of: web, proxy\n"},
		{pod("", []string{"setup"}, "web"), "web", "Defaulted container \"web\" out of: web, setup (init)\n"},
		{pod("", nil), "", ""},
	} {
		var said bytes.Buffer
		if got := defaultContainer("", tc.pod, &said); got != tc.want || said.String() != tc.said {
			t.Errorf("%+v: %q, said %q; want %q, %q", tc.pod.Spec, got, said.String(), tc.want, tc.said)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	w := &lineWriter{mu: &mu, out: &out, prefix: "[p] "}
	for _, chunk := range []string{"a", "b\nc", "\n\nd"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got := out.String(); got != "[p] ab\n[p] c\n[p] \n" {
		t.Fatalf("before flush: %q", got)
	}
	w.flush()
	if got := out.String(); got != "[p] ab\n[p] c\n[p] \n[p] d" {
		t.Fatalf("after flush: %q", got)
	}
}

// TestLogsFollow: -f prints as the container writes, to the end of its
// log; with --ignore-errors over several logs, those that cannot be read
// are reported and the others still followed.
func TestLogsFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	for _, tc := range []struct {
		args   []string
		errors int
	}{
		{[]string{"logs", "web", "-f"}, 0},
		{[]string{"logs", "-l", "app in (web,multi)", "--all-containers", "-f", "--previous", "--ignore-errors"}, 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			agent, out, errOut, done := followLogs(t, tc.args...)
			testtool.WaitFor(t, 10*time.Second, "the first line", func() error {
				if out.String() != "one\n" || strings.Count(errOut.String(), "NotFound") != tc.errors {
					return fmt.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
				}
				return nil
			})
			close(agent.more)
			select {
			case code := <-done:
				if code != exitOK || out.String() != "one\ntwo\n" {
					t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("berth logs -f did not end with the log")
			}
		})
	}
}

// TestLogsFollowInterrupted checks that an interrupted `logs -f` ends
// cleanly.
func TestLogsFollowInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig, _ := startLogsCluster(t)
	var out, errOut testtool.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"logs", "web", "-f", "--kubeconfig", kubeconfig}, strings.NewReader(""), &out, &errOut)
	}()
	testtool.WaitFor(t, 10*time.Second, "the first line", func() error {
		if out.String() != "one\n" {
			return fmt.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
		}
		return nil
	})
	cancel()
	select {
	case code := <-done:
		if code != exitOK || errOut.String() != "" {
			t.Errorf("exit %d, stderr %q; want 0 and nothing", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("berth logs -f did not end when interrupted")
	}
}

// followLogs starts a logs cluster and runs berth with args against it in
// the background; the command's exit code comes on done. A failure ends
// the command before the cluster stops (cleanups run last first), so that
// the agent stand-in's follow is not left open.
func followLogs(t *testing.T, args ...string) (agent *logsAgent, out, errOut *testtool.Buffer, done <-chan int) {
	t.Helper()
	kubeconfig, agent := startLogsCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out, errOut = &testtool.Buffer{}, &testtool.Buffer{}
	codes := make(chan int, 1)
	go func() {
		codes <- run(ctx, append(args, "--kubeconfig", kubeconfig), strings.NewReader(""), out, errOut)
	}()
	return agent, out, errOut, codes
}
