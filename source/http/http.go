package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	nethttp "net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
)

// Limits of one poll.
const (
	// Timeout bounds one request, body included.
	Timeout = 10 * time.Second
	// MaxRedirects is how many redirects one request follows.
	MaxRedirects = 5
)

// Jitter spreads each poll by up to ±5% of the interval.
const Jitter = 0.05

// Options are what an HTTP source needs besides its Spec.
type Options struct {
	// Clock times the polls and the retries; nil is the real clock.
	Clock clock.WithTicker
	// Logger receives the source's failures; nil discards them.
	Logger *slog.Logger
	// Transport makes the requests (a test server's, a proxy's); nil is
	// http.DefaultTransport. The timeout and the redirect limit are the
	// source's whatever the transport.
	Transport nethttp.RoundTripper
	// Rand draws the poll jitter; nil seeds one.
	Rand *rand.Rand
}

// HTTP is the source of a URL.
type HTTP struct {
	spec    source.Spec
	opts    Options
	name    string // the URL as files and errors name it, without a password
	log     *slog.Logger
	client  *nethttp.Client
	trigger source.Signal

	// Only Run's goroutine uses these: the last document served, to
	// decode again when the receiver needs it and the server says 304.
	etag, lastModified string
	cached             bool // body and bodyID hold the last document read
	body               []byte
	tooBig             bool // the last document was over the cap
	bodyID             string
	decoder            source.Decoder
}

var _ source.Source = (*HTTP)(nil)

// New makes the source of spec, an http Spec.
func New(spec source.Spec, opts Options) (*HTTP, error) {
	if spec.Type != source.TypeHTTP {
		return nil, fmt.Errorf("http source %q: type is %q", spec.Name, spec.Type)
	}
	u, err := url.Parse(spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http source %q: %q is not an http(s) URL", spec.Name, spec.URL)
	}
	if _, ok := spec.Options[source.OptionPasswordFile]; ok && spec.Options[source.OptionUsername] == "" && u.User.Username() == "" {
		return nil, fmt.Errorf("http source %q: %s= needs %s=", spec.Name, source.OptionPasswordFile, source.OptionUsername)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if spec.Interval <= 0 {
		spec.Interval = source.DefaultHTTPInterval
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := u.Redacted()
	transport := opts.Transport
	if transport == nil {
		transport = nethttp.DefaultTransport
	}
	client := &nethttp.Client{
		Transport: transport,
		Timeout:   Timeout,
		CheckRedirect: func(req *nethttp.Request, via []*nethttp.Request) error {
			if len(via) > MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", MaxRedirects)
			}
			return nil
		},
	}
	return &HTTP{
		spec: spec, opts: opts, name: name, client: client, trigger: source.NewSignal(), decoder: source.NewDecoder(spec),
		log: log.With("source", spec.Name, "url", name),
	}, nil
}

// Trigger asks for a poll now; it never blocks.
func (h *HTTP) Trigger() { h.trigger.Fire() }

// Run polls the URL until ctx is done.
func (h *HTTP) Run(ctx context.Context, out chan<- source.Revision) error {
	loop := &source.Loop{
		Clock:    h.opts.Clock,
		Interval: h.spec.Interval,
		Jitter:   Jitter,
		Rand:     h.opts.Rand,
		Logger:   h.log,
		Check:    h.poll,
		// A trigger (berth reconcile, a webhook) says the document has
		// changed: a validator of one-second granularity (Last-Modified)
		// may not know it yet, so ask for the document whole.
		Triggered: h.fetch,
	}
	return loop.Run(ctx, out, h.trigger, nil)
}

var _ source.Fetcher = (*HTTP)(nil)

// Fetch gets the document: conditionally when the caller holds a
// revision (have), whole otherwise.
func (h *HTTP) Fetch(ctx context.Context, have string) source.Revision {
	return h.check(ctx, have, have != "")
}

// Close does nothing: an HTTP source holds nothing open.
func (h *HTTP) Close() {}

// poll is the periodic check: a conditional GET.
func (h *HTTP) poll(ctx context.Context, have string) source.Revision {
	return h.check(ctx, have, true)
}

// fetch is the check a Trigger asks for: a GET without validators.
func (h *HTTP) fetch(ctx context.Context, have string) source.Revision {
	return h.check(ctx, have, false)
}

// check makes one GET, conditional on the last document's validators
// when conditional is set. A 304 (or the same body) is the last revision
// again; a body over source.MaxFileSize is a revision error naming the
// URL; anything but 200 and 304 is a failed check.
func (h *HTTP) check(ctx context.Context, have string, conditional bool) source.Revision {
	body, changed, err := h.get(ctx, conditional)
	if err != nil {
		return source.Revision{ID: h.bodyID, Err: err}
	}
	if changed {
		h.body, h.tooBig, h.cached = body, len(body) > source.MaxFileSize, true
		if h.tooBig {
			h.body = nil
		}
		h.bodyID = h.contents().ContentHash()
	}
	if h.bodyID == have {
		return source.Revision{ID: h.bodyID}
	}
	return h.decoder.Revision(h.contents(), h.bodyID)
}

// contents is the last body as the one file of a revision.
func (h *HTTP) contents() source.Contents {
	if h.tooBig {
		return source.Contents{Problems: []*api.Error{source.TooBig(h.name, -1)}}
	}
	return source.Contents{Files: []source.File{{Name: h.name, Data: h.body}}}
}

// get fetches the document, with the last one's validators when
// conditional is set; changed is false on a 304.
func (h *HTTP) get(ctx context.Context, conditional bool) (body []byte, changed bool, err error) {
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, h.spec.URL, nil)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", h.name, err)
	}
	req.Header.Set("Accept", "application/yaml, application/json;q=0.9, */*;q=0.8")
	if conditional && h.cached && !h.tooBig {
		if h.etag != "" {
			req.Header.Set("If-None-Match", h.etag)
		}
		if h.lastModified != "" {
			req.Header.Set("If-Modified-Since", h.lastModified)
		}
	}
	if err := h.setAuth(req); err != nil {
		return nil, false, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and the URL
		}
		return nil, false, fmt.Errorf("GET %s: %w", h.name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == nethttp.StatusNotModified && h.cached && !h.tooBig:
		return nil, false, nil
	case resp.StatusCode != nethttp.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, false, fmt.Errorf("GET %s: %s", h.name, resp.Status)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, source.MaxFileSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: reading the body: %w", h.name, err)
	}
	if len(body) > source.MaxFileSize {
		// Refused: remember nothing of it, so the next poll asks again in full.
		h.etag, h.lastModified = "", ""
		return body, true, nil
	}
	h.etag = resp.Header.Get("ETag")
	h.lastModified = resp.Header.Get("Last-Modified")
	return body, true, nil
}

// setAuth adds basic authentication from username= and password-file=,
// the file read at each request.
func (h *HTTP) setAuth(req *nethttp.Request) error {
	user := h.spec.Options[source.OptionUsername]
	file := h.spec.Options[source.OptionPasswordFile]
	if user == "" && file == "" {
		return nil
	}
	var password string
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("read %s: %w", source.OptionPasswordFile, err)
		}
		password = strings.TrimRight(string(data), "\r\n")
	}
	req.SetBasicAuth(user, password)
	return nil
}
