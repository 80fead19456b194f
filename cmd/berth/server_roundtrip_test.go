package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// startControlPlane runs a real control plane (memory store) on a
// loopback port for the test and returns its admin kubeconfig. It is
// stopped, and waited for, at cleanup.
func startControlPlane(t *testing.T) string {
	t.Helper()
	return cptest.Start(t, controlplane.Config{}).Credentials().Paths.AdminKubeconfig
}

// berthAgainstServer starts a control plane for the test (skipping it
// under -short), waits until it answers and returns a runner of berth
// commands against it.
func berthAgainstServer(t *testing.T) func(args ...string) result {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig := startControlPlane(t)
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}
	waitReady(t, func() bool { return berth("get", "ns", "default").code == exitOK })
	return berth
}

// TestAgainstServer drives apply, get, describe and delete through the
// real client against a real API server.
func TestAgainstServer(t *testing.T) {
	berth := berthAgainstServer(t)

	r := berth("apply", "-f", "testdata/apply/app.yaml")
	want := "namespace/shop created\nconfigmap/settings created\nservice/web created\ndeployment.apps/web created\n"
	if r.code != exitOK || r.stdout != want {
		t.Fatalf("apply: exit %d\n%s\nwant\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	r = berth("apply", "-f", "testdata/apply/app.yaml")
	want = "namespace/shop unchanged\nconfigmap/settings unchanged\nservice/web unchanged\ndeployment.apps/web unchanged\n"
	if r.code != exitOK || r.stdout != want {
		t.Errorf("apply again: exit %d\n%s\nwant\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	r = berth("apply", "-f", "testdata/apply/app-v2.yaml")
	if r.code != exitOK || !strings.Contains(r.stdout, "deployment.apps/web configured\n") || strings.Count(r.stdout, "unchanged") != 3 {
		t.Errorf("apply v2: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	r = berth("get", "deploy", "-n", "shop", "-o", "wide")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "NAME   READY   UP-TO-DATE   AVAILABLE   AGE") || !strings.Contains(r.stdout, "nginx:1.28") {
		t.Errorf("get deploy: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = berth("get", "deploy/web", "-n", "shop", "-o", "yaml")
	if r.code != exitOK || !strings.Contains(r.stdout, "kind: Deployment\n") || !strings.Contains(r.stdout, "replicas: 3\n") || strings.Contains(r.stdout, "tier:") {
		t.Errorf("get -o yaml: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = berth("get", "cm,svc", "-A", "-o", "name")
	if r.code != exitOK || !strings.Contains(r.stdout, "configmap/settings\n") || !strings.Contains(r.stdout, "service/web\n") {
		t.Errorf("get -o name: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = berth("describe", "deploy", "web", "-n", "shop")
	if r.code != exitOK || !strings.Contains(r.stdout, "Replicas:               3 desired") || !strings.Contains(r.stdout, "berth.dev/source: api") {
		t.Errorf("describe: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	r = berth("get", "pods", "nope")
	if r.code != exitFailure || r.stderr != "Error from server (NotFound): pods \"nope\" not found\n" {
		t.Errorf("get missing: exit %d, stderr %q", r.code, r.stderr)
	}

	r = berth("delete", "deploy", "web", "-n", "shop", "--cascade=foreground")
	if r.code != exitOK || r.stdout != "deployment.apps \"web\" deleted\n" {
		t.Errorf("delete: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = berth("delete", "svc/web", "cm/settings", "-n", "shop")
	if r.code != exitFailure || r.stdout != "service \"web\" deleted\n" || !strings.Contains(r.stderr, `configmaps "settings" not found`) {
		t.Errorf("delete mixed: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// waitReady polls until the server answers, with a deadline.
func waitReady(t *testing.T, ok func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, "the control plane to answer", func() error {
		if !ok() {
			return errors.New("no answer yet")
		}
		return nil
	})
}

// TestServerHelpStore checks that the help offers every store and the
// flags of the etcd one.
func TestServerHelpStore(t *testing.T) {
	r := runBerth(t, "", "server", "--help")
	i := strings.Index(r.stdout, "--store string")
	if r.code != exitOK || i < 0 {
		t.Fatalf("server --help: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	line, _, _ := strings.Cut(r.stdout[i:], "\n")
	for _, want := range []string{"bolt", "memory", "etcd://"} {
		if !strings.Contains(line, want) {
			t.Errorf("--store does not name %s: %s", want, line)
		}
	}
	for _, flag := range []string{"--etcd-cafile", "--etcd-certfile", "--etcd-keyfile", "--etcd-prefix", "--etcd-compaction-interval", "--leader-elect-lease-duration", "--leader-elect-renew-deadline", "--leader-elect-retry-period", "--advertise-address"} {
		if !strings.Contains(r.stdout, flag) {
			t.Errorf("server --help has no %s", flag)
		}
	}
}

// TestServerBadUsage checks that flags the server cannot work with are bad
// usage (exit 2) found before anything is made: no data dir appears.
func TestServerBadUsage(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"store", []string{"--store", "foo"}, `--store "foo": want bolt, memory or etcd://host:port,…`},
		{"etcd store", []string{"--store", "etcd://h1:2379,h2"}, `"h2" is not host:port`},
		{"etcd client certificate", []string{"--store", "etcd://h1:2379", "--etcd-certfile", "c.pem"}, "--etcd-certfile and --etcd-keyfile go together"},
		{"etcd flags", []string{"--etcd-cafile", "ca.pem"}, "--etcd-cafile, --etcd-certfile and --etcd-keyfile are for --store etcd://"},
		{"duplicate sources", []string{"--source", "name=site," + tmp, "--source", "name=site," + tmp},
			`two sources are named "site"`},
		{"agent flag", []string{"--node-labels", "=x"}, "--node-labels:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(tmp, "data")
			r := runBerth(t, "", append([]string{"server", "--data-dir", dataDir, "--store", "memory"}, tt.args...)...)
			if r.code != exitUsage || !strings.HasPrefix(r.stderr, "Error: ") || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want %d; stderr %q, want %q", r.code, exitUsage, r.stderr, tt.want)
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the data dir was made: %v", err)
			}
		})
	}
}
