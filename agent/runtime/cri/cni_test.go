package cri

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The network is the bridge berth0 with its gateway at the podCIDR's first
// address, host-local addresses from the podCIDR, and portmap; it is
// written once and left alone while it says the same.
func TestWriteCNIConfig(t *testing.T) {
	dir := t.TempDir()
	wrote, err := WriteCNIConfig(dir, "198.18.7.0/24", true)
	if err != nil || !wrote {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "10-berth.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPAM   struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
			Capabilities map[string]bool `json:"capabilities"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.Name != "berth" || len(conf.Plugins) != 2 {
		t.Fatalf("conf %s", b)
	}
	br, pm := conf.Plugins[0], conf.Plugins[1]
	if br.Type != "bridge" || br.Bridge != "berth0" || br.IPAM.Type != "host-local" ||
		br.IPAM.Ranges[0][0]["subnet"] != "198.18.7.0/24" || br.IPAM.Ranges[0][0]["gateway"] != "198.18.7.1" {
		t.Errorf("bridge %+v", br)
	}
	if pm.Type != "portmap" || !pm.Capabilities["portMappings"] {
		t.Errorf("portmap %+v", pm)
	}
	if wrote, err := WriteCNIConfig(dir, "198.18.7.0/24", true); err != nil || wrote {
		t.Errorf("the same network written again: %v, %v", wrote, err)
	}
	if wrote, err := WriteCNIConfig(dir, "198.18.8.0/24", true); err != nil || !wrote {
		t.Errorf("a new podCIDR not written: %v, %v", wrote, err)
	}
	if _, err := WriteCNIConfig(dir, "198.18.8.0", true); err == nil {
		t.Error("a podCIDR without a prefix length was taken")
	}
	// Under host-gw the node masquerades what leaves the cluster, not the
	// bridge: another node's pods see this one's addresses.
	for _, masq := range []bool{true, false} {
		b, _ := CNIConfig("198.18.8.0/24", masq)
		if want := fmt.Sprintf(`"ipMasq": %v`, masq); !strings.Contains(string(b), want) {
			t.Errorf("ipMasq %v: %s", masq, b)
		}
	}
}
