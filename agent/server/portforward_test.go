package server_test

import (
	"bufio"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"

	"github.com/berth-dev/berth/agent/server"
	"github.com/berth-dev/berth/api"
)

// TestPortForward: kubectl's own port-forward client, over the WebSocket
// tunnel, reaches a pod's port through the container server: a
// connection's bytes both ways, several connections, and a port nothing
// listens on reported on the error stream.
func TestPortForward(t *testing.T) {
	// The "pod": a line echo server on localhost.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "echo %s\n", sc.Text())
				}
			}()
		}
	}()
	podPort := ln.Addr().(*net.TCPAddr).Port

	f := startContainerServer(t, server.Options{
		PodAddresses: func(ns, name string) ([]string, bool) {
			return []string{"127.0.0.1"}, ns == "default" && name == "web"
		}})
	ca, srv := f.ca, f.srv
	clientCert, clientKey := ca.issue(t, api.APIServerClientName, x509.ExtKeyUsageClientAuth)
	rc := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CertData: clientCert, KeyData: clientKey, CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}),
	}}
	forward := func(t *testing.T, remote int) int {
		t.Helper()
		u, _ := url.Parse(srv.URL + api.PortForwardPath + "/default/web")
		dialer, err := portforward.NewSPDYOverWebsocketDialer(u, rc)
		if err != nil {
			t.Fatal(err)
		}
		stop, ready := make(chan struct{}), make(chan struct{})
		fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", remote)}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- fw.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("port-forward ended before it was ready: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("port-forward not ready")
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) != 1 {
			t.Fatalf("ports %v, %v", ports, err)
		}
		t.Cleanup(func() { close(stop) })
		return int(ports[0].Local)
	}

	local := forward(t, podPort)
	for i := range 3 {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "hello %d\n", i)
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || line != fmt.Sprintf("echo hello %d\n", i) {
			t.Fatalf("connection %d: %q, %v", i, line, err)
		}
	}

	// Nothing listens on the pod's port: the error stream says so.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	// Driven by hand, as the client does: an error stream, then a data
	// stream, with the same request ID.
	u, _ := url.Parse(srv.URL + api.PortForwardPath + "/default/web")
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, rc)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := dialer.Dial("portforward.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := http.Header{}
	h.Set("streamType", "error")
	h.Set("port", strconv.Itoa(deadPort))
	h.Set("requestID", "1")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	errStream.Close()
	h.Set("streamType", "data")
	data, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	msg, err := io.ReadAll(errStream)
	if err != nil || !strings.Contains(string(msg), fmt.Sprintf("error forwarding port %d", deadPort)) || !strings.Contains(string(msg), "connection refused") {
		t.Errorf("error stream %q, %v", msg, err)
	}

	// Refused before any upgrade: a plain request, a pod not on this node.
	c2 := f.client(t, api.APIServerClientName)
	if code, body := logServerGet(t, c2, srv.URL+api.PortForwardPath+"/default/web"); code != http.StatusBadRequest || !strings.Contains(body, "WebSocket") {
		t.Errorf("a plain request: %d %s", code, body)
	}
	if code, body := logServerGet(t, c2, srv.URL+api.PortForwardPath+"/default/other"); code != http.StatusNotFound || !strings.Contains(body, "not running on this node") {
		t.Errorf("another pod: %d %s", code, body)
	}
}
