package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// Timing of the change streams: a burst of changes is sent as one after
// changeDelay, at most one a changeSpacing; a comment every heartbeat
// keeps proxies from closing a quiet stream; the nodes page refreshes
// every metricsPeriod for its usage figures.
const (
	changeDelay   = 300 * time.Millisecond
	changeSpacing = time.Second
	heartbeat     = 25 * time.Second
	metricsPeriod = 15 * time.Second
)

// watchSpec is one watch a page's stream keeps.
type watchSpec struct {
	kind      *api.Kind
	namespace string
	fields    string
}

// watchesFor are the watches behind a page, from the page's path under
// /ui/ and its query; false for a path that is no page.
func watchesFor(path string, q url.Values) ([]watchSpec, bool) {
	ns := q.Get("namespace")
	parts := strings.Split(path, "/")
	switch {
	case path == "":
		return []watchSpec{{kind: sourceKind}, {kind: nodeKind}, {kind: podKind, namespace: ns},
			{kind: eventKind, namespace: ns, fields: "type=" + api.EventTypeWarning}}, true
	case path == "nodes":
		return []watchSpec{{kind: nodeKind}}, true
	case len(parts) == 2 && parts[0] == "sources" && parts[1] != "":
		ws := []watchSpec{{kind: sourceKind, fields: "metadata.name=" + parts[1]}}
		for _, r := range []string{"deployments", "statefulsets", "daemonsets", "replicasets", "cronjobs", "jobs", "pods", "services", "endpointslices", "persistentvolumeclaims", "configmaps"} {
			ws = append(ws, watchSpec{kind: api.MustLookupResource(r), namespace: ns})
		}
		return append(ws, watchSpec{kind: eventKind, fields: "involvedObject.kind=Source,involvedObject.name=" + parts[1]}), true
	case len(parts) == 4 && parts[0] == "objects":
		k, ok := api.LookupResource(parts[1])
		if !ok || k.Resource != parts[1] || parts[3] == "" || parts[2] == "" {
			return nil, false
		}
		ns := parts[2]
		if ns == "_" {
			ns = ""
		}
		if k.Namespaced == (ns == "") {
			return nil, false
		}
		return []watchSpec{{kind: k, namespace: ns, fields: "metadata.name=" + parts[3]},
			{kind: eventKind, namespace: ns, fields: "involvedObject.name=" + parts[3]}}, true
	}
	return nil, false
}

// sse writes server-sent events.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	mu sync.Mutex
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// send writes one event; data must hold no line break.
func (s *sse) send(event, data string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if event != "" {
		_, err = fmt.Fprintf(s.w, "event: %s\n", event)
	}
	if err == nil {
		_, err = fmt.Fprintf(s.w, "data: %s\n\n", data)
	}
	if err == nil {
		err = s.rc.Flush()
	}
	return err
}

func (s *sse) comment(c string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", c); err != nil {
		return err
	}
	return s.rc.Flush()
}

// changes is a page's change stream: it watches what the page shows from
// the revision the page was read at (?rv=) and sends "change" when any of
// it changed, after which the page reads itself again. "reset" says the
// stream ended for a reason a new page read must answer (the revision is
// no longer kept, a watch failed): the page reads itself and connects
// again from its new revision.
func (s *Server) changes(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	specs, ok := watchesFor(r.PathValue("path"), q)
	if !ok {
		http.Error(w, "no such page", http.StatusNotFound)
		return
	}
	rv := q.Get("rv")
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil || rv == "0" {
		http.Error(w, "rv: want the revision the page was read at", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	out := startSSE(w)
	changed := make(chan struct{}, 1)
	reset := make(chan string, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, spec := range specs {
		wg.Go(func() {
			if why := s.follow(ctx, sess.client, spec, rv, changed); why != "" {
				select {
				case reset <- why:
				default:
				}
			}
		})
	}
	var tick <-chan time.Time
	if r.PathValue("path") == "nodes" {
		t := s.clock.NewTicker(metricsPeriod)
		defer t.Stop()
		tick = t.C()
	}
	beat := s.clock.NewTicker(heartbeat)
	defer beat.Stop()
	var (
		timer   <-chan time.Time
		last    time.Time
		pending bool
	)
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case why := <-reset:
			_ = out.send("reset", why)
			return
		case <-changed:
			pending = true
			if timer == nil {
				delay := max(changeDelay, changeSpacing-s.clock.Since(last))
				timer = s.clock.After(delay)
			}
		case <-tick:
			err = out.send("change", "metrics")
		case <-timer:
			timer = nil
			if pending {
				pending, last = false, s.clock.Now()
				err = out.send("change", "watch")
			}
		case <-beat.C():
			err = out.comment("ping")
		}
		if err != nil {
			return
		}
	}
}

// follow watches one kind from rv and signals every change, until ctx
// ends ("") or the watch cannot go on (its reason). A kind the viewer may
// not watch is left out quietly: the page did not show it either.
func (s *Server) follow(ctx context.Context, c *client.Client, spec watchSpec, rv string, changed chan<- struct{}) string {
	for {
		w, err := c.Watch(ctx, spec.kind, spec.namespace, client.WatchOptions{
			ListOptions: client.ListOptions{FieldSelector: spec.fields}, ResourceVersion: rv, AllowBookmarks: true})
		if err != nil {
			if ctx.Err() != nil || client.IsForbidden(err) {
				return ""
			}
			return spec.kind.Resource + ": " + errorText(err)
		}
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				w.Stop()
				switch {
				case ctx.Err() != nil:
					return ""
				case errors.Is(err, client.ErrWatchClosed):
					// The server's watch timeout: go on from where it was.
				case client.IsGone(err):
					return "the revision the page was read at is gone"
				default:
					return spec.kind.Resource + ": " + errorText(err)
				}
				break
			}
			if r := ev.ResourceVersion(); r != "" {
				rv = r
			}
			if ev.Type == client.Bookmark {
				continue
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
}

// Logs: the last defaultTail lines unless ?tail= says otherwise (at most
// maxTail), lines cut at maxLine bytes.
const (
	defaultTail = 500
	maxTail     = 10000
	maxLine     = 16 << 10
)

// logOptions reads the logs stream's query.
func logOptions(q url.Values) (url.Values, error) {
	out := url.Values{}
	if c := q.Get("container"); c != "" {
		if len(c) > 253 || strings.ContainsAny(c, "/ \r\n") {
			return nil, fmt.Errorf("container %q: not a container name", c)
		}
		out.Set("container", c)
	}
	tail := defaultTail
	if t := q.Get("tail"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("tail %q: want a number of lines", t)
		}
		tail = min(n, maxTail)
	}
	out.Set("tailLines", strconv.Itoa(tail))
	switch q.Get("previous") {
	case "", "0", "false":
	case "1", "true":
		out.Set("previous", "true")
	default:
		return nil, fmt.Errorf("previous %q: want true or false", q.Get("previous"))
	}
	switch q.Get("follow") {
	case "", "1", "true":
		if out.Get("previous") == "" {
			out.Set("follow", "true")
		}
	case "0", "false":
	default:
		return nil, fmt.Errorf("follow %q: want true or false", q.Get("follow"))
	}
	out.Set("timestamps", "false")
	return out, nil
}

// logs streams a pod's log as server-sent events, one "line" event per
// line; "failure" says why there is none, "end" that it ended.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	q, err := logOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	path := client.ResourcePath(podKind, ns, pod, "log")
	resp, err := sess.client.Do(ctx, http.MethodGet, path, q, nil, "")
	out := startSSE(w)
	if err != nil {
		_ = out.send("failure", oneLine(errorText(err)))
		_ = out.send("end", "no log")
		return
	}
	defer resp.Body.Close()
	lines := make(chan string)
	done := make(chan error, 1)
	go func() {
		done <- readLines(resp.Body, func(l string) bool {
			select {
			case lines <- l:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	beat := s.clock.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			resp.Body.Close()
			<-done
			return
		case l := <-lines:
			err = out.send("line", l)
		case rerr := <-done:
			if rerr != nil && ctx.Err() == nil {
				_ = out.send("failure", oneLine(rerr.Error()))
			}
			_ = out.send("end", "the log ended")
			return
		case <-beat.C():
			err = out.comment("ping")
		}
		if err != nil {
			cancel()
			resp.Body.Close()
			<-done
			return
		}
	}
}

// readLines calls fn with each line of r (cut at maxLine bytes, without
// its line break or carriage return) until r ends or fn says stop.
func readLines(r io.Reader, fn func(string) bool) error {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || err == nil {
			l := oneLine(string(line))
			if isPrefix {
				l += " …"
				for isPrefix && err == nil {
					_, isPrefix, err = br.ReadLine()
				}
			}
			if !fn(l) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// oneLine drops the carriage returns and line breaks a server-sent
// event's data may not hold.
func oneLine(s string) string {
	return strings.NewReplacer("\r", "", "\n", " ").Replace(s)
}
