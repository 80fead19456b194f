package agent_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestAgentRenewsItsCredentials: at about 80% of their year, the agent
// joins again for a new node credential and serving certificate; the log
// server presents the new certificate without restarting, and the Node
// keeps being renewed with the new credential.
func TestAgentRenewsItsCredentials(t *testing.T) {
	c := startCluster(t)
	token, ca := c.JoinSecrets(t)
	clk := clocktesting.NewFakeClock(time.Now())
	a, err := agent.New(agent.Config{
		Server: c.URL, JoinToken: token, CAData: ca,
		NodeName: "renewing", NodeIP: "127.0.0.1", Listen: "127.0.0.1:0",
		DataDir: t.TempDir(), Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	testtool.Run(t, "agent", a.Run)

	// The serving certificate the log server presents (TLS 1.3 shows it
	// before the server asks for the client certificate we do not have).
	serial := func() (string, error) {
		conn, err := tls.Dial("tcp", a.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}
	var first string
	testtool.WaitFor(t, 20*time.Second, "the log server's first certificate", func() (err error) {
		first, err = serial()
		return err
	})
	testtool.WaitFor(t, 10*time.Second, "the node registered", func() error {
		_, err := c.Admin.Get(context.Background(), api.KindOf(&api.Node{}), "", "renewing")
		return err
	})

	// 320 days on: past the renewal point, 80% ± 5% of a year (292 days,
	// jittered up to 310).
	clk.Step(320 * 24 * time.Hour)
	jumped := clk.Now()
	testtool.WaitFor(t, 20*time.Second, "a new serving certificate", func() error {
		clk.Step(2 * time.Minute) // a renewal timer set after the jump waits at least a minute
		got, err := serial()
		if err != nil {
			return err
		}
		if got == first {
			return fmt.Errorf("still certificate %s", got)
		}
		return nil
	})
	testtool.WaitFor(t, 20*time.Second, "a heartbeat from after the renewal", func() error {
		clk.Step(10 * time.Second)
		hb := c.Lease(t, "renewing").Spec.RenewTime.Time
		if !hb.After(jumped) {
			return fmt.Errorf("last heartbeat %v, renewal at %v", hb, jumped)
		}
		return nil
	})
}
