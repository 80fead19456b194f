package sim

import (
	"bufio"
	"errors"
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
	stream := event("short", 0) + event("long", 3000) + event("longer", 20000) + event("short2", 10) + `{"type":"ADDED"`
	events := eventLines{r: bufio.NewReaderSize(strings.NewReader(stream), 512)}
	var got []watchEvent
	for {
		var ev watchEvent
		err := events.decode(&ev)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("after %d events: %v", len(got), err)
			}
			break
		}
		got = append(got, ev)
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
