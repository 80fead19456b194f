package agent

import (
	"strings"
	"testing"
)

func TestPodNetworkConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		mode    string
		dns     string
		wantErr string
	}{
		{cfg: Config{Runtime: RuntimeExec, Server: "https://198.18.0.1:6443"}, mode: PodNetworkNone, dns: "198.18.0.1:10053"},
		{cfg: Config{Runtime: "containerd", Server: "https://cp.example:6443"}, mode: PodNetworkHostGW, dns: "cp.example:10053"},
		{cfg: Config{Runtime: RuntimeExec, PodNetwork: PodNetworkHostGW, Server: "https://[fd00::1]:6443"}, mode: PodNetworkHostGW, dns: "[fd00::1]:10053"},
		{cfg: Config{Runtime: "containerd", PodNetwork: PodNetworkNone, ClusterDNS: "198.18.0.9:53"}, mode: PodNetworkNone, dns: "198.18.0.9:53"},
		{cfg: Config{PodNetwork: "vxlan"}, wantErr: `--pod-network "vxlan"`},
		{cfg: Config{ClusterDNS: "198.18.0.9"}, wantErr: "--cluster-dns"},
	} {
		err := tc.cfg.checkPodNetwork()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", tc.cfg, err)
		}
		if got := tc.cfg.podNetwork(); got != tc.mode {
			t.Errorf("%+v: mode %s, want %s", tc.cfg, got, tc.mode)
		}
		if got, err := tc.cfg.clusterDNS(); got != tc.dns || err != nil {
			t.Errorf("%+v: cluster DNS %s, %v; want %s", tc.cfg, got, err, tc.dns)
		}
	}
	if _, err := (Config{Server: ""}).clusterDNS(); err == nil {
		t.Error("no server and no --cluster-dns: no error")
	}
}
