package ui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
)

// BenchmarkDashboardInChromium loads the dashboard in a headless Chromium
// from a control plane holding 10,000 objects: a source "big" of 9,000
// ConfigMaps and a source "hello" whose Deployment keeps 1,000 pods. It
// reports each page's load time (navigation start to the load event) and
// its bytes (HTML, script and style sheet), then the server's CPU and heap
// while one overview stays open and idle for -restfor (default 20s).
//
//	go test -run XXX -bench DashboardInChromium -benchtime 3x ./ui/
func BenchmarkDashboardInChromium(b *testing.B) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		b.Skip("chromium not found")
	}
	dir := b.TempDir()
	var big strings.Builder
	for i := range 9000 {
		fmt.Fprintf(&big, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n  namespace: default\ndata:\n  k: v%d\n", i, i)
	}
	mustWrite(b, filepath.Join(dir, "big", "cms.yaml"), big.String())
	mustWrite(b, filepath.Join(dir, "hello", "deploy.yaml"), `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: default
spec:
  replicas: 1000
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
      - name: web
        image: berth-toolbox
`)
	var specs []source.Spec
	for _, n := range []string{"big", "hello"} {
		spec, err := source.Parse("name=" + n + "," + filepath.Join(dir, n))
		if err != nil {
			b.Fatal(err)
		}
		specs = append(specs, spec)
	}
	cp := cptest.Start(b, controlplane.Config{Sources: specs})
	admin, err := client.New(&client.Config{Server: cp.LocalURL(), Token: cp.Credentials().AdminToken, CAData: cp.Credentials().CAPEM})
	if err != nil {
		b.Fatal(err)
	}
	testtool.WaitFor(b, 120*time.Second, "1,000 pods and 9,000 ConfigMaps", func() error {
		pods, _, err := admin.List(context.Background(), api.KindOf(&api.Pod{}), "", client.ListOptions{})
		if err != nil {
			return err
		}
		cms, _, err := admin.List(context.Background(), api.KindOf(&api.ConfigMap{}), "default", client.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods) < 1000 || len(cms) < 9000 {
			return fmt.Errorf("%d pods, %d ConfigMaps", len(pods), len(cms))
		}
		return nil
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.WindowSize(1280, 900), chromedp.UserDataDir(b.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(cp.LocalURL()+"/ui/login"),
		chromedp.SendKeys(chromedp.ID("token"), cp.Credentials().AdminToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-source="hello"]`)),
	); err != nil {
		b.Fatal(err)
	}
	for _, page := range []struct{ name, path, ready string }{
		{"overview", "/ui/", `tr[data-source="big"]`},
		{"source-1000-pods", "/ui/sources/hello", `li.node[data-kind="Pod"]`},
		{"source-9000-configmaps", "/ui/sources/big", `li.node[data-kind="ConfigMap"]`},
		{"nodes", "/ui/nodes", `h1`},
	} {
		b.Run(page.name, func(b *testing.B) {
			var ms, bytes, server float64
			for b.Loop() {
				if err := chromedp.Do(ctx, chromedp.Navigate(cp.LocalURL()+page.path), chromedp.WaitVisible(chromedp.CSS(page.ready))); err != nil {
					b.Fatal(err)
				}
				m, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
					const n = performance.getEntriesByType('navigation')[0];
					let bytes = n.encodedBodySize;
					for (const r of performance.getEntriesByType('resource')) bytes += r.encodedBodySize;
					return [n.loadEventEnd - n.startTime, bytes, n.responseStart - n.requestStart];
				})()`))
				if err != nil {
					b.Fatal(err)
				}
				ms += m[0]
				bytes = m[1]
				server += m[2]
			}
			b.ReportMetric(ms/float64(b.N), "ms/load")
			b.ReportMetric(bytes, "bytes/load")
			b.ReportMetric(server/float64(b.N), "serverMs/load")
		})
	}

	// One overview open and idle: what it costs the server.
	rest := 20 * time.Second
	if v := os.Getenv("BERTH_UI_REST"); v != "" {
		if rest, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("at-rest", func(b *testing.B) {
		if err := chromedp.Do(ctx, chromedp.Navigate(cp.LocalURL()+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-source="big"]`))); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0 := cpuTime()
		for b.Loop() {
			time.Sleep(rest) // the figure is the cost of time passing with the page open
		}
		cpu := cpuTime() - cpu0
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(100*cpu.Seconds()/(rest.Seconds()*float64(b.N)), "%cpu")
		b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "heapMiB")
		watches := 0.0
		for k, v := range testtool.Scrape(b, cp.API().Handler()) {
			if strings.HasPrefix(k, "berth_apiserver_watches{") {
				watches += v
			}
		}
		b.ReportMetric(watches, "apiWatches")
		b.ReportMetric(float64(cp.UI().Sessions()), "sessions")
	})
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mustWrite(b *testing.B, path, content string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}
