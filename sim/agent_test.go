package sim

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
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
