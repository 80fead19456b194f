package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/server"
	"github.com/berth-dev/berth/api"
)

// logTestCA is a certificate authority made for one test.
type logTestCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newLogTestCA(t *testing.T) *logTestCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &logTestCA{cert: cert, key: key, pool: pool}
}

// issue signs a certificate for cn with one extended key usage, valid for
// 127.0.0.1, and returns it and its key in PEM.
func (ca *logTestCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// logFileRuntime serves the logs of runs from real files, and tells a
// follower when a run writes or exits. It implements the two methods the
// log server uses; the others are never called.
type logFileRuntime struct {
	runtime.Runtime
	dir  string
	mu   sync.Mutex
	runs map[runtime.ID]*logFileRun
}

type logFileRun struct {
	path    string
	exited  bool
	changed chan struct{}
}

func newLogFileRuntime(t *testing.T) *logFileRuntime {
	return &logFileRuntime{dir: t.TempDir(), runs: map[runtime.ID]*logFileRun{}}
}

// start records a run whose log holds out so far.
func (f *logFileRuntime) start(t *testing.T, id runtime.ID, out string) {
	t.Helper()
	path := filepath.Join(f.dir, fmt.Sprintf("%s-%s-%d.log", id.PodUID, id.Name, id.Attempt))
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[id] = &logFileRun{path: path, changed: make(chan struct{})}
}

// write appends to a run's log, as its process would.
func (f *logFileRuntime) write(t *testing.T, id runtime.ID, out string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.runs[id]
	file, err := os.OpenFile(r.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteString(out); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (f *logFileRuntime) exit(id runtime.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.runs[id]
	r.exited = true
	close(r.changed)
	r.changed = make(chan struct{})
}

func (f *logFileRuntime) run(id runtime.ID) (*logFileRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return nil, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	return r, nil
}

func (f *logFileRuntime) Status(_ context.Context, id runtime.ID) (runtime.Status, error) {
	r, err := f.run(id)
	if err != nil {
		return runtime.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := runtime.Status{ID: id, State: runtime.StateRunning}
	if r.exited {
		st.State = runtime.StateExited
	}
	return st, nil
}

func (f *logFileRuntime) Logs(ctx context.Context, id runtime.ID, opts runtime.LogOptions, w io.Writer) error {
	r, err := f.run(id)
	if err != nil {
		return err
	}
	if opts.Timestamps || !opts.Since.IsZero() {
		// A plain file keeps no write times, as a log written by an older
		// agent's runtime.
		return runtime.ErrNoTimes
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		return err
	}
	start := 0
	if opts.TailLines > 0 {
		start = logTailStart(data, opts.TailLines)
	}
	if _, err := w.Write(data[start:]); err != nil {
		return err
	}
	offset := len(data)
	for opts.Follow {
		f.mu.Lock()
		changed, exited := r.changed, r.exited
		f.mu.Unlock()
		data, err := os.ReadFile(r.path)
		if err != nil {
			return err
		}
		if len(data) > offset {
			if _, err := w.Write(data[offset:]); err != nil {
				return err
			}
			offset = len(data)
		}
		if exited {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
	return nil
}

// logTailStart is where the last n lines of data begin.
func logTailStart(data []byte, n int64) int {
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// logFixture is a log server on a real TLS listener with two runs of
// container "app" of pod default/web.
type logFixture struct {
	ca      *logTestCA
	rt      *logFileRuntime
	srv     *httptest.Server
	current runtime.ID
}

func newLogFixture(t *testing.T) *logFixture {
	t.Helper()
	ca := newLogTestCA(t)
	rt := newLogFileRuntime(t)
	prev := runtime.ID{PodUID: "uid-1", Name: "app", Attempt: 0}
	cur := runtime.ID{PodUID: "uid-1", Name: "app", Attempt: 1}
	rt.start(t, prev, "old 1\nold 2\n")
	rt.exit(prev)
	rt.start(t, cur, "line 1\nline 2\nline 3\n")
	lookup := func(ns, pod, ctr string, previous bool) (runtime.ID, error) {
		if ns != "default" || pod != "web" {
			return runtime.ID{}, fmt.Errorf("no pod %s/%s: %w", ns, pod, runtime.ErrNotFound)
		}
		if ctr != "app" {
			return runtime.ID{}, fmt.Errorf("container %s is not valid for pod %s/%s", ctr, ns, pod)
		}
		if previous {
			return prev, nil
		}
		return cur, nil
	}
	certPEM, keyPEM := ca.issue(t, "system:node:n1", x509.ExtKeyUsageServerAuth)
	cfg, err := server.TLSConfig(certPEM, keyPEM, ca.pool)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(server.New(server.Options{Runtime: rt, Lookup: lookup, ClientCAs: ca.pool}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &logFixture{ca: ca, rt: rt, srv: srv, current: cur}
}

// client presents a certificate named cn, or none when cn is empty.
func (f *logFixture) client(t *testing.T, cn string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: f.ca.pool, MinVersion: tls.VersionTLS12}
	if cn != "" {
		certPEM, keyPEM := f.ca.issue(t, cn, x509.ExtKeyUsageClientAuth)
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func logServerGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestLogServer(t *testing.T) {
	f := newLogFixture(t)
	c := f.client(t, api.APIServerClientName)
	logs := f.srv.URL + api.ContainerLogsPath
	for _, tc := range []struct {
		name, path string
		code       int
		body       string
	}{
		{"whole log", "/default/web/app", 200, "line 1\nline 2\nline 3\n"},
		{"tail", "/default/web/app?tailLines=2", 200, "line 2\nline 3\n"},
		{"tail beyond the start", "/default/web/app?tailLines=10", 200, "line 1\nline 2\nline 3\n"},
		{"tail none", "/default/web/app?tailLines=0", 200, ""},
		{"previous run", "/default/web/app?previous=true", 200, "old 1\nold 2\n"},
		{"previous tail", "/default/web/app?previous=true&tailLines=1", 200, "old 2\n"},
		{"unknown container", "/default/web/db", 400, "container db is not valid for pod default/web"},
		{"unknown pod", "/default/api/app", 404, "no pod default/api"},
		{"limited", "/default/web/app?limitBytes=10", 200, "line 1\nlin"},
		{"limited beyond the end", "/default/web/app?limitBytes=100", 200, "line 1\nline 2\nline 3\n"},
		{"tail limited", "/default/web/app?tailLines=2&limitBytes=3", 200, "lin"},
		{"followed, ended by the limit", "/default/web/app?follow=true&limitBytes=8", 200, "line 1\nl"},
		{"bad limitBytes", "/default/web/app?limitBytes=0", 400, "limitBytes=\"0\""},
		{"bad tailLines", "/default/web/app?tailLines=-1", 400, "tailLines=\"-1\""},
		{"bad follow", "/default/web/app?follow=maybe", 400, "follow=\"maybe\""},
		{"unsupported option", "/default/web/app?stream=All", 400, "log option stream is not supported"},
		{"both since forms", "/default/web/app?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 400, "at most one of sinceTime or sinceSeconds"},
		{"bad sinceSeconds", "/default/web/app?sinceSeconds=0", 400, "sinceSeconds=\"0\""},
		{"bad sinceTime", "/default/web/app?sinceTime=yesterday", 400, "sinceTime=\"yesterday\""},
		{"bad timestamps", "/default/web/app?timestamps=often", 400, "timestamps=\"often\""},
		{"follow from nothing", "/default/web/app?follow=true&tailLines=0", 400, "tailLines=0 with follow=true"},
		{"other path", "/default/web", 404, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := logServerGet(t, c, logs+tc.path)
			if code != tc.code {
				t.Fatalf("code %d, want %d; body %q", code, tc.code, body)
			}
			if tc.code == 200 && body != tc.body || tc.code != 200 && !strings.Contains(body, tc.body) {
				t.Errorf("body %q, want %q", body, tc.body)
			}
		})
	}
	code, body := logServerGet(t, c, f.srv.URL+"/metrics")
	if code != 404 {
		t.Errorf("GET /metrics: %d %q, want 404", code, body)
	}
}

func TestLogServerRefusesOthers(t *testing.T) {
	f := newLogFixture(t)
	url := f.srv.URL + api.ContainerLogsPath + "/default/web/app"

	code, body := logServerGet(t, f.client(t, "system:node:n2"), url)
	if code != http.StatusForbidden || !strings.Contains(body, `"system:node:n2" may not use the container server`) || strings.Contains(body, "line") {
		t.Errorf("another name: %d %q, want 403", code, body)
	}

	if _, err := f.client(t, "").Get(url); err == nil {
		t.Error("no client certificate: the TLS handshake succeeded")
	}

	// A certificate from another CA fails the handshake too.
	other := newLogTestCA(t)
	certPEM, keyPEM := other.issue(t, api.APIServerClientName, x509.ExtKeyUsageClientAuth)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	if _, err := (&http.Client{Transport: tr}).Get(url); err == nil {
		t.Error("certificate of another CA: the TLS handshake succeeded")
	}
}

// TestLogServerWithoutTLS checks the handler's own checks, for a server
// whose TLS configuration asks for no client certificate.
func TestLogServerWithoutTLS(t *testing.T) {
	ca := newLogTestCA(t)
	h := server.New(server.Options{Runtime: newLogFileRuntime(t), ClientCAs: ca.pool,
		Lookup: func(string, string, string, bool) (runtime.ID, error) { return runtime.ID{}, errors.New("unexpected") }})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, api.ContainerLogsPath+"/default/web/app", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("plain HTTP: %d %q, want 401", rec.Code, rec.Body)
	}

	// A certificate the TLS layer passed on unverified is checked here.
	other := newLogTestCA(t)
	certPEM, _ := other.issue(t, api.APIServerClientName, x509.ExtKeyUsageClientAuth)
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, api.ContainerLogsPath+"/default/web/app", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("unverified certificate of another CA: %d %q, want 401", rec.Code, rec.Body)
	}
}

func TestLogServerFollow(t *testing.T) {
	f := newLogFixture(t)
	c := f.client(t, api.APIServerClientName)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+api.ContainerLogsPath+"/default/web/app?follow=true&tailLines=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("follow: %s", resp.Status)
	}
	lines := bufio.NewReader(resp.Body)
	readLine := func(want string) {
		t.Helper()
		got, err := lines.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	readLine("line 3\n")
	f.rt.write(t, f.current, "line 4\n")
	readLine("line 4\n")
	f.rt.write(t, f.current, "line 5\nlast")
	readLine("line 5\n")
	f.rt.exit(f.current)
	rest, err := io.ReadAll(lines)
	if err != nil || string(rest) != "last" {
		t.Errorf("after the run exited: %q, %v; want \"last\" and the end", rest, err)
	}
}

// TestLogServerFollowClientGone checks that a follower that goes away
// ends the runtime's stream.
func TestLogServerFollowClientGone(t *testing.T) {
	f := newLogFixture(t)
	ended := make(chan error, 1)
	rt := &logEndRecorder{logFileRuntime: f.rt, ended: ended}
	srv := httptest.NewUnstartedServer(server.New(server.Options{Runtime: rt,
		Lookup: func(string, string, string, bool) (runtime.ID, error) { return f.current, nil }}))
	srv.TLS = f.srv.TLS
	srv.StartTLS()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+api.ContainerLogsPath+"/default/web/app?follow=true", nil)
	resp, err := f.client(t, api.APIServerClientName).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the stream ended without an error while the run still runs")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime's stream did not end after the client went away")
	}
}

// logEndRecorder reports how each Logs call ended.
type logEndRecorder struct {
	*logFileRuntime
	ended chan error
}

func (e *logEndRecorder) Logs(ctx context.Context, id runtime.ID, opts runtime.LogOptions, w io.Writer) error {
	err := e.logFileRuntime.Logs(ctx, id, opts, w)
	e.ended <- err
	return err
}

func TestLogServerTLSConfigErrors(t *testing.T) {
	ca := newLogTestCA(t)
	certPEM, keyPEM := ca.issue(t, "system:node:n1", x509.ExtKeyUsageServerAuth)
	if _, err := server.TLSConfig(certPEM, bytes.Repeat([]byte("x"), 10), ca.pool); err == nil {
		t.Error("a bad key was accepted")
	}
	if _, err := server.TLSConfig(certPEM, keyPEM, nil); err == nil {
		t.Error("no client CA was accepted")
	}
}
