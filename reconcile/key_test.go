package reconcile

import "testing"

func TestKey(t *testing.T) {
	tests := []struct {
		namespace, name string
		key             string
	}{
		{namespace: "ns", name: "web", key: "ns/web"},
		{namespace: "", name: "node-1", key: "node-1"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := Key(tt.namespace, tt.name); got != tt.key {
				t.Errorf("Key(%q, %q) = %q, want %q", tt.namespace, tt.name, got, tt.key)
			}
			ns, name := SplitKey(tt.key)
			if ns != tt.namespace || name != tt.name {
				t.Errorf("SplitKey(%q) = %q, %q, want %q, %q", tt.key, ns, name, tt.namespace, tt.name)
			}
		})
	}
}
