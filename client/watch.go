package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// EventType says what a watch event is about.
type EventType string

// Event types, as the watch API spells them.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
)

// Event is one change seen by a watch or an informer.
type Event struct {
	Type EventType
	// Object is the new state; for Deleted the last state; for Bookmark
	// an empty object carrying only the resourceVersion.
	Object api.Object
	// Old is the state before, for an informer's Modified and Deleted
	// events (nil from a bare Watcher).
	Old api.Object
}

// ResourceVersion is the revision the event brings the watcher to.
func (e Event) ResourceVersion() string {
	if e.Object == nil {
		return ""
	}
	return e.Object.GetResourceVersion()
}

// ErrWatchClosed is what Next returns once the server ended the stream
// cleanly (its timeout, or a shutdown): watch again from the last
// resourceVersion seen.
var ErrWatchClosed = errors.New("watch closed by the server")

// WatchOptions choose where a watch starts and what it sees.
type WatchOptions struct {
	ListOptions
	// ResourceVersion: every change after it; "" or "0": the current
	// objects as Added first, then every change.
	ResourceVersion string
	// AllowBookmarks asks for periodic Bookmark events.
	AllowBookmarks bool
	// TimeoutSeconds ends the watch after so long (0: the server's
	// default).
	TimeoutSeconds int64
}

// Watcher receives the events of one watch. Next delivers them; Stop ends
// it.
type Watcher struct {
	ctx    context.Context
	kind   *api.Kind
	body   io.ReadCloser
	cancel context.CancelFunc
	events chan Event
	done   chan struct{}
	err    error // set before events is closed
}

// Watch starts a watch of a kind in a namespace (every namespace when
// empty). Its events are decoded into the kind's Go type. A revision the
// server no longer keeps comes back from Next as an error for which
// IsGone is true.
func (c *Client) Watch(ctx context.Context, k *api.Kind, namespace string, opts WatchOptions) (*Watcher, error) {
	q := opts.query()
	q.Set("watch", "true")
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	if opts.AllowBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if opts.TimeoutSeconds > 0 {
		q.Set("timeoutSeconds", strconv.FormatInt(opts.TimeoutSeconds, 10))
	}
	ctx, cancel := context.WithCancel(ctx)
	// A watch refused (503, 429) is the caller's to start again, as an
	// informer does on its own back-off.
	resp, err := c.sendOnce().send(ctx, &request{method: http.MethodGet, path: ResourcePath(k, namespace, "", ""), query: q, stream: true})
	if err != nil {
		cancel()
		return nil, err
	}
	w := &Watcher{ctx: ctx, kind: k, body: resp.Body, cancel: cancel, events: make(chan Event), done: make(chan struct{})}
	go w.decode()
	return w, nil
}

// decode reads events off the stream until it ends or Stop.
func (w *Watcher) decode() {
	defer close(w.done)
	defer close(w.events)
	dec := json.NewDecoder(w.body)
	for {
		var raw struct {
			Type   EventType       `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&raw); err != nil {
			if err == io.EOF {
				err = ErrWatchClosed
			}
			w.err = err
			return
		}
		var ev Event
		switch raw.Type {
		case "ERROR":
			var st metav1.Status
			if err := json.Unmarshal(raw.Object, &st); err != nil {
				w.err = err
			} else {
				w.err = statusError(st)
			}
			return
		case Added, Modified, Deleted, Bookmark:
			obj, err := decodeObject(w.kind, raw.Object)
			if err != nil {
				w.err = err
				return
			}
			ev = Event{Type: raw.Type, Object: obj}
		default:
			continue
		}
		select {
		case w.events <- ev:
		case <-w.stopped():
			w.err = context.Canceled
			return
		}
	}
}

// stopped is closed by Stop (and when the watch's context ends).
func (w *Watcher) stopped() <-chan struct{} { return w.ctx.Done() }

// Next returns the next event. It blocks until one comes, ctx ends, or the
// watch ends: ErrWatchClosed when the server closed it cleanly, a
// *apierrors.StatusError for an ERROR event (IsGone for a compacted revision), or
// the stream's error.
func (w *Watcher) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-w.events:
		if !ok {
			return Event{}, w.err
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Stop ends the watch and waits for its reader to finish. It is safe to
// call more than once.
func (w *Watcher) Stop() {
	w.cancel()
	w.body.Close()
	<-w.done
}
