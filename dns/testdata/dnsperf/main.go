// Command dnsperf loads 1,000 services × 10 endpoints into a real store,
// serves them with berth's DNS server, writes a dnsperf query file of 70%
// A, 20% SRV and 10% NXDOMAIN questions, and prints (or runs) the dnsperf
// command that measures it. docs/benchmarks.md records its figures:
//
//	go run ./dns/testdata/dnsperf -run
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/dns"
	"github.com/berth-dev/berth/store"
)

func main() {
	var (
		listen     = flag.String("listen", "127.0.0.1:10053", "DNS address")
		services   = flag.Int("services", 1000, "services")
		endpoints  = flag.Int("endpoints", 10, "ready endpoints per service")
		namespaces = flag.Int("namespaces", 10, "namespaces the services are spread over")
		queries    = flag.String("queries", os.TempDir()+"/berth-dnsperf-queries.txt", "dnsperf query file to write")
		cpuprofile = flag.String("cpuprofile", "", "write the server's CPU profile here")
		readers    = flag.Int("readers", 0, "UDP reader sockets (0: GOMAXPROCS)")
		run        = flag.Bool("run", false, "run dnsperf, print its report, and exit")
		seconds    = flag.Int("l", 30, "dnsperf: seconds to run")
		clients    = flag.Int("c", 4, "dnsperf: clients (sockets)")
		outstand   = flag.Int("q", 200, "dnsperf: queries outstanding")
		rate       = flag.Int("Q", 0, "dnsperf: queries per second; with -run, also report latency percentiles (dnsperf -v)")
		bufKB      = flag.Int("b", 4096, "dnsperf: socket buffer size, KB, so that the client drops no answers")
		baseline   = flag.Bool("baseline", false, "serve the same records from a plain map with a bare miekg/dns server instead, for comparison")
	)
	flag.Parse()
	var err error
	if *baseline {
		err = serveBaseline(*listen, *services, *endpoints, *namespaces, *queries, *run, perf{*seconds, *clients, *outstand, *rate, *bufKB})
	} else {
		err = serve(*listen, *services, *endpoints, *namespaces, *queries, *cpuprofile, *readers, *run, perf{*seconds, *clients, *outstand, *rate, *bufKB})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dnsperf:", err)
		os.Exit(1)
	}
}

// perf is how dnsperf is to be run.
type perf struct {
	seconds, clients, outstanding, rate, bufKB int
}

func serve(listen string, services, endpoints, namespaces int, queries, cpuprofile string, readers int, run bool, p perf) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.New(store.Memory{}, store.Options{Logger: log})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := load(st, services, endpoints, namespaces); err != nil {
		return err
	}
	if err := writeQueries(queries, services, namespaces); err != nil {
		return err
	}

	heapBefore := heap()
	srv, err := dns.New(st, dns.Options{Listen: listen, Upstream: dns.UpstreamNone, UDPReaders: readers, Logger: log})
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	for !srv.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	records := srv.Table().Records()
	perRecord := float64(heap()-heapBefore) / float64(records)
	fmt.Printf("server on %s: %d services × %d endpoints, %d records, %.0f bytes of heap per record\n",
		srv.Addr(), services, endpoints, records, perRecord)

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
	err = dnsperf(ctx, srv.Addr(), queries, run, p)
	cancel()
	if rerr := <-done; err == nil {
		err = rerr
	}
	return err
}

// dnsperf prints the dnsperf command for a server and, with run, runs it;
// without, it waits for ctx. With a rate it asks dnsperf for every
// query's latency (-v) and prints percentiles.
func dnsperf(ctx context.Context, addr, queries string, run bool, p perf) error {
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-s", host, "-p", port, "-d", queries, "-l", strconv.Itoa(p.seconds),
		"-c", strconv.Itoa(p.clients), "-q", strconv.Itoa(p.outstanding), "-b", strconv.Itoa(p.bufKB), "-e"}
	if p.rate > 0 {
		args = append(args, "-Q", strconv.Itoa(p.rate))
	}
	fmt.Printf("dnsperf %s\n", strings.Join(args, " "))
	if !run {
		fmt.Println("serving until interrupted")
		<-ctx.Done()
		return nil
	}
	if p.rate > 0 {
		args = append(args, "-v")
	}
	cmd := exec.CommandContext(ctx, "dnsperf", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var latencies []float64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "> ") {
			fmt.Println(line)
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			latencies = append(latencies, v)
		}
	}
	if err := cmd.Wait(); err != nil {
		return err
	}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		q := func(p float64) string {
			return fmt.Sprintf("%.3f ms", latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]*1000)
		}
		fmt.Printf("  Latency percentiles:  p50 %s, p90 %s, p99 %s, p99.9 %s, max %s (%d answers)\n",
			q(0.5), q(0.9), q(0.99), q(0.999), q(1), len(latencies))
	}
	return nil
}

// load writes the services and their Endpoints, 100 services a transaction.
func load(st *store.Store, services, endpoints, namespaces int) error {
	ctx := context.Background()
	for lo := 0; lo < services; lo += 100 {
		_, err := st.Txn(ctx, func(tx *store.Txn) error {
			for i := lo; i < min(lo+100, services); i++ {
				ns, name := fmt.Sprintf("ns-%d", i%namespaces), fmt.Sprintf("svc-%d", i)
				svc := &api.Service{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: api.ServiceSpec{
						Selector: map[string]string{"app": name},
						Ports:    []api.ServicePort{{Name: "http", Port: 80, Protocol: api.ProtocolTCP}},
					},
				}
				ep := &api.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				ss := api.EndpointSubset{Ports: []api.EndpointPort{{Name: "http", Port: 8080, Protocol: api.ProtocolTCP}}}
				for j := range endpoints {
					n := i*endpoints + j + 1
					node := fmt.Sprintf("node-%d", n%50)
					ss.Addresses = append(ss.Addresses, api.EndpointAddress{
						IP:        fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255),
						Hostname:  fmt.Sprintf("%s-%05d", name, j),
						NodeName:  &node,
						TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("%s-%05d", name, j)},
					})
				}
				ep.Subsets = []api.EndpointSubset{ss}
				if _, err := tx.Create(svc); err != nil {
					return err
				}
				if _, err := tx.Create(ep); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeQueries writes 10,000 questions in a fixed random order: 70% A of
// a service, 20% SRV of its port, 10% A of a service that does not exist.
func writeQueries(path string, services, namespaces int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		i := rng.IntN(services)
		name := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%namespaces)
		switch p := rng.IntN(100); {
		case p < 70:
			fmt.Fprintf(w, "%s A\n", name)
		case p < 90:
			fmt.Fprintf(w, "_http._tcp.%s SRV\n", name)
		default:
			fmt.Fprintf(w, "missing-%d.ns-%d.svc.cluster.local A\n", i, i%namespaces)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func heap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
