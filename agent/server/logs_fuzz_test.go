package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// logFuzzRuntime holds one exited run whose log is three lines.
type logFuzzRuntime struct {
	runtime.Runtime
	id runtime.ID
}

const logFuzzOutput = "one\ntwo\nthree\n"

func (f logFuzzRuntime) Status(_ context.Context, id runtime.ID) (runtime.Status, error) {
	if id != f.id {
		return runtime.Status{}, fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	return runtime.Status{ID: id, State: runtime.StateExited}, nil
}

func (f logFuzzRuntime) Logs(_ context.Context, id runtime.ID, opts runtime.LogOptions, w io.Writer) error {
	if id != f.id {
		return fmt.Errorf("%s: %w", id, runtime.ErrNotFound)
	}
	lines := strings.SplitAfter(logFuzzOutput, "\n")
	lines = lines[:len(lines)-1]
	if opts.TailLines > 0 && int(opts.TailLines) < len(lines) {
		lines = lines[len(lines)-int(opts.TailLines):]
	}
	_, err := io.WriteString(w, strings.Join(lines, ""))
	return err
}

// FuzzLogServer sends the log server arbitrary paths and queries, as the
// API server would pass them on from a user: it must never panic nor
// answer 5xx; only the one known container's path with a query it
// understands gets a 200, anything else a 3xx (the mux cleaning a path)
// or 4xx with a message; and a client that is not the API server is
// refused before anything else is looked at.
func FuzzLogServer(f *testing.F) {
	for _, seed := range []struct{ path, query string }{
		{"/containerLogs/default/web/app", ""},
		{"/containerLogs/default/web/app", "tailLines=2"},
		{"/containerLogs/default/web/app", "tailLines=0"},
		{"/containerLogs/default/web/app", "follow=true&tailLines=0"},
		{"/containerLogs/default/web/app", "previous=true"},
		{"/containerLogs/default/web/app", "follow=1&previous=0&tailLines=99999999999999999999"},
		{"/containerLogs/default/web/app", "tailLines=-1"},
		{"/containerLogs/default/web/app", "limitBytes=1"},
		{"/containerLogs/default/web/app", "follow=yes"},
		{"/containerLogs/default/web/app", "timestamps=true&sinceSeconds=5"},
		{"/containerLogs/default/web/app", "sinceTime=2026-11-30T12:00:00Z&tailLines=3"},
		{"/containerLogs/default/web/app", "sinceSeconds=99999999999999"},
		{"/exec/default/web/app", "command=ls&stdout=true"},
		{"/attach/default/web/app", "stdin=true&stdout=true&stderr=true"},
		{"/attach/default/web/app", "stderr=true&tty=true"},
		{"/attach/default/web/other", "stdout=1"},
		{"/portForward/default/web", ""},
		{"/stats/resources", ""},
		{"/exec/default/web/app", "command=sh&command=-c&command=exit+3&stdin=1&tty=true"},
		{"/containerLogs/default/web/app", "%zz"},
		{"/containerLogs/default/web/other", ""},
		{"/containerLogs/default/web", ""},
		{"/containerLogs/default/web/app/extra", ""},
		{"/containerLogs/default/../web/app", ""},
		{"//containerLogs/default/web/app", ""},
		{"/containerLogs/%2e%2e/web/app", ""},
		{"", ""},
		{"*", ""},
	} {
		f.Add(seed.path, seed.query, true, uint8(0))
	}
	f.Add("/containerLogs/default/web/app", "", false, uint8(1))
	f.Add("/containerLogs/default/web/app", "", true, uint8(2))

	known := runtime.ID{PodUID: "uid-1", Name: "app", Attempt: 0}
	var lookups int
	srv := New(Options{
		Runtime: logFuzzRuntime{id: known},
		Lookup: func(ns, pod, ctr string, previous bool) (runtime.ID, error) {
			lookups++
			if ns == "default" && pod == "web" && ctr == "app" && !previous {
				return known, nil
			}
			return runtime.ID{}, errors.New("not found")
		},
	})
	methods := []string{http.MethodGet, http.MethodPost, http.MethodHead}
	f.Fuzz(func(t *testing.T, path, query string, apiServer bool, method uint8) {
		cn := api.APIServerClientName
		if !apiServer {
			cn = "system:node:n1"
		}
		leaf := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		r := &http.Request{
			Method:     methods[int(method)%len(methods)],
			URL:        &url.URL{Path: path, RawQuery: query},
			RequestURI: path,
			Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{},
			Host:   "agent",
			Body:   http.NoBody,
			TLS:    &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf}}},
		}
		r = r.WithContext(t.Context())
		lookups = 0
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		code := rec.Code
		if code >= 500 {
			t.Fatalf("%s %q ?%q: %d %s", r.Method, path, query, code, rec.Body.String())
		}
		if !apiServer {
			if code != http.StatusForbidden || lookups != 0 {
				t.Fatalf("another client: %d after %d lookups", code, lookups)
			}
			return
		}
		if code == http.StatusOK {
			if path != api.ContainerLogsPath+"/default/web/app" || lookups != 1 {
				t.Fatalf("%s %q ?%q answered 200", r.Method, path, query)
			}
			body := rec.Body.String()
			if limit, err := strconv.ParseInt(r.URL.Query().Get("limitBytes"), 10, 64); err == nil {
				// A tail of the log cut at limitBytes.
				if int64(len(body)) > limit || !strings.Contains(logFuzzOutput, body) {
					t.Fatalf("%q ?%q: body %q is not a part of the log within the limit", path, query, body)
				}
			} else if r.Method == http.MethodGet && !strings.HasSuffix(logFuzzOutput, body) {
				t.Fatalf("%q ?%q: body %q is not a tail of the log", path, query, body)
			}
			return
		}
		// net/http's own 400 for the request target "*" has no body.
		if code < 300 || (code >= 400 && path != "*" && strings.TrimSpace(rec.Body.String()) == "") {
			t.Fatalf("%s %q ?%q: %d with %q", r.Method, path, query, code, rec.Body.String())
		}
	})
}
