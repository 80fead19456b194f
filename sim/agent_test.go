package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/testtool"
)

// eventLines decodes events of any length, keeps nothing that points into
// the buffers it reuses, and reports a stream that ends inside an event.
func TestEventLines(t *testing.T) {
	event := func(name string, pad int) string {
		return fmt.Sprintf(`{"type":"MODIFIED","object":{"metadata":{"name":%q,"resourceVersion":"7"},"status":{"phase":"Running","message":%q}}}`+"\n",
			name, strings.Repeat("x", pad))
	}
	stream := event("short", 0) + event("long", 3000) + event("longer", 20000) + event("short2", 10)
	var got []watchEvent
	read := func(stream string) error {
		events := eventLines{r: bufio.NewReaderSize(strings.NewReader(stream), 512)}
		for {
			var ev watchEvent
			if err := events.decode(&ev); err != nil {
				return err
			}
			got = append(got, ev)
		}
	}
	if err := read(stream); err != io.EOF {
		t.Fatalf("after %d events: %v, want io.EOF", len(got), err)
	}
	// Cut inside a short event, and inside a long one.
	for _, cut := range []string{`{"type":"ADDED"`, strings.TrimSuffix(event("cut", 2000), "\n")} {
		var before []watchEvent
		before, got = got, nil
		if err := read(event("first", 0) + cut); err != io.ErrUnexpectedEOF || len(got) != 1 {
			t.Errorf("stream cut after %d bytes of an event: %v after %d events, want io.ErrUnexpectedEOF after 1", len(cut), err, len(got))
		}
		got = before
	}
	want := []struct {
		name string
		pad  int
	}{{"short", 0}, {"long", 3000}, {"longer", 20000}, {"short2", 10}}
	if len(got) != len(want) {
		t.Fatalf("decoded %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		ev := got[i]
		status := fmt.Sprintf(`{"phase":"Running","message":%q}`, strings.Repeat("x", w.pad))
		if ev.Type != "MODIFIED" || ev.Object.Metadata.Name != w.name || ev.Object.Metadata.ResourceVersion != "7" || string(ev.Object.Status) != status {
			t.Errorf("event %d: %s %s, status of %d bytes", i, ev.Type, ev.Object.Metadata.Name, len(ev.Object.Status))
		}
	}
}

// A hollow agent that keeps no copy of its Node still writes the Node's
// status as it stands, with the Ready heartbeat renewed, and one that
// registers a name already taken takes the existing Node's UID.
func TestAgentWritesNodeStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cp, err := controlplane.New(ctx, controlplane.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: "memory", Clock: clk,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = cp.Run(ctx) })
	creds := cp.Credentials()
	tr, err := client.NewTransport(&client.Config{CAData: creds.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	sh := &agentShared{
		server: "https://" + cp.Addr().String(), nodeToken: creds.NodeToken,
		transports: []*http.Transport{tr}, capacity: NodeCapacity(resource.MustParse("4"), resource.MustParse("8Gi"), 110),
		clock: clk, log: slog.New(slog.DiscardHandler),
	}
	a := newAgent(sh, 0, 0)
	testtool.WaitFor(t, 20*time.Second, "the agent registered", func() error { return a.start(ctx) })
	node := func() *api.Node {
		t.Helper()
		obj, err := cp.Store().Get(nodeKind, "", a.name)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*api.Node)
	}
	registered := node()
	if a.uid == "" || a.uid != registered.UID {
		t.Fatalf("agent keeps uid %q, the Node has %q", a.uid, registered.UID)
	}

	clk.Step(5 * time.Minute)
	if err := a.writeStatus(ctx); err != nil {
		t.Fatal(err)
	}
	written := node()
	ready := false
	for _, c := range written.Status.Conditions {
		if c.Type == api.NodeReady && c.Status == api.ConditionTrue && c.LastHeartbeatTime.Time.Equal(clk.Now()) {
			ready = true
		}
	}
	if !ready || written.Labels[hostnameLabel] != a.name || !reflect.DeepEqual(written.Status.Allocatable, registered.Status.Allocatable) {
		t.Errorf("status written %+v, labels %v", written.Status, written.Labels)
	}

	again := newAgent(sh, 0, 0)
	if err := again.start(ctx); err != nil {
		t.Fatal(err)
	}
	if again.uid != registered.UID {
		t.Errorf("re-registered agent keeps uid %q, the Node has %q", again.uid, registered.UID)
	}
}
