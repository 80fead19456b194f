package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const sha = "3f2a9c1e0b7d4a5f6e7d8c9b0a1f2e3d4c5b6a79"

// receiver is an httptest server that records what it is sent and
// answers with the codes it is given, then 200.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	got   []received
	codes []int
	hang  chan struct{}
}

type received struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	r := &receiver{codes: codes}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.hang != nil {
			select {
			case <-r.hang:
			case <-req.Context().Done():
			}
			return
		}
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{path: req.URL.EscapedPath(), header: req.Header.Clone(), body: body})
		code := http.StatusCreated
		if len(r.codes) > 0 {
			code, r.codes = r.codes[0], r.codes[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type fixture struct {
	store *store.Store
	clock *clocktesting.FakeClock
	d     *Dispatcher
}

func start(t *testing.T, opts Options) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	st, err := store.New(store.Memory{}, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	for _, ns := range []string{api.NamespaceSystem, api.NamespaceDefault} {
		if _, err := st.Create(ctx, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !store.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	opts.Clock = clk
	d := New(st, opts)
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &fixture{store: st, clock: clk, d: d}
}

func (f *fixture) create(t *testing.T, objs ...api.Object) {
	t.Helper()
	for _, o := range objs {
		if _, err := f.store.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) alert(t *testing.T, name string) *api.Alert {
	t.Helper()
	obj, err := f.store.Get(alertKind, "", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*api.Alert)
}

func secret(name string, data map[string]string) *api.Secret {
	s := &api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceSystem, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func alert(name string, p api.AlertProvider, sources ...string) *api.Alert {
	return &api.Alert{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: api.AlertSpec{Provider: p, Sources: sources}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fleet() *api.Source {
	return &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Labels: map[string]string{"team": "shop"}},
		Spec: api.SourceSpec{Type: api.SourceTypeGit, URL: "https://git.example.com/example/fleet.git", Ref: "main"}}
}

func TestGenericWebhookIsSignedWithTheSecretsKey(t *testing.T) {
	f := start(t, Options{})
	rcv := newReceiver(t)
	f.create(t, secret("hook-key", map[string]string{"token": "s3cret"}),
		alert("hook", api.AlertProvider{Type: api.AlertGeneric, Address: rcv.URL + "/hooks/berth",
			SecretRef: &api.SourceSecretRef{Name: "hook-key"}}, "*"))
	f.d.Publish(SourceEvent(fleet(), api.AlertEventApplied, sha, api.ReasonSucceeded, "Applied revision "+sha, t0))
	eventually(t, "the webhook", func() bool { return len(rcv.requests()) == 1 })
	got := rcv.requests()[0]
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(got.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); got.header.Get(api.HeaderAlertSignature) != want {
		t.Errorf("signature %q, want %q", got.header.Get(api.HeaderAlertSignature), want)
	}
	if got.path != "/hooks/berth" || got.header.Get(api.HeaderAlertEvent) != "applied" || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("path %s, headers %v", got.path, got.header)
	}
	var ev Event
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Source != "fleet" || ev.Type != "applied" || ev.Severity != "info" || ev.Revision != sha || !ev.Time.Equal(t0) || ev.URL == "" {
		t.Errorf("event %+v", ev)
	}
	eventually(t, "status.sent", func() bool { return f.alert(t, "hook").Status.Sent == 1 })
	if a := f.alert(t, "hook"); a.Status.LastSentTime == nil || a.Status.LastError != "" {
		t.Errorf("status %+v", a.Status)
	}
}

func TestSlackMessage(t *testing.T) {
	f := start(t, Options{})
	rcv := newReceiver(t, http.StatusOK)
	f.create(t, secret("slack", map[string]string{"address": rcv.URL + "/services/T0/B0/XYZ"}),
		alert("chat", api.AlertProvider{Type: api.AlertSlack, SecretRef: &api.SourceSecretRef{Name: "slack"}}, "fleet"))
	f.d.Publish(SourceEvent(fleet(), api.AlertEventFailed, sha, api.ReasonInvalidRevision, "revision rejected: web.yaml:doc 0: spec.replicas: bad", t0))
	eventually(t, "the message", func() bool { return len(rcv.requests()) == 1 })
	var msg struct {
		Text        string
		Attachments []struct{ Color, Title, Text string }
	}
	got := rcv.requests()[0]
	if err := json.Unmarshal(got.body, &msg); err != nil {
		t.Fatal(err)
	}
	if got.path != "/services/T0/B0/XYZ" || msg.Text != "source/fleet: failed "+sha[:12] || len(msg.Attachments) != 1 ||
		msg.Attachments[0].Color != "danger" || !strings.Contains(msg.Attachments[0].Text, "spec.replicas") {
		t.Errorf("path %s, message %s", got.path, got.body)
	}
}

// TestCommitStatuses checks the calls each forge gets for the syncs of a
// git Source at a commit: applied and waiting (pending), healthy
// (success), failed (failure), and no call for drift.
func TestCommitStatuses(t *testing.T) {
	for _, tc := range []struct {
		typ       api.AlertProviderType
		path      string
		auth      [2]string
		nameField string
		states    []string
	}{
		{api.AlertGitHub, "/repos/example/fleet/statuses/" + sha, [2]string{"Authorization", "Bearer tok"}, "context", []string{"pending", "success", "failure"}},
		{api.AlertGitea, "/api/v1/repos/example/fleet/statuses/" + sha, [2]string{"Authorization", "token tok"}, "context", []string{"pending", "success", "failure"}},
		{api.AlertGitLab, "/api/v4/projects/example%2Ffleet/statuses/" + sha, [2]string{"PRIVATE-TOKEN", "tok"}, "name", []string{"pending", "success", "failed"}},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			f := start(t, Options{})
			rcv := newReceiver(t)
			f.create(t, secret("forge", map[string]string{"token": "tok\n"}),
				alert("commits", api.AlertProvider{Type: tc.typ, Address: rcv.URL, SecretRef: &api.SourceSecretRef{Name: "forge"}}, "fleet"))
			src := fleet()
			applied := SourceEvent(src, api.AlertEventApplied, sha, api.ReasonSucceeded, "Applied revision "+sha, t0)
			applied.Pending = true
			f.d.Publish(applied)
			f.d.Publish(SourceEvent(src, api.AlertEventDriftCorrected, sha, "DriftCorrected", "reverted", t0))
			f.d.Publish(SourceEvent(src, api.AlertEventHealthy, sha, api.ReasonSucceeded, "Applied revision "+sha+": 2 objects healthy", t0))
			f.d.Publish(SourceEvent(src, api.AlertEventFailed, sha, api.ReasonHealthCheckFailed, strings.Repeat("x", 300), t0))
			eventually(t, "three statuses", func() bool { return len(rcv.requests()) == 3 })
			for i, got := range rcv.requests() {
				var body map[string]string
				if err := json.Unmarshal(got.body, &body); err != nil {
					t.Fatal(err)
				}
				if got.path != tc.path || got.header.Get(tc.auth[0]) != tc.auth[1] {
					t.Errorf("call %d: path %s, %s %q", i, got.path, tc.auth[0], got.header.Get(tc.auth[0]))
				}
				if body["state"] != tc.states[i] || body[tc.nameField] != "berth/fleet" || len(body["description"]) > 142 || body["description"] == "" {
					t.Errorf("call %d: body %s", i, got.body)
				}
			}
			eventually(t, "status.sent", func() bool { return f.alert(t, "commits").Status.Sent == 3 })
		})
	}
}

// TestFailingReceiverRetriesWithBackoffAndBlocksNoOne: a receiver that
// answers 503 twice gets the event again after 1 s, then 2 s, of the
// fake clock, and not before; meanwhile another Alert's receiver gets
// its event, and a receiver that never answers holds back no one.
func TestFailingReceiverRetriesWithBackoffAndBlocksNoOne(t *testing.T) {
	f := start(t, Options{Client: &http.Client{Timeout: time.Minute}})
	down := newReceiver(t, http.StatusServiceUnavailable, http.StatusServiceUnavailable)
	hung := newReceiver(t)
	hung.hang = make(chan struct{})
	defer close(hung.hang)
	up := newReceiver(t)
	f.create(t,
		alert("down", api.AlertProvider{Type: api.AlertGeneric, Address: down.URL}, "*"),
		alert("hung", api.AlertProvider{Type: api.AlertGeneric, Address: hung.URL}, "*"),
		alert("up", api.AlertProvider{Type: api.AlertGeneric, Address: up.URL}, "fleet"))
	f.d.Publish(SourceEvent(fleet(), api.AlertEventApplied, sha, api.ReasonSucceeded, "applied", t0))
	eventually(t, "the first attempt", func() bool { return len(down.requests()) == 1 })
	eventually(t, "the healthy receiver", func() bool { return len(up.requests()) == 1 })
	// Each of the three alerts' queues keeps two tickers on the clock; the
	// retry is a timer beside them.
	const lanes = 3 * 2
	eventually(t, "the retry's timer", func() bool {
		return strings.Contains(f.alert(t, "down").Status.LastError, "503") && f.clock.Waiters() == lanes+1
	})
	f.clock.Step(999 * time.Millisecond)
	if n := len(down.requests()); n != 1 {
		t.Fatalf("%d attempts before the back-off passed", n)
	}
	f.clock.Step(time.Millisecond)
	eventually(t, "the second attempt", func() bool { return len(down.requests()) == 2 })
	eventually(t, "the second retry's timer", func() bool { return f.clock.Waiters() == lanes+1 })
	f.clock.Step(1999 * time.Millisecond)
	if n := len(down.requests()); n != 2 {
		t.Fatalf("%d attempts before the second back-off passed", n)
	}
	f.clock.Step(time.Millisecond)
	eventually(t, "the third attempt", func() bool { return len(down.requests()) == 3 })
	eventually(t, "status.sent", func() bool { a := f.alert(t, "down"); return a.Status.Sent == 1 && a.Status.LastError == "" })
	// The hung receiver still holds its own delivery; a later event
	// still reaches the others at once.
	f.d.Publish(SourceEvent(fleet(), api.AlertEventHealthy, sha, api.ReasonSucceeded, "healthy", t0))
	eventually(t, "the next event", func() bool { return len(up.requests()) == 2 && len(down.requests()) == 4 })
}

func TestGivesUp(t *testing.T) {
	f := start(t, Options{Attempts: 2})
	bad := newReceiver(t, http.StatusUnauthorized)
	flaky := newReceiver(t, http.StatusBadGateway, http.StatusBadGateway)
	f.create(t,
		alert("bad", api.AlertProvider{Type: api.AlertGeneric, Address: bad.URL}, "*"),
		alert("flaky", api.AlertProvider{Type: api.AlertGeneric, Address: flaky.URL}, "*"),
		alert("nosecret", api.AlertProvider{Type: api.AlertGitHub, SecretRef: &api.SourceSecretRef{Name: "missing"}}, "*"))
	f.d.Publish(SourceEvent(fleet(), api.AlertEventApplied, sha, api.ReasonSucceeded, "applied", t0))
	// A 401 will not mend: given up at the first answer.
	eventually(t, "the 401 given up", func() bool { return f.alert(t, "bad").Status.Failed == 1 })
	if a := f.alert(t, "bad"); !strings.Contains(a.Status.LastError, "401") || len(bad.requests()) != 1 {
		t.Errorf("status %+v after %d requests", a.Status, len(bad.requests()))
	}
	eventually(t, "the missing Secret", func() bool {
		return strings.Contains(f.alert(t, "nosecret").Status.LastError, "Secret kube-system/missing (spec.provider.secretRef)")
	})
	// Three alerts' queues with two tickers each, and the retries' timers
	// of flaky and nosecret.
	eventually(t, "the retry", func() bool { return len(flaky.requests()) == 1 && f.clock.Waiters() == 3*2+2 })
	f.clock.Step(time.Second)
	eventually(t, "flaky given up after 2 attempts", func() bool { return f.alert(t, "flaky").Status.Failed == 1 })
	if n := len(flaky.requests()); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

func TestRateLimitPerSource(t *testing.T) {
	f := start(t, Options{RateBurst: 3, RateEvery: 10 * time.Second})
	rcv := newReceiver(t)
	f.create(t, alert("hook", api.AlertProvider{Type: api.AlertGeneric, Address: rcv.URL}, "*"))
	other := fleet()
	other.Name = "other"
	for range 5 {
		f.d.Publish(SourceEvent(fleet(), api.AlertEventApplied, sha, "", "applied", t0))
	}
	f.d.Publish(SourceEvent(other, api.AlertEventApplied, sha, "", "applied", t0))
	eventually(t, "3 of fleet and 1 of other", func() bool { return f.alert(t, "hook").Status.Sent == 4 })
	f.clock.Step(10 * time.Second)
	f.d.Publish(SourceEvent(fleet(), api.AlertEventFailed, sha, "", "failed", t0))
	eventually(t, "one more after the refill", func() bool { return f.alert(t, "hook").Status.Sent == 5 })
	if n := len(rcv.requests()); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

func TestMatches(t *testing.T) {
	src := fleet()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}
	for _, tc := range []struct {
		name string
		spec api.AlertSpec
		typ  string
		want bool
	}{
		{"by name", api.AlertSpec{Sources: []string{"fleet"}}, api.AlertEventApplied, true},
		{"another name", api.AlertSpec{Sources: []string{"infra"}}, api.AlertEventApplied, false},
		{"every source", api.AlertSpec{Sources: []string{"*"}}, api.AlertEventHealthy, true},
		{"by label", api.AlertSpec{SourceSelector: sel}, api.AlertEventApplied, true},
		{"other label", api.AlertSpec{SourceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ops"}}}, api.AlertEventApplied, false},
		{"event not chosen", api.AlertSpec{Sources: []string{"*"}, Events: []string{"failed"}}, api.AlertEventApplied, false},
		{"event chosen", api.AlertSpec{Sources: []string{"*"}, Events: []string{"driftCorrected"}}, api.AlertEventDriftCorrected, true},
		{"errors only, info", api.AlertSpec{Sources: []string{"*"}, Severity: "error"}, api.AlertEventHealthy, false},
		{"errors only, failure", api.AlertSpec{Sources: []string{"*"}, Severity: "error"}, api.AlertEventFailed, true},
		{"suspended", api.AlertSpec{Sources: []string{"*"}, Suspend: true}, api.AlertEventFailed, false},
	} {
		a := &api.Alert{Spec: tc.spec}
		if got := Matches(a, SourceEvent(src, tc.typ, sha, "", "", t0)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/example/fleet.git":      "example/fleet",
		"git+https://gitlab.com/group/sub/app":      "group/sub/app",
		"git@github.com:example/fleet.git":          "example/fleet",
		"ssh://git@gitea.example:2222/org/repo.git": "org/repo",
		"file:///srv/git/fleet.git":                 "srv/git/fleet",
		"https://example.com/fleet.git":             "",
	} {
		if got := Repository(in); got != want {
			t.Errorf("Repository(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNoCommitStatusForAnythingButACommit: a dir source's content hash is
// no commit; nothing is sent and nothing counts as failed.
func TestNoCommitStatusForAnythingButACommit(t *testing.T) {
	f := start(t, Options{})
	rcv := newReceiver(t)
	f.create(t, secret("forge", map[string]string{"token": "tok"}),
		alert("commits", api.AlertProvider{Type: api.AlertGitHub, Address: rcv.URL, Repository: "o/r", SecretRef: &api.SourceSecretRef{Name: "forge"}}, "*"))
	f.d.Publish(SourceEvent(fleet(), api.AlertEventApplied, "sha256:60303ae22b99", "", "applied", t0))
	f.d.Publish(SourceEvent(fleet(), api.AlertEventApplied, sha, "", "applied", t0))
	eventually(t, "the commit's status", func() bool { return len(rcv.requests()) == 1 })
	if got := rcv.requests()[0].path; got != "/repos/o/r/statuses/"+sha {
		t.Errorf("path %s", got)
	}
	if a := f.alert(t, "commits"); a.Status.Failed != 0 {
		t.Errorf("status %+v", a.Status)
	}
}

// TestPlannedStatus: a branch's plan is a status of its own, named
// after the Alert's context with "/plan", failure when it does not fit.
func TestPlannedStatus(t *testing.T) {
	f := start(t, Options{})
	rcv := newReceiver(t)
	f.create(t, secret("forge", map[string]string{"token": "tok"}),
		alert("commits", api.AlertProvider{Type: api.AlertGitea, Address: rcv.URL, Context: "ci/berth", SecretRef: &api.SourceSecretRef{Name: "forge"}}, "*"))
	fits := SourceEvent(fleet(), api.AlertEventPlanned, sha, "PlanFits", "fits", t0)
	fails := SourceEvent(fleet(), api.AlertEventPlanned, sha, "PlanFailed", "does not fit", t0)
	fails.Severity = api.AlertSeverityError
	f.d.Publish(fits)
	eventually(t, "the first status", func() bool { return len(rcv.requests()) == 1 })
	f.d.Publish(fails)
	eventually(t, "two statuses", func() bool { return len(rcv.requests()) == 2 })
	for i, want := range []string{`"state":"success"`, `"state":"failure"`} {
		body := string(rcv.requests()[i].body)
		if !strings.Contains(body, want) || !strings.Contains(body, `"context":"ci/berth/plan"`) {
			t.Errorf("status %d: %s", i, body)
		}
	}
}
