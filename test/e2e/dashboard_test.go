package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// ScreenshotsEnv names a directory to keep the dashboard test's
// screenshots in; without it they go to the test's temporary directory,
// removed when the test ends.
const ScreenshotsEnv = "BERTH_UI_SCREENSHOTS"

// TestDashboardInABrowser drives the dashboard in a real headless
// Chromium as a user would: log in, see the hello Source Ready at its
// commit, open its tree down to the Deployment's pod Running, see a
// change made outside the source reverted and marked, watch the
// Source turn not Ready with the broken file and field shown without a
// reload, press Sync, suspend and resume the Source, follow the pod's
// logs, log out. Each step leaves a screenshot.
func TestDashboardInABrowser(t *testing.T) {
	chromium := testtool.Need(t, "chromium")
	r := testtool.NewGitRepo(t, "fleet")
	hello, err := os.ReadFile("testdata/hello/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// One replica: the exec runtime's pods listen on the node's address.
	r.Write("hello/hello.yaml", strings.Replace(string(hello), "replicas: 2", "replicas: 1", 1))
	first := r.Push("main", "hello")
	s := startServer(t, "--source", "git+file://"+r.Bare+"?name=hello&interval=2s",
		"--agent=true", "--node-name", "n1", "--node-ip", "127.0.0.11",
		"--agent-listen", fmt.Sprintf("127.0.0.11:%d", freePort(t, "127.0.0.11")),
		"--node-status-update-frequency", "1s")
	t.Cleanup(func() { reapContainers(t, filepath.Join(s.dataDir, "agent")) })
	admin := s.client(t)

	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t, chromium, shots)

	// 1. Log in, land on the overview: hello Ready at the pushed commit,
	// with its subject.
	b.run(t, "open the dashboard", chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.shot(t, "1-login")
	token := adminToken(t, s)
	b.run(t, "log in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-source="hello"]`)))
	b.waitJS(t, 60*time.Second, "hello Ready at "+first[:12],
		`(() => { const r = document.querySelector('tr[data-source="hello"]');
		  return !!r && r.querySelector('.ready').textContent === 'True' && r.querySelector('code.rev').textContent === '`+first[:12]+`' &&
		    r.querySelector('.commit').textContent === 'hello'; })()`)
	b.shot(t, "2-overview")

	// 2. Its tree: Deployment → ReplicaSet → Pod, the pod Running.
	b.run(t, "open the source", chromedp.Click(chromedp.CSS(`tr[data-source="hello"] a`)), chromedp.WaitVisible(chromedp.ID("sync")))
	b.waitJS(t, 90*time.Second, "the Deployment's pod Running",
		`(() => { const p = document.querySelector('li.node[data-kind="Deployment"] li.node[data-kind="ReplicaSet"] li.node[data-kind="Pod"]');
		  return !!p && p.querySelector('.msg') !== null && p.querySelector('.msg').textContent === 'Running'; })()`)
	b.shot(t, "3-tree")

	// Drift: the Deployment scaled outside the source is reverted, and
	// the tree marks it without a reload; its page diffs it live
	// against the source, in sync again.
	if _, err := admin.Patch(context.Background(), api.KindOf(&api.Deployment{}), "default", "hello", []byte(`{"spec":{"replicas":3}}`)); err != nil {
		t.Fatal(err)
	}
	b.waitJS(t, 60*time.Second, "the Deployment marked drift reverted, with a link to its diff",
		`(() => { const d = document.querySelector('li.node[data-kind="Deployment"] > .drift'); const a = document.querySelector('li.node[data-kind="Deployment"] > a.diff');
		  return !!d && d.title.includes('spec.replicas') && !!a && a.getAttribute('href') === '/ui/objects/deployments/default/hello#diff'; })()`)
	b.shot(t, "3b-drift")
	// Navigated, not clicked: the live page may swap the link meanwhile.
	b.run(t, "open the Deployment's diff", chromedp.Navigate(s.url+"/ui/objects/deployments/default/hello#diff"), chromedp.WaitVisible(chromedp.ID("diff")))
	b.waitJS(t, 30*time.Second, "the Deployment in sync with the source", `!!document.getElementById('in-sync')`)
	b.shot(t, "3c-diff")
	b.run(t, "back to the source", chromedp.Navigate(s.url+"/ui/sources/hello"), chromedp.WaitVisible(chromedp.ID("sync")))

	// 3. A broken manifest in git: the page turns not Ready by itself,
	// naming the file and the field.
	b.run(t, "mark the page", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(window.berthNoReload = true)`)(ctx, tg)
		return err
	}))
	r.Write("hello/broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata: [1, 2]\n")
	r.Push("main", "a broken manifest")
	b.waitJS(t, 60*time.Second, "the source not Ready, naming hello/broken.yaml and data",
		`(() => { const r = document.querySelector('.ready'); const m = document.querySelector('pre.condition');
		  return !!r && r.textContent === 'False' && !!m && m.textContent.includes('hello/broken.yaml') && m.textContent.includes('data'); })()`)
	if !b.eval(t, `window.berthNoReload === true`) {
		t.Fatal("the page was reloaded to show the change; it should update in place")
	}
	b.shot(t, "4-not-ready")

	// 4. Sync now: the request reaches the Source and is answered.
	b.run(t, "press Sync", chromedp.Click(chromedp.ID("sync")))
	b.waitJS(t, 30*time.Second, "the source's page after the sync", `location.search.includes('synced=') && document.readyState === 'complete' && !!document.getElementById('sync')`)
	waitFor(t, 30*time.Second, "the sync the button asked for", func() error {
		obj, err := admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello")
		if err != nil {
			return err
		}
		src := obj.(*api.Source)
		at := src.Annotations[api.AnnotationReconcileRequestedAt]
		if at == "" || src.Status.LastHandledReconcileAt != at {
			return fmt.Errorf("requested %q, handled %q", at, src.Status.LastHandledReconcileAt)
		}
		return nil
	})
	b.shot(t, "5-synced")

	// 5. Suspend: spec.suspend is set, the page offers Resume and says
	// Suspended; Resume clears it and Sync is back.
	b.run(t, "press Suspend", chromedp.Click(chromedp.ID("suspend")), chromedp.WaitVisible(chromedp.ID("resume")), chromedp.WaitVisible(chromedp.ID("suspended")))
	waitFor(t, 60*time.Second, "the source Suspended", func() error {
		obj, err := admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello")
		if err != nil {
			return err
		}
		src := obj.(*api.Source)
		for _, c := range src.Status.Conditions {
			if c.Type == api.SourceReady && c.Reason == api.ReasonSuspended && src.Spec.Suspend {
				return nil
			}
		}
		return fmt.Errorf("suspend %t, conditions %+v", src.Spec.Suspend, src.Status.Conditions)
	})
	b.waitJS(t, 60*time.Second, "the page saying Suspended", `document.body.innerText.includes('Suspended (spec.suspend)')`)
	b.shot(t, "6-suspended")
	b.run(t, "press Resume", chromedp.Click(chromedp.ID("resume")), chromedp.WaitVisible(chromedp.ID("sync")))
	if obj, err := admin.Get(context.Background(), api.KindOf(&api.Source{}), "", "hello"); err != nil || obj.(*api.Source).Spec.Suspend {
		t.Fatalf("resumed source: %v, still suspended", err)
	}

	// 6. The pod's page and its logs, followed.
	b.run(t, "open the pod", chromedp.Click(chromedp.CSS(`li.node[data-kind="Pod"] > a`)), chromedp.WaitVisible(chromedp.ID("log-lines")))
	b.waitJS(t, 30*time.Second, "the pod's log", `document.getElementById('log-lines').textContent.includes('http-echo serving')`)
	b.shot(t, "7-logs")

	// 7. Log out: back to the login page, and the overview needs a login.
	b.run(t, "log out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
	b.run(t, "the overview again", chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.shot(t, "8-logged-out")
	t.Logf("screenshots in %s", shots)
}

// adminToken is the token of the server's admin.kubeconfig.
func adminToken(t *testing.T, s *server) string {
	t.Helper()
	out, _, code := s.berth(t, "config", "view", "--raw", "-o", "jsonpath={.users[0].user.token}")
	if code == 0 && strings.TrimSpace(out) != "" {
		return strings.TrimSpace(out)
	}
	data, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "token: "); ok {
			return strings.Trim(v, `"`)
		}
	}
	t.Fatal("no token in admin.kubeconfig")
	return ""
}

// browserTab is a headless Chromium with one tab, stopped (and its
// processes gone) at cleanup.
type browserTab struct {
	ctx   context.Context
	shots string
}

func startBrowser(t *testing.T, path, shots string) *browserTab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // kills the browser and waits for it
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browserTab{ctx: ctx, shots: shots}
}

func (b *browserTab) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot(t, "failed")
		t.Fatalf("%s: %v", what, err)
	}
}

// eval is the value of a JavaScript expression in the page.
func (b *browserTab) eval(t *testing.T, expr string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript expression in the page until it is true.
func (b *browserTab) waitJS(t *testing.T, timeout time.Duration, what, expr string) {
	t.Helper()
	waitFor(t, timeout, what, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			return err
		}
		if !ok {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById('live')||document.body).innerText.slice(0, 2000)`))
			return fmt.Errorf("not yet; the page reads:\n%s", text)
		}
		return nil
	})
}

func (b *browserTab) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		t.Error(err)
	}
}
