package probe

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// Result is the outcome of one probe, or the verdict of a Tracker.
type Result string

// Results.
const (
	// Success: the container answered as it should.
	Success Result = "Success"
	// Failure: it did not (a bad status, a refused connection, exit ≠ 0,
	// a timeout).
	Failure Result = "Failure"
	// Unknown: the probe could not be run at all (a bad port name, an
	// error of the runtime); it counts neither way.
	Unknown Result = "Unknown"
)

// Execer is the part of a runtime an exec probe needs.
type Execer interface {
	Exec(ctx context.Context, id runtime.ID, argv []string) ([]byte, int, error)
}

// Target is the container a probe checks.
type Target struct {
	// Runtime and ID run exec probes inside the container's run.
	Runtime Execer
	ID      runtime.ID
	// Host is the default host of httpGet and tcpSocket probes: the pod IP.
	Host string
	// Ports resolve named ports.
	Ports []api.ContainerPort
}

// maxOutput caps what a probe keeps of a body or a command's output.
const maxOutput = 10 * 1024

// maxRedirects is how many same-host redirects an httpGet probe follows.
const maxRedirects = 10

// Run runs a probe's handler once against target. ctx carries the probe's
// timeout. The output says why in a few words, for events and messages.
func Run(ctx context.Context, h api.ProbeHandler, target Target) (Result, string) {
	switch {
	case h.Exec != nil:
		return runExec(ctx, h.Exec, target)
	case h.HTTPGet != nil:
		return runHTTP(ctx, h.HTTPGet, target)
	case h.TCPSocket != nil:
		return runTCP(ctx, h.TCPSocket, target)
	case h.GRPC != nil:
		return runGRPC(ctx, h.GRPC, target)
	}
	return Unknown, "probe has no handler"
}

func runExec(ctx context.Context, a *api.ExecAction, t Target) (Result, string) {
	if t.Runtime == nil {
		return Unknown, "exec probe: no runtime"
	}
	out, code, err := t.Runtime.Exec(ctx, t.ID, a.Command)
	if err != nil {
		if ctx.Err() != nil {
			return Failure, fmt.Sprintf("command %q timed out", a.Command)
		}
		return Unknown, fmt.Sprintf("exec %q: %v", a.Command, err)
	}
	if code != 0 {
		msg := fmt.Sprintf("command %q exited with %d", a.Command, code)
		if o := trim(out); o != "" {
			msg += ": " + o
		}
		return Failure, msg
	}
	return Success, trim(out)
}

// ResolvePort turns a probe's port (a number or the name of one of the
// container's ports) into a number.
func ResolvePort(p intstr.IntOrString, ports []api.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("port %d out of range", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			if cp.ContainerPort <= 0 || cp.ContainerPort > 65535 {
				return 0, fmt.Errorf("container port %q: %d out of range", p.StrVal, cp.ContainerPort)
			}
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

// NewHTTPGet is the request of an httpGet action (a probe's or a
// lifecycle hook's): its scheme, port (a number or a name of ports), path
// and headers, to its host or else host, as the kubelet sends it.
func NewHTTPGet(ctx context.Context, a *api.HTTPGetAction, host string, ports []api.ContainerPort, userAgent string) (*http.Request, error) {
	port, err := ResolvePort(a.Port, ports)
	if err != nil {
		return nil, err
	}
	host = cmp.Or(a.Host, host)
	scheme := "http"
	if strings.EqualFold(string(a.Scheme), string(api.URISchemeHTTPS)) {
		scheme = "https"
	}
	path := a.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range a.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}

func runHTTP(ctx context.Context, a *api.HTTPGetAction, t Target) (Result, string) {
	req, err := NewHTTPGet(ctx, a, t.Host, t.Ports, "berth-probe/1.0")
	if err != nil {
		return Unknown, "httpGet: " + err.Error()
	}
	u := req.URL
	client := &http.Client{
		Transport: &http.Transport{
			// Probes check liveness, not certificates, as the kubelet does.
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if r.URL.Hostname() != via[0].URL.Hostname() {
				// Off-host: the redirect itself is the answer.
				return http.ErrUseLastResponse
			}
			if len(via) >= maxRedirects {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		// The error names the request: Get "http://…": dial tcp …
		return Failure, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return Success, fmt.Sprintf("GET %s: %d", u, resp.StatusCode)
	}
	return Failure, fmt.Sprintf("GET %s: HTTP probe failed with statuscode: %d: %s", u, resp.StatusCode, trim(body))
}

func runTCP(ctx context.Context, a *api.TCPSocketAction, t Target) (Result, string) {
	port, err := ResolvePort(a.Port, t.Ports)
	if err != nil {
		return Unknown, "tcpSocket: " + err.Error()
	}
	host := cmp.Or(a.Host, t.Host)
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// The error names the address: dial tcp 127.0.0.1:80: connect: …
		return Failure, err.Error()
	}
	_ = conn.Close()
	return Success, "connected to " + addr
}

func trim(b []byte) string {
	if len(b) > maxOutput {
		b = b[:maxOutput]
	}
	return strings.TrimSpace(string(b))
}
