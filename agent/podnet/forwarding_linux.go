package podnet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// forwardingFiles are the sysctls that let a node route between its pods'
// bridge and the network to the other nodes, by family.
var forwardingFiles = map[bool]string{
	true:  "net/ipv4/ip_forward",
	false: "net/ipv6/conf/all/forwarding",
}

// enableForwarding turns IP forwarding on for one family (IPv4 when v4),
// unless it is on already. Like flannel and the kubelet's network plugins,
// berth turns it on and never off: other software on the node may rely on
// it once it is on.
func enableForwarding(procSys string, v4 bool) error {
	path := filepath.Join(procSys, forwardingFiles[v4])
	cur, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("IP forwarding: %w", err)
	}
	if string(bytes.TrimSpace(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("IP forwarding: %w", err)
	}
	return nil
}
