package source

import (
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParse checks that Parse never panics and that what it accepts is
// whole: a valid name, a known type, a positive interval, a clean path.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"./deploy", "name=web,./deploy", "name=web,interval=5s,/srv/x",
		"git+https://github.com/org/fleet.git?ref=main&path=clusters/prod&interval=30s&name=prod",
		"git+ssh://git@host:2222/fleet.git?ssh-key-file=/k&known-hosts-file=/kh",
		"git+file:///srv/git/fleet.git?ref=0123456789abcdef0123456789abcdef01234567",
		"https://example.com/x.yaml?token=a&interval=1m", "http://[::1]:80/x", "git+https://h/%zz", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s, err := Parse(value)
		if err != nil {
			return
		}
		if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
			t.Errorf("Parse(%q) gave the invalid name %q: %v", value, s.Name, errs)
		}
		switch s.Type {
		case TypeGit, TypeDir, TypeHTTP:
		default:
			t.Errorf("Parse(%q) gave the type %q", value, s.Type)
		}
		if s.Interval <= 0 {
			t.Errorf("Parse(%q) gave the interval %v", value, s.Interval)
		}
		if s.URL == "" {
			t.Errorf("Parse(%q) gave no URL", value)
		}
		if s.Path != "" && (path.Clean(s.Path) != s.Path || strings.HasPrefix(s.Path, "/") || strings.HasPrefix(s.Path, "..")) {
			t.Errorf("Parse(%q) gave the unclean path %q", value, s.Path)
		}
	})
}
