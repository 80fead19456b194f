package server_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestSPDYSessionWithoutStreams: a client that upgrades to SPDY and opens
// none of the streams it asked for is dropped once the stream timeout has
// passed on the server's clock, not held forever.
func TestSPDYSessionWithoutStreams(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := serveExecRuntimeOn(t, clk, []string{"/bin/sh", "-c", "while :; do sleep 0.05; done"}, nil)
	certPEM, keyPEM := f.ca.issue(t, api.APIServerClientName, x509.ExtKeyUsageClientAuth)
	cfg := &rest.Config{Host: f.srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CertData: certPEM, KeyData: keyPEM,
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.ca.cert.Raw}),
	}}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(f.srv.URL + api.ContainerAttachPath + "/default/web/app?stdout=true")
	if err != nil {
		t.Fatal(err)
	}
	conn, protocol, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u).Dial("v4.channel.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if protocol != "v4.channel.k8s.io" {
		t.Errorf("protocol %q", protocol)
	}
	testtool.WaitFor(t, 20*time.Second, "the server waiting for the streams", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	clk.Step(time.Minute)
	select {
	case <-conn.CloseChan():
	case <-time.After(20 * time.Second):
		t.Fatal("the server kept a session whose streams never came")
	}
}
