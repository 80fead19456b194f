package main

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// TestServerListFromKubeconfigAndFlag: berth reaches a live server past a
// dead one, whether the kubeconfig's cluster lists the servers in
// berth's extension (kubectl's one URL naming the dead one) or --server
// lists them.
func TestServerListFromKubeconfigAndFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cfg, err := client.LoadKubeconfig(startControlPlane(t))
	if err != nil {
		t.Fatal(err)
	}
	dead := testtool.ClosedURL(t)
	kubeconfig := testtool.WriteKubeconfig(t, testtool.Kubeconfig{Server: dead, Servers: []string{cfg.Server}, Token: cfg.Token})
	waitReady(t, func() bool {
		return runBerth(t, "", "get", "ns", "default", "--kubeconfig", kubeconfig).code == exitOK
	})
	if r := runBerth(t, "", "get", "ns", "default", "-o", "name", "--kubeconfig", kubeconfig); r.code != exitOK || r.stdout != "namespace/default\n" {
		t.Errorf("past the dead server of the kubeconfig: exit %d %q %s", r.code, r.stdout, r.stderr)
	}

	// --server in place of the kubeconfig's: alone, the dead server
	// fails; listed before the live one, it is passed.
	if r := runBerth(t, "", "get", "ns", "default", "--kubeconfig", kubeconfig, "--server", dead, "--request-timeout", "5s"); r.code == exitOK {
		t.Errorf("--server of a dead server alone: exit %d %q", r.code, r.stdout)
	}
	if r := runBerth(t, "", "get", "ns", "default", "-o", "name", "--kubeconfig", kubeconfig, "--server", dead+","+cfg.Server); r.code != exitOK || r.stdout != "namespace/default\n" {
		t.Errorf("--server listing a dead and a live server: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := runBerth(t, "", "get", "ns", "--kubeconfig", kubeconfig, "--server", "10.0.0.5:6443"); r.code == exitOK || !strings.Contains(r.stderr, "not an http(s) URL") {
		t.Errorf("--server without a scheme: exit %d %s", r.code, r.stderr)
	}
}

func TestRequestTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration // of the client; -1 none
		bad  bool
	}{
		{"10s", 10 * time.Second, false},
		{"2m", 2 * time.Minute, false},
		{"5", 5 * time.Second, false},
		{"0", -1, false},
		{"0s", -1, false},
		{"-1s", 0, true},
		{"soon", 0, true},
	} {
		var r requestTimeout
		err := r.Set(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !tc.bad && r.client() != tc.want {
			t.Errorf("%q: %s, want %s", tc.in, r.client(), tc.want)
		}
	}
	if r := runBerth(t, "", "get", "ns", "--request-timeout", "soon"); r.code != exitUsage {
		t.Errorf("--request-timeout soon: exit %d, want %d (%s)", r.code, exitUsage, r.stderr)
	}
}
