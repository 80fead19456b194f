// Command wrkbench measures a small HTTP backend reached directly,
// through a ClusterIP of berth's service proxy (nftables), through
// berth's Ingress proxy and through nginx as a reverse proxy with
// upstream keep-alive, side by side in one run, with wrk as the client:
// each is its own process, as an operator would run them.
// docs/benchmarks.md records its figures:
//
//	nice -n -10 go run ./ingress/testdata/wrkbench -run
//
// It needs wrk and nginx on the PATH (Debian packages wrk and nginx).
// The backend and the Ingress proxy are this same program run again
// with -role backend and -role ingress. As root it runs everything in
// a network namespace of its own (addresses of 198.18.0.0/15), where
// berth's service proxy DNATs the ClusterIP 198.19.0.10:80 to the
// backend; otherwise on loopback, without the ClusterIP.
package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/agent/proxy"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/ingress"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

const host = "shop.test"

func main() {
	var (
		role       = flag.String("role", "", "internal: backend or ingress, the processes -run starts")
		listen     = flag.String("listen", "", "internal: the address a role serves on")
		backend    = flag.String("backend", "", "internal: the backend's address, for -role ingress")
		accessLog  = flag.String("access-log", "", "internal: the Ingress proxy's log file (empty: none)")
		cpuprofile = flag.String("cpuprofile", "", "write the Ingress proxy's CPU profile here")
		run        = flag.Bool("run", false, "run the measurement and print its table")
		rounds     = flag.Int("rounds", 3, "rounds; each round measures every target once, in turn")
		seconds    = flag.Int("d", 10, "wrk: seconds a target is measured each round")
		conns      = flag.Int("c", 16, "wrk: keep-alive connections")
		threads    = flag.Int("t", 2, "wrk: threads")
		logs       = flag.Bool("logs", true, "access logs on, to a file, for both proxies (berth's in its log format, nginx's combined)")
		only       = flag.String("only", "", "measure only these targets (comma-separated: direct,cluster,berth,nginx,before)")
		before     = flag.String("before", "", "another build of this program: its Ingress proxy is measured too, as target before (the code before a change)")
		procs      = flag.Int("ingress-procs", 0, "GOMAXPROCS of the Ingress proxy's process (0: Go's default, the CPUs)")
		netns      = flag.Bool("netns", os.Geteuid() == 0, "run in a network namespace of its own and measure a ClusterIP too (needs root)")
		inNetNS    = flag.Bool("in-netns", false, "internal: -run inside the namespace -netns made")
		pin        = flag.Bool("pin", false, "the proxies on the second CPU, wrk and the backend on the first (taskset), as with an Ingress proxy on a node of its own")
	)
	flag.Parse()
	var err error
	switch *role {
	case "backend":
		err = serveBackend(*listen)
	case "ingress":
		err = serveIngress(*listen, *backend, *accessLog, *cpuprofile)
	case "":
		if !*run {
			flag.Usage()
			os.Exit(2)
		}
		if *netns && !*inNetNS {
			err = inNamespace()
			break
		}
		err = measure(bench{rounds: *rounds, seconds: *seconds, conns: *conns, threads: *threads, logs: *logs,
			cpuprofile: *cpuprofile, only: *only, procs: *procs, before: *before, netns: *inNetNS, pin: *pin})
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrkbench:", err)
		os.Exit(1)
	}
}

// serveBackend is the small HTTP backend: 13 bytes, keep-alive.
func serveBackend(listen string) error {
	body := []byte("hello, world\n")
	srv := &http.Server{Addr: listen, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body)
	})}
	go stopOnSignal(srv.Close)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func stopOnSignal(stop func() error) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	<-c
	_ = stop()
}

// serveIngress runs berth's Ingress proxy, as the server runs it, over
// a memory store holding one Ingress, its Service and an EndpointSlice
// naming the backend.
func serveIngress(listen, backend, accessLog, cpuprofile string) error {
	logOut := io.Discard
	if accessLog != "" {
		f, err := os.Create(accessLog)
		if err != nil {
			return err
		}
		defer f.Close()
		logOut = f
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.New(store.Memory{}, store.Options{Logger: quiet})
	if err != nil {
		return err
	}
	defer st.Close()
	bhost, bport, err := net.SplitHostPort(backend)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(bport)
	if err != nil {
		return err
	}
	if err := load(st, bhost, int32(port)); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	inf := informer.NewFactory(st, nil, quiet)
	srv, err := ingress.New(ingress.Config{HTTPListen: listen, Informers: inf, Logger: log})
	if err != nil {
		return err
	}
	inf.Start(ctx)
	defer inf.Wait()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return srv.Run(ctx)
}

func load(st *store.Store, addr string, port int32) error {
	pt := networkingv1.PathTypePrefix
	class := api.IngressClassBerth
	objs := []api.Object{
		api.DefaultIngressClass(),
		&api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: api.ServiceSpec{ClusterIP: api.ClusterIPNone, Ports: []api.ServicePort{{Name: "http", Port: 80}}}},
		&api.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{api.LabelServiceName: "web"}},
			AddressType: api.AddressTypeIPv4,
			Ports:       []api.EndpointSlicePort{{Name: ptr("http"), Port: ptr(port)}},
			Endpoints:   []api.Endpoint{{Addresses: []string{addr}, Conditions: api.EndpointConditions{Ready: ptr(true)}}},
		},
		&api.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
			Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
	}
	for _, o := range objs {
		api.Default(o)
		if _, err := st.Create(context.Background(), o); err != nil {
			return fmt.Errorf("create %s: %w", o.GetName(), err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

type bench struct {
	rounds, seconds, conns, threads int
	logs                            bool
	cpuprofile, only, before        string
	procs                           int
	// netns: measure() runs in the namespace inNamespace made, and
	// measures the ClusterIP too.
	netns bool
	// pin: the proxies run on CPU 1, wrk and the backend on CPU 0.
	pin bool
}

// The CPUs of -pin.
const (
	clientCPU = "0"
	proxyCPU  = "1"
)

// command is name run on cpu when the bench pins (taskset execs it, so
// the process keeps taskset's pid).
func (b bench) command(cpu, name string, args ...string) *exec.Cmd {
	if !b.pin {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpu, name}, args...)...)
}

// The namespace's addresses: the node's (every server listens on it),
// and the ClusterIP, routed out of a veth link so that the service
// proxy's DNAT takes it.
const (
	nodeAddr    = "198.18.0.1"
	clusterIP   = "198.19.0.10"
	serviceCIDR = "198.19.0.0/16"
)

// inNamespace makes a network namespace, runs this program with its
// arguments inside it (ip netns exec), and deletes it.
func inNamespace() error {
	ns := fmt.Sprintf("wrkbench-%d", os.Getpid())
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", ns); err != nil {
		return err
	}
	defer func() { _ = ip("netns", "del", ns) }()
	for _, args := range [][]string{
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "add", "node0", "type", "veth", "peer", "name", "node1"},
		{"-n", ns, "addr", "add", nodeAddr + "/24", "dev", "node0"},
		{"-n", ns, "link", "set", "node0", "up"},
		{"-n", ns, "link", "set", "node1", "up"},
		{"-n", ns, "route", "add", serviceCIDR, "dev", "node0"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, self, "-in-netns"}, os.Args[1:]...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// serveClusterIP writes berth's service proxy rules for a Service of
// clusterIP, port 80, whose one endpoint is the backend, as an agent
// writes them: in this namespace's ip berth-proxy table.
func serveClusterIP(backend string) (cleanup func(), err error) {
	bhost, bport, err := net.SplitHostPort(backend)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(bport)
	if err != nil {
		return nil, err
	}
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ServiceSpec{ClusterIP: clusterIP, ClusterIPs: []string{clusterIP},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(int32(port))}}}}
	api.Default(svc)
	es := &api.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{api.LabelServiceName: "web"}},
		AddressType: api.AddressTypeIPv4,
		Ports:       []api.EndpointSlicePort{{Name: ptr("http"), Port: ptr(int32(port)), Protocol: ptr(api.ProtocolTCP)}},
		Endpoints:   []api.Endpoint{{Addresses: []string{bhost}, NodeName: ptr("bench"), Conditions: api.EndpointConditions{Ready: ptr(true)}}},
	}
	s := proxy.NewSyncer(-1)
	if _, err := s.Sync(proxy.Build(proxy.Input{NodeName: "bench", Services: []*api.Service{svc}, Slices: []*api.EndpointSlice{es}})); err != nil {
		return nil, err
	}
	return func() { _ = s.Cleanup() }, nil
}

// target is one address wrk measures, and the processes that serve it.
type target struct {
	name, url string
	procs     []int
	rps       []float64
	p50, p99  []time.Duration
	// cpu is the CPU time its processes (the proxy's alone, for a
	// proxy) spent per request, and backend the backend's.
	cpu, backend []time.Duration
}

func measure(b bench) error {
	for _, tool := range []string{"wrk", "nginx"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (Debian package %s)", tool, tool)
		}
	}
	dir, err := os.MkdirTemp("", "wrkbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	at := "127.0.0.1"
	if b.netns {
		at = nodeAddr
	}
	backendAddr := net.JoinHostPort(at, ports[0])
	berthAddr := net.JoinHostPort(at, ports[1])
	nginxAddr := net.JoinHostPort(at, ports[2])
	beforeAddr := net.JoinHostPort(at, ports[3])

	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	}()
	start := func(cpu string, env []string, name string, args ...string) (int, error) {
		cmd := b.command(cpu, name, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			return 0, fmt.Errorf("start %s: %w", name, err)
		}
		procs = append(procs, cmd)
		return cmd.Process.Pid, nil
	}
	backendPid, err := start(clientCPU, nil, self, "-role", "backend", "-listen", backendAddr)
	if err != nil {
		return err
	}
	ingressArgs := []string{"-role", "ingress", "-listen", berthAddr, "-backend", backendAddr, "-cpuprofile", b.cpuprofile}
	nginxLog := "off"
	if b.logs {
		ingressArgs = append(ingressArgs, "-access-log", filepath.Join(dir, "berth.log"))
		nginxLog = filepath.Join(dir, "nginx-access.log")
	}
	var env []string
	if b.procs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(b.procs))
	}
	berthPid, err := start(proxyCPU, env, self, ingressArgs...)
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConf(dir, nginxAddr, backendAddr, nginxLog, b.conns)), 0o644); err != nil {
		return err
	}
	nginxPid, err := start(proxyCPU, nil, "nginx", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "nginx-error.log"))
	if err != nil {
		return err
	}
	targets := []*target{{name: "direct", url: "http://" + backendAddr + "/", procs: []int{backendPid}}}
	if b.netns {
		cleanup, err := serveClusterIP(backendAddr)
		if err != nil {
			return fmt.Errorf("service proxy: %w", err)
		}
		defer cleanup()
		// The kernel DNATs it: no process of its own, CPU/req 0.
		targets = append(targets, &target{name: "cluster", url: "http://" + clusterIP + ":80/"})
	}
	targets = append(targets,
		&target{name: "berth", url: "http://" + berthAddr + "/", procs: []int{berthPid}},
		&target{name: "nginx", url: "http://" + nginxAddr + "/", procs: []int{nginxPid}})
	if b.before != "" {
		args := []string{"-role", "ingress", "-listen", beforeAddr, "-backend", backendAddr}
		if b.logs {
			args = append(args, "-access-log", filepath.Join(dir, "before.log"))
		}
		pid, err := start(proxyCPU, env, b.before, args...)
		if err != nil {
			return err
		}
		targets = append(targets, &target{name: "before", url: "http://" + beforeAddr + "/", procs: []int{pid}})
	}
	if b.only != "" {
		var keep []*target
		for _, t := range targets {
			if strings.Contains(","+b.only+",", ","+t.name+",") {
				keep = append(keep, t)
			}
		}
		targets = keep
	}
	for _, t := range targets {
		if err := waitOK(t.url); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	fmt.Printf("wrk -t%d -c%d -d%ds --latency -H 'Host: %s', %d rounds; load average at start: %s\n",
		b.threads, b.conns, b.seconds, host, b.rounds, loadavg())
	if b.pin {
		fmt.Printf("pinned: wrk and the backend on CPU %s, the proxies on CPU %s\n", clientCPU, proxyCPU)
	}
	for r := range b.rounds {
		for _, t := range targets {
			cpu0, back0 := cpuTime(t.procs), cpuTime([]int{backendPid})
			rps, p50, p99, err := runWrk(b, t.url)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			n := rps * float64(b.seconds)
			cpu := time.Duration(float64(cpuTime(t.procs)-cpu0) / n)
			back := time.Duration(float64(cpuTime([]int{backendPid})-back0) / n)
			t.rps, t.p50, t.p99 = append(t.rps, rps), append(t.p50, p50), append(t.p99, p99)
			t.cpu, t.backend = append(t.cpu, cpu), append(t.backend, back)
			fmt.Printf("round %d %-7s %9.0f req/s  p50 %-9v p99 %-9v CPU/req %-8v backend CPU/req %-8v load %s\n",
				r+1, t.name, rps, p50, p99, cpu.Round(100*time.Nanosecond), back.Round(100*time.Nanosecond), loadavg())
		}
	}
	fmt.Printf("\n%-7s %-14s %-16s %-16s %-14s %-14s %s\n", "target", "req/s", "p50", "p99", "CPU/req", "backend/req", "of direct, per round")
	for _, t := range targets {
		var ratio []string
		if targets[0].name == "direct" {
			for i := range t.rps {
				ratio = append(ratio, fmt.Sprintf("%.0f%%", 100*t.rps[i]/targets[0].rps[i]))
			}
		}
		us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + "µs" }
		fmt.Printf("%-7s %-14s %-16s %-16s %-14s %-14s %s\n", t.name, span(t.rps, func(v float64) string { return fmt.Sprintf("%.0f", v) }),
			span(t.p50, fmtDur), span(t.p99, fmtDur), span(t.cpu, us), span(t.backend, us), strings.Join(ratio, " "))
	}
	fmt.Printf("load average at the end: %s\n", loadavg())
	return nil
}

// nginxConf is nginx as a reverse proxy in front of the backend, with
// upstream keep-alive, as ingress-nginx configures it (HTTP/1.1 to the
// backend, the Connection header cleared, the Host kept).
func nginxConf(dir, listen, backend, accessLog string, conns int) string {
	return fmt.Sprintf(`daemon off;
master_process on;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log %[4]s;
  client_body_temp_path %[1]s/client_body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  keepalive_requests 100000;
  upstream backend {
    server %[3]s;
    keepalive %[5]d;
    keepalive_requests 100000;
  }
  server {
    listen %[2]s;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`, dir, listen, backend, accessLog, conns)
}

var (
	rpsRe = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	pctRe = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	errRe = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)|Socket errors: .*`)
)

func runWrk(b bench, url string) (rps float64, p50, p99 time.Duration, err error) {
	out, err := b.command(clientCPU, "wrk", "-t"+strconv.Itoa(b.threads), "-c"+strconv.Itoa(b.conns), "-d"+strconv.Itoa(b.seconds)+"s",
		"--latency", "-H", "Host: "+host, url).CombinedOutput()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	if m := errRe.FindString(string(out)); m != "" {
		return 0, 0, 0, fmt.Errorf("wrk: %s", m)
	}
	m := rpsRe.FindSubmatch(out)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("wrk: no Requests/sec in %s", out)
	}
	rps, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, p := range pctRe.FindAllSubmatch(out, -1) {
		d, _ := time.ParseDuration(string(p[2]) + strings.Replace(string(p[3]), "us", "µs", 1))
		if string(p[1]) == "50" {
			p50 = d
		} else {
			p99 = d
		}
	}
	return rps, p50, p99, nil
}

func waitOK(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering 200: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePorts(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return out, nil
}

// cpuTime is the user and system CPU time of processes and their
// children (nginx's workers), from /proc.
func cpuTime(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 13 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		var more []int
		for _, k := range strings.Fields(string(kids)) {
			if n, err := strconv.Atoi(k); err == nil {
				more = append(more, n)
			}
		}
		ticks += int64(cpuTime(more) / (10 * time.Millisecond))
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond
}

func loadavg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return "?"
	}
	fields := strings.Fields(s.Text())
	if len(fields) < 3 {
		return "?"
	}
	return strings.Join(fields[:3], " ")
}

func span[T cmp.Ordered](vs []T, f func(T) string) string {
	if len(vs) == 0 {
		return "-"
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo == hi {
		return f(lo)
	}
	return f(lo) + "–" + f(hi)
}

func fmtDur(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}
