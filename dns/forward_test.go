package dns

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestNewForwarder(t *testing.T) {
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("search example.com\nnameserver 10.0.0.53\nnameserver fd00::53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, []byte("search example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		upstream, resolvConf string
		want                 []string // nil: no forwarder
		wantErr              bool
	}{
		{upstream: "none"},
		{upstream: "1.1.1.1", want: []string{"1.1.1.1:53"}},
		{upstream: "1.1.1.1:5353, 8.8.8.8", want: []string{"1.1.1.1:5353", "8.8.8.8:53"}},
		{upstream: "::1", want: []string{"[::1]:53"}},
		{upstream: "[::1]:5353", want: []string{"[::1]:5353"}},
		{upstream: "dns.example:53", want: []string{"dns.example:53"}},
		{resolvConf: resolv, want: []string{"10.0.0.53:53", "[fd00::53]:53"}},
		{resolvConf: empty, wantErr: true},
		{resolvConf: filepath.Join(dir, "missing"), wantErr: true},
		{upstream: "1.1.1.1,,2.2.2.2", wantErr: true},
		{upstream: ":53", wantErr: true},
	}
	for _, tt := range tests {
		f, err := NewForwarder(tt.upstream, tt.resolvConf, 0)
		if (err != nil) != tt.wantErr {
			t.Errorf("NewForwarder(%q, %q): error %v, want error %v", tt.upstream, tt.resolvConf, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if tt.want == nil {
			if f != nil {
				t.Errorf("NewForwarder(%q): %v, want none", tt.upstream, f.Servers())
			}
			continue
		}
		if got := f.Servers(); !slices.Equal(got, tt.want) {
			t.Errorf("NewForwarder(%q, %q) = %v, want %v", tt.upstream, tt.resolvConf, got, tt.want)
		}
	}
}
