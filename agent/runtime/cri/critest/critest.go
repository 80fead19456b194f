// Package critest runs real containerd for tests: inside a network
// namespace of the test's own, with images the test assembles from the
// host's static busybox, served by a registry on loopback.
package critest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/testtool"
)

// netnsEnv marks the test process re-executed in a network namespace.
const netnsEnv = "BERTH_TEST_IN_NETNS"

// netnsDir is where containerd and ip keep named network namespaces.
const netnsDir = "/run/netns"

// PodCIDR is the pods' network in tests, inside 198.18.0.0/15.
const PodCIDR = "198.18.7.0/24"

// Need skips (or, with BERTH_REQUIRE_TOOLS=1, fails) t without what a
// containerd test needs: root, containerd, runc, the CNI plugins, a static
// busybox and unshare.
func Need(t testing.TB) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("containerd tests run as root")
	}
	testtool.Need(t, "containerd")
	testtool.Need(t, "containerd-shim-runc-v2")
	testtool.Need(t, "runc")
	testtool.Need(t, "unshare")
	testtool.Need(t, "ip")
	testtool.Need(t, "iptables")
	if _, err := os.Stat(filepath.Join(cri.DefaultCNIBinDir, "bridge")); err != nil {
		if os.Getenv(testtool.RequireEnv) == "1" {
			t.Fatalf("the CNI plugins are required (%s=1): %v", testtool.RequireEnv, err)
		}
		t.Skipf("the CNI plugins are not installed (containernetworking-plugins): %v", err)
	}
	Busybox(t)
}

// Busybox is the path of a static busybox, which the test images hold.
func Busybox(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if b, err := os.ReadFile(p); err == nil && !bytes.Contains(b[:min(len(b), 4096)], []byte("ld-linux")) {
			return p
		}
	}
	if os.Getenv(testtool.RequireEnv) == "1" {
		t.Fatalf("a static busybox is required (%s=1): install busybox-static", testtool.RequireEnv)
	}
	t.Skip("no static busybox: install busybox-static")
	return ""
}

// InNetns runs the calling test again in a network namespace of its own
// (unshare -n), with only loopback up, and reports its result: it returns
// true in that re-run, where the test goes on, and false in the parent,
// which must return. The re-run has a mount namespace of its own too. Bridges, veths and pod addresses so never appear in
// the machine's own namespace.
func InNetns(t testing.TB) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == "1" {
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set lo up: %v: %s", err, out)
		}
		// The pods' network namespaces are bind mounts under /run/netns.
		// Made in this mount namespace, on a tmpfs of its own, they are
		// neither copied into nor stacked over by the namespaces that
		// other tests running at the same time make (ip netns, unshare
		// -m), which would leave them busy when containerd removes them.
		if err := os.MkdirAll(netnsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", netnsDir, "tmpfs", 0, "mode=0755"); err != nil {
			t.Fatalf("mount a tmpfs on %s: %v", netnsDir, err)
		}
		return true
	}
	args := []string{"-n", "-m", "--propagation", "private", os.Args[0], "-test.run", "^" + t.Name() + "$", "-test.v", "-test.count=1"}
	if _, ok := t.(*testing.B); ok {
		args = []string{"-n", "-m", "--propagation", "private", os.Args[0], "-test.run", "^$", "-test.bench", "^" + t.Name() + "$", "-test.benchtime", "1x", "-test.v"}
	}
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok {
			args = append(args, "-test.timeout", time.Until(d).Round(time.Second).String())
		}
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the test in a network namespace failed: %v", err)
	}
	if bytes.Contains(out, []byte("--- SKIP")) {
		t.Skip("skipped in the network namespace")
	}
	if _, bench := t.(*testing.B); !bench && !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		// A -test.run that matched nothing exits 0 having run nothing.
		t.Fatalf("the test did not run in the network namespace")
	}
	return false
}

// ImageConfig is what a test image's config says.
type ImageConfig struct {
	Entrypoint, Cmd, Env []string
	WorkingDir           string
	// Files are more executable files of the layer, by path.
	Files map[string][]byte
}

// BusyboxImage is an image of one layer: /bin/busybox, links to it for
// the common commands, /www/index.html ("hello from an image\n") and
// the config given.
func BusyboxImage(t testing.TB, cfg ImageConfig) v1.Image {
	t.Helper()
	bb, err := os.ReadFile(Busybox(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(n string) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n, Mode: 0o755})
	}
	file := func(n string, b []byte, mode int64) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: mode, Size: int64(len(b))})
		tw.Write(b)
	}
	dir("bin/")
	dir("tmp/")
	dir("www/")
	dir("etc/")
	file("bin/busybox", bb, 0o755)
	for _, l := range []string{"sh", "sleep", "httpd", "cat", "echo", "ls", "env", "pwd", "id", "wget", "nslookup", "true", "false", "kill", "ps", "hostname", "ip", "grep", "nc"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + l, Linkname: "busybox", Mode: 0o777})
	}
	file("www/index.html", []byte("hello from an image\n"), 0o644)
	for n, b := range cfg.Files {
		file(strings.TrimPrefix(n, "/"), b, 0o755)
	}
	file("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"), 0o644)
	file("etc/group", []byte("root:x:0:\nnogroup:x:65534:\n"), 0o644)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", goruntime.GOARCH
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.WorkingDir = cfg.Entrypoint, cfg.Cmd, cfg.WorkingDir
	cf.Config.Env = append([]string{"PATH=/bin"}, cfg.Env...)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// PauseImage is the sandbox image of the tests: busybox sleeping.
func PauseImage(t testing.TB) v1.Image {
	return BusyboxImage(t, ImageConfig{Entrypoint: []string{"/bin/sleep", "2147483647"}})
}

// Registry is a registry on loopback, for the test's life.
type Registry struct {
	// Host is its host:port.
	Host string
	// auth is what pushes authenticate with; nil is none.
	auth authn.Authenticator
}

// StartRegistry serves go-containerregistry's registry on 127.0.0.1.
func StartRegistry(t testing.TB) *Registry {
	return StartRegistryOn(t, "127.0.0.1")
}

// StartRegistryOn serves go-containerregistry's registry on a free port
// of ip: an address of the test's network namespace that containerds in
// other namespaces of the test reach.
func StartRegistryOn(t testing.TB, ip string) *Registry {
	return startRegistry(t, ip, registry.New(registry.Logger(log.New(io.Discard, "", 0))))
}

// StartAuthRegistry serves go-containerregistry's registry on 127.0.0.1,
// asking for user and password (HTTP basic authentication) of every
// request; Push gives them.
func StartAuthRegistry(t testing.TB, user, password string) *Registry {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r := startRegistry(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="critest"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	r.auth = &authn.Basic{Username: user, Password: password}
	return r
}

func startRegistry(t testing.TB, ip string, h http.Handler) *Registry {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &Registry{Host: l.Addr().String()}
}

// Push puts img in the registry as repo:tag and returns its reference.
func (r *Registry) Push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.Host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	auth := authn.Anonymous
	if r.auth != nil {
		auth = r.auth
	}
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref.String()
}

// HostsToml is the registry's hosts.toml for containerd: plain http.
func (r *Registry) HostsToml() string {
	return fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", r.Host, r.Host)
}

// WriteHosts writes the registry's hosts.toml under certsDir, the
// directory of containerd's config_path.
func (r *Registry) WriteHosts(t testing.TB, certsDir string) {
	t.Helper()
	d := filepath.Join(certsDir, r.Host)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(r.HostsToml()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TempDir is a short directory (unix socket paths are limited to 108
// bytes) removed at the end of the test, after containerd is stopped.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "bc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Overlay mounts of containers left behind would keep files busy.
		exec.Command("sh", "-c", "grep -o ' "+d+"[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l").Run()
		os.RemoveAll(d)
	})
	return d
}

// Containerd starts containerd under dir with the registry's hosts and the
// pods' network written, and stops it, and every container it runs, at
// the end of the test.
func Containerd(t testing.TB, ctx context.Context, dir string, reg *Registry, pause string) *cri.Containerd {
	t.Helper()
	o := cri.ContainerdOptions{Dir: filepath.Join(dir, "containerd"), PauseImage: pause}
	o.RegistryConfigDir = filepath.Join(o.Dir, "certs.d")
	reg.WriteHosts(t, o.RegistryConfigDir)
	o.CNIConfDir = filepath.Join(o.Dir, "cni", "net.d")
	if _, err := cri.WriteCNIConfig(o.CNIConfDir, PodCIDR, true); err != nil {
		t.Fatal(err)
	}
	cd, err := cri.StartContainerd(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(o.Dir, "containerd.log"))
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("containerd's log:\n%s", b)
		}
		KillAll(t, cd.Endpoint())
		cd.Stop()
	})
	return cd
}

// cleanUpTimeout bounds the removal of a test's sandboxes: a benchmark's
// hundred take more than a minute on a loaded machine, and what is not
// removed then outlives the test.
const cleanUpTimeout = 5 * time.Minute

// KillAll stops and removes every sandbox of the CRI runtime at endpoint,
// so no shim outlives the test.
func KillAll(t testing.TB, endpoint string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanUpTimeout)
	defer cancel()
	r, err := cri.New(ctx, cri.Options{Endpoint: endpoint})
	if err != nil {
		t.Logf("clean up containerd: %v", err)
		return
	}
	defer r.Close()
	if err := r.RemoveAll(ctx); err != nil {
		t.Logf("clean up containerd: %v", err)
	}
}

// Env is a containerd of the test's own with its registry.
type Env struct {
	// Dir is the test's directory, removed at its end.
	Dir        string
	Registry   *Registry
	Containerd *cri.Containerd
	// PauseImage is the sandbox image's reference.
	PauseImage string
}

// Start makes t's containerd: a directory, a registry on loopback holding
// the pause image, and containerd running from them with the pods'
// network of PodCIDR. Call it inside the network namespace (InNetns).
func Start(t testing.TB, ctx context.Context) *Env {
	t.Helper()
	e := &Env{Dir: TempDir(t), Registry: StartRegistry(t)}
	e.PauseImage = e.Registry.Push(t, "pause:test", PauseImage(t))
	e.Containerd = Containerd(t, ctx, e.Dir, e.Registry, e.PauseImage)
	return e
}

// CleanUpAfter removes, at the end of the test (after the cleanups
// registered later, such as a berth that ran containerd under dir), every
// sandbox left in the containerd of dir: it starts that containerd again
// for the purpose, so no container or shim outlives the test.
func CleanUpAfter(t testing.TB, dir string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanUpTimeout)
		defer cancel()
		if _, err := os.Stat(filepath.Join(dir, "config.toml")); err != nil {
			return // never started
		}
		cd, err := cri.StartContainerd(ctx, cri.ContainerdOptions{Dir: dir})
		if err != nil {
			t.Logf("clean up containerd: %v", err)
			return
		}
		KillAll(t, cd.Endpoint())
		cd.Stop()
	})
}

// CgroupCPU is the CPU time used so far by the cgroup v1 cpuacct group
// this process runs in (and with it containerd, its shims, runc and the
// CNI plugins it starts), when that group is not the root: benchmarks run
// in a group of their own (`echo $$ > /sys/fs/cgroup/cpuacct/G/tasks`)
// report what the runtime's processes used.
func CgroupCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[2] == "/" || !slices.Contains(strings.Split(f[1], ","), "cpuacct") {
			continue
		}
		u, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", f[2], "cpuacct.usage"))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(u)), 10, 64)
		if err != nil {
			return 0, false
		}
		return time.Duration(n), true
	}
	return 0, false
}

// ProgramImage builds the Go package pkg (a path as `go build` takes it,
// relative to the test's directory) into a static program and returns a
// BusyboxImage whose entrypoint it is, at /NAME for the package's last
// element: a server or client a test runs in a pod where busybox has
// none.
func ProgramImage(t testing.TB, ctx context.Context, pkg string) v1.Image {
	t.Helper()
	name := filepath.Base(pkg)
	bin := filepath.Join(TempDir(t), name)
	build := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return BusyboxImage(t, ImageConfig{Entrypoint: []string{"/" + name}, Files: map[string][]byte{"/" + name: prog}})
}
