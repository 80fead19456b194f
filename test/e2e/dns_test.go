package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

func TestClusterDNSWithDig(t *testing.T) {
	digPath := testtool.Need(t, "dig")
	s := startServer(t)
	dig := func(args ...string) string {
		t.Helper()
		all := append([]string{"@127.0.0.1", "-p", fmt.Sprint(s.dnsPort), "+time=2", "+tries=1"}, args...)
		out, err := exec.Command(digPath, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := dig("dns-version.cluster.local", "TXT", "+short"); strings.TrimSpace(out) != `"1.1.0"` {
		t.Fatalf("dns-version: %q", out)
	}
	if out := dig("nothing.default.svc.cluster.local", "A"); !strings.Contains(out, "status: NXDOMAIN") || !strings.Contains(out, "SOA") {
		t.Fatalf("a missing service is not NXDOMAIN with an SOA:\n%s", out)
	}
	if out := dig("example.org", "A"); !strings.Contains(out, "status: REFUSED") {
		t.Fatalf("a name outside the zone with --dns-upstream none:\n%s", out)
	}
	s.mustBerth(t, "apply", "-f", "testdata/external-service.yaml")
	waitFor(t, 5*time.Second, "the ExternalName service in DNS", func() error {
		out := dig("search.default.svc.cluster.local", "CNAME", "+short")
		if strings.TrimSpace(out) != "search.example.com." {
			return fmt.Errorf("dig answered %q", out)
		}
		return nil
	})
	if out := dig("SEARCH.Default.svc.cluster.local", "CNAME", "+short", "+tcp"); strings.TrimSpace(out) != "search.example.com." {
		t.Fatalf("case-insensitive lookup over TCP: %q", out)
	}
}
