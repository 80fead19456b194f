package testtool

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePort is a TCP port of ip that nothing listens on now, for a server
// a test starts later (a child process, or one that writes its address
// down before it binds). It is picked below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), where a port asked of the kernel with
// :0 comes from: the source port of a connection another test opens
// meanwhile, or another test's :0 listener, never takes it between the
// pick and the bind.
func FreePort(t testing.TB, ip string) int {
	t.Helper()
	low := ephemeralLow()
	const span = 10000
	base := max(low-span, 1024)
	for range 100 {
		p := base + rand.IntN(low-base)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatalf("no free port of %s in %d-%d", ip, base, low-1)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range, Linux's
// default 32768 where it cannot be read.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(strings.TrimSpace(string(data)), &low, &high); err != nil || low <= 2048 {
		return 32768
	}
	return low
}
