package git

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
)

// manifest is the i-th of a big repository's manifests: Deployments,
// Services and ConfigMaps in turn, spread over 100 folders.
func manifest(i int, version string) (string, string) {
	ns := fmt.Sprintf("team-%02d", i%100)
	name := fmt.Sprintf("app-%05d", i)
	dir := "apps/" + ns + "/"
	switch i % 3 {
	case 0:
		return dir + name + "-deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  labels:
    app: ` + name + `
spec:
  replicas: 2
  selector:
    matchLabels:
      app: ` + name + `
  template:
    metadata:
      labels:
        app: ` + name + `
    spec:
      containers:
      - name: web
        image: registry.example.com/` + name + `:` + version + `
        args: ["--port=$(PORT)"]
        env:
        - name: PORT
          value: "8080"
        ports:
        - containerPort: 8080
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
          limits:
            memory: 128Mi
        readinessProbe:
          httpGet:
            path: /healthz
            port: 8080
`
	case 1:
		return dir + name + "-svc.yaml", `apiVersion: v1
kind: Service
metadata:
  name: ` + name + `
  namespace: ` + ns + `
spec:
  selector:
    app: ` + name + `
  ports:
  - name: http
    port: 80
    targetPort: 8080
`
	}
	return dir + name + "-config.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: ` + ns + `
data:
  version: "` + version + `"
  settings.json: '{"level": "info", "replicas": 2}'
`
}

// fastImport commits files to the bare repository's main branch with
// `git fast-import`, far faster than a work tree for thousands of files.
func fastImport(tb testing.TB, gitBin, bare string, files map[string]string, first bool) {
	tb.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "commit refs/heads/main\ncommitter Test <test@example.com> %d +0000\ndata 6\nchange\n", time.Now().Unix())
	if !first {
		b.WriteString("from refs/heads/main^0\n")
	}
	for name, data := range files {
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", name, len(data), data)
	}
	cmd := exec.Command(gitBin, "fast-import", "--quiet")
	cmd.Dir = bare
	cmd.Stdin = &b
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git fast-import: %v\n%s", err, out)
	}
}

const bigRepoSize = 10_000

// bigRepo makes a bare repository of bigRepoSize manifests.
func bigRepo(tb testing.TB) (gitBin, bare string) {
	tb.Helper()
	gitBin = testtool.Need(tb, "git")
	bare = filepath.Join(tb.TempDir(), "big.git")
	cmd := exec.Command(gitBin, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git init: %v\n%s", err, out)
	}
	files := make(map[string]string, bigRepoSize)
	for i := range bigRepoSize {
		name, data := manifest(i, "v1")
		files[name] = data
	}
	fastImport(tb, gitBin, bare, files, true)
	return gitBin, bare
}

// newBigSource makes a Git source of the big repository and syncs its
// cache once.
func newBigSource(tb testing.TB, bare string) *Git {
	tb.Helper()
	spec, err := source.Parse("git+file://" + bare)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := New(spec, Options{CacheDir: filepath.Join(tb.TempDir(), "cache")})
	if err != nil {
		tb.Fatal(err)
	}
	if g.cache, err = openCache(g.opts.CacheDir); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.cache.close)
	return g
}

func (g *Git) mustSync(tb testing.TB) plumbing.Hash {
	tb.Helper()
	commit, err := g.sync(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return commit
}

// BenchmarkReadRevision10k reads and decodes a whole revision of 10,000
// manifests from the cache (the fetch is done before), as the first sync
// after a start does.
func BenchmarkReadRevision10k(b *testing.B) {
	_, bare := bigRepo(b)
	g := newBigSource(b, bare)
	commit := g.mustSync(b)
	b.ReportAllocs()
	var peak uint64
	cpu := cpuTime()
	for b.Loop() {
		g.decoder = source.Decoder{} // as after a start: nothing decoded yet
		p := peakHeap(func() {
			rev := g.read(commit, "")
			if !rev.OK() || len(rev.Objects) != bigRepoSize || rev.ID != commit.String() {
				b.Fatalf("revision %s: %d objects, %v %v", rev.ID, len(rev.Objects), rev.Errors, rev.Err)
			}
		})
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkReadOnlyTree10k is the tree read alone, without decoding.
func BenchmarkReadOnlyTree10k(b *testing.B) {
	_, bare := bigRepo(b)
	g := newBigSource(b, bare)
	commit := g.mustSync(b)
	b.ReportAllocs()
	for b.Loop() {
		c, err := readTree(g.cache.st, commit, "", nil)
		if err != nil || len(c.Files) != bigRepoSize {
			b.Fatal(len(c.Files), err)
		}
	}
}

// BenchmarkCommitOneObject10k times, for a commit that changes one of
// 10,000 manifests, what follows the fetch: reading the commit and
// decoding the revision the source sends.
func BenchmarkCommitOneObject10k(b *testing.B) {
	gitBin, bare := bigRepo(b)
	g := newBigSource(b, bare)
	g.mustSync(b)
	g.read(g.mustSync(b), "") // the revision before the commit
	b.ReportAllocs()
	var fetch, cpu time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		name, data := manifest(i%bigRepoSize, fmt.Sprintf("v%d", i+1))
		fastImport(b, gitBin, bare, map[string]string{name: data}, false)
		start := time.Now()
		commit := g.mustSync(b) // the listing and the fetch
		fetch += time.Since(start)
		b.StartTimer()
		c := cpuTime()
		rev := g.read(commit, "")
		cpu += cpuTime() - c
		if !rev.OK() || rev.ID != commit.String() || len(rev.Objects) != bigRepoSize {
			b.Fatalf("revision %s: %d objects %v %v", rev.ID, len(rev.Objects), rev.Errors, rev.Err)
		}
	}
	b.ReportMetric(float64(fetch.Milliseconds())/float64(b.N), "fetch-ms/op")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used, on every thread: the
// machine is shared, so wall time alone says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakHeap runs f and returns the most heap it held above what was held
// before, sampled every half millisecond.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	peak = max(peak, read())
	return peak - min(base, peak)
}
