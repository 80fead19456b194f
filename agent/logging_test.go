package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/testtool"
)

// logBuffer collects the JSON lines of a logger while the test reads them.
type logBuffer struct{ testtool.Buffer }

// lines are the lines logged so far.
func (b *logBuffer) lines() []string {
	return strings.Split(strings.TrimSpace(b.String()), "\n")
}

// find waits for a line holding every one of want.
func (b *logBuffer) find(t *testing.T, what string, want ...string) string {
	t.Helper()
	var found string
	testtool.WaitFor(t, 20*time.Second, what, func() error {
		for _, l := range b.lines() {
			if containsAll(l, want...) {
				found = l
				return nil
			}
		}
		return errors.New("not logged")
	})
	return found
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestAgentAndServerLogs: under a JSON logger every line of the agent goes
// through it (its pod watch's too, which once used slog.Default), names
// its node once, and the server and the agent each say when they shut
// down, and why.
func TestAgentAndServerLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	stray := &logBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(stray, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	serverLog, agentLog := &logBuffer{}, &logBuffer{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, err := controlplane.New(context.Background(), controlplane.Config{
		DataDir: t.TempDir(), Listen: addr, Store: controlplane.StoreMemory,
		Logger: slog.New(slog.NewJSONHandler(serverLog, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	serverCtx, stopServer := context.WithCancelCause(context.Background())
	serverDone := make(chan error, 1)
	go func() { serverDone <- s.Run(serverCtx) }()
	defer func() {
		stopServer(nil)
		<-serverDone
	}()
	token, err := os.ReadFile(s.Credentials().Paths.NodeToken)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(s.Credentials().Paths.CACert)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{
		Server: "https://" + addr, JoinToken: strings.TrimSpace(string(token)), CAData: ca,
		NodeName: "n32", NodeIP: "127.0.0.1", Listen: "127.0.0.1:0",
		DataDir: t.TempDir(), Clock: clocktesting.NewFakeClock(time.Now()),
		Logger: slog.New(slog.NewJSONHandler(agentLog, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	agentCtx, stopAgent := context.WithCancelCause(context.Background())
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(agentCtx) }()
	defer func() {
		stopAgent(nil)
		<-agentDone
	}()

	if line := agentLog.find(t, "the node registered", `"msg":"registered node"`); strings.Count(line, `"node":`) != 1 {
		t.Errorf("the node named other than once: %s", line)
	}

	// The pod watch runs once the agent has taken over what it found at
	// start; the server stopped sooner would fail an earlier step, whose
	// retry waits on the fake clock.
	agentLog.find(t, "the pod watch's start", `"msg":"containers found at start"`)

	// The server goes: it says so; the agent's pod watch (or its list,
	// if it had not listed yet) fails, and says so through the agent's
	// logger.
	stopServer(errors.New("server test over"))
	if err := <-serverDone; err != nil {
		t.Fatal(err)
	}
	serverDone <- nil // for the deferred stop
	serverLog.find(t, "the server's shutdown", `"msg":"shutting down"`, `"reason":"server test over"`)
	agentLog.find(t, "the pod watch's failure", `failed`, `"resource":"pods"`, `"node":"n32"`)

	stopAgent(errors.New("agent test over"))
	if err := <-agentDone; err != nil {
		t.Fatal(err)
	}
	agentDone <- nil
	agentLog.find(t, "the agent's shutdown", `"msg":"shutting down"`, `"reason":"agent test over"`)

	for _, l := range agentLog.lines() {
		if n := strings.Count(l, `"node":`); n > 1 {
			t.Errorf("the node named %d times: %s", n, l)
		}
	}
	if got := strings.TrimSpace(fmt.Sprint(stray.lines())); got != "[]" {
		t.Errorf("logged outside the agent's and server's loggers:\n%s", strings.Join(stray.lines(), "\n"))
	}
}
