package git

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
)

// DefaultTimeout bounds one listing or one fetch of the remote.
const DefaultTimeout = 2 * time.Minute

// Jitter spreads each poll by up to ±5% of the interval, so that sources
// started together do not poll the same server together.
const Jitter = 0.05

// Options are what a Git source needs besides its Spec.
type Options struct {
	// Clock times the polls and the retries; nil is the real clock.
	Clock clock.WithTicker
	// Logger receives the source's failures; nil discards them.
	Logger *slog.Logger
	// CacheDir is where the source keeps its clone (the applier passes
	// <data dir>/sources/<name>). It must be the source's alone.
	CacheDir string
	// Rand draws the poll jitter; nil seeds one.
	Rand *rand.Rand
	// Timeout bounds one listing or fetch; 0 is DefaultTimeout.
	Timeout time.Duration
}

// Git is the source of a git repository.
type Git struct {
	spec    source.Spec
	opts    Options
	url     string // the URL as errors show it, without a password
	log     *slog.Logger
	auth    *auth
	trigger source.Signal

	// Only Run's goroutine uses these.
	cache   *repoCache
	lastID  string
	decoder source.Decoder
}

var _ source.Source = (*Git)(nil)

// New makes the source of spec, a git Spec. It checks the options; it
// reaches neither the remote nor the cache until Run.
func New(spec source.Spec, opts Options) (*Git, error) {
	if spec.Type != source.TypeGit {
		return nil, fmt.Errorf("git source %q: type is %q", spec.Name, spec.Type)
	}
	u, err := url.Parse(spec.URL)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("git source %q: URL %q is not a URL", spec.Name, spec.URL)
	}
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("git source %q: no cache folder", spec.Name)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if spec.Interval <= 0 {
		spec.Interval = source.DefaultGitInterval
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("source", spec.Name, "url", u.Redacted())
	a, err := newAuth(spec, log)
	if err != nil {
		return nil, fmt.Errorf("git source %q: %w", spec.Name, err)
	}
	return &Git{spec: spec, opts: opts, url: u.Redacted(), log: log, auth: a, trigger: source.NewSignal(), decoder: source.NewDecoder(spec)}, nil
}

// Trigger asks for a check of the remote now; it never blocks.
func (g *Git) Trigger() { g.trigger.Fire() }

// Run polls the remote until ctx is done. It fails only when the cache
// folder cannot be used.
func (g *Git) Run(ctx context.Context, out chan<- source.Revision) error {
	c, err := openCache(g.opts.CacheDir)
	if err != nil {
		return fmt.Errorf("git source %q: %w", g.spec.Name, err)
	}
	g.cache = c
	defer c.close()
	loop := &source.Loop{
		Clock:    g.opts.Clock,
		Interval: g.spec.Interval,
		Jitter:   Jitter,
		Rand:     g.opts.Rand,
		Logger:   g.log,
		Check:    g.check,
	}
	return loop.Run(ctx, out, g.trigger, nil)
}

var _ source.Fetcher = (*Git)(nil)

// Fetch lists the remote and reads the commit its ref names, as one of
// Run's polls does; the cache is opened at the first call. Use either
// Run or Fetch, not both.
func (g *Git) Fetch(ctx context.Context, have string) source.Revision {
	if g.cache == nil {
		c, err := openCache(g.opts.CacheDir)
		if err != nil {
			return source.Revision{Err: fmt.Errorf("git source %q: %w", g.spec.Name, err)}
		}
		g.cache = c
	}
	return g.check(ctx, have)
}

var _ source.RevisionFetcher = (*Git)(nil)

// FetchRevision reads the commit id again, from the cache when it still
// holds it, else fetched by its SHA.
func (g *Git) FetchRevision(ctx context.Context, id string) source.Revision {
	if !isSHA(id) {
		return source.Revision{ID: id, Err: fmt.Errorf("git source %q: revision %q is not a commit SHA", g.spec.Name, id)}
	}
	if g.cache == nil {
		c, err := openCache(g.opts.CacheDir)
		if err != nil {
			return source.Revision{ID: id, Err: fmt.Errorf("git source %q: %w", g.spec.Name, err)}
		}
		g.cache = c
	}
	commit := plumbing.NewHash(id)
	if !g.cache.hasCommit(commit) {
		am, err := g.auth.method(ctx)
		if err != nil {
			return source.Revision{ID: id, Err: err}
		}
		if _, err := g.fetchCommit(ctx, am, commit); err != nil {
			return source.Revision{ID: id, Err: describe(err, am != nil)}
		}
	}
	return g.read(commit, "")
}

// Close closes the cache Fetch opened.
func (g *Git) Close() {
	if g.cache != nil {
		g.cache.close()
		g.cache = nil
	}
}

// check lists the remote, fetches only when the ref moved to a commit the
// cache lacks, and reads the commit unless the receiver has it.
func (g *Git) check(ctx context.Context, have string) source.Revision {
	commit, err := g.sync(ctx)
	if err != nil {
		return source.Revision{ID: g.lastID, Err: err}
	}
	g.lastID = commit.String()
	return g.read(commit, have)
}

// read reads the commit's revision, or its ID alone when the receiver has
// it. Only the blobs the decoder has not seen are read.
func (g *Git) read(commit plumbing.Hash, have string) source.Revision {
	id := commit.String()
	if id == have {
		return source.Revision{ID: id}
	}
	contents, err := readTree(g.cache.st, commit, g.spec.Path, g.decoder.Has)
	if err != nil {
		return source.Revision{ID: id, Err: fmt.Errorf("git cache %s: %w", g.cache.dir, err)}
	}
	rev := g.decoder.Revision(contents, id)
	rev.Commit = commitInfo(g.cache.st, commit)
	return rev
}

// maxSubject bounds a commit subject kept in a Source's status.
const maxSubject = 256

// commitInfo is what `git log -1` says of a commit: its subject, author
// and time; nil when the commit cannot be read, which the tree just read
// makes unlikely and which costs only the description.
func commitInfo(st storer.EncodedObjectStorer, hash plumbing.Hash) *api.SourceCommit {
	c, err := object.GetCommit(st, hash)
	if err != nil {
		return nil
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	subject = strings.TrimSpace(subject)
	if len(subject) > maxSubject {
		subject = strings.ToValidUTF8(subject[:maxSubject], "") + "…"
	}
	author := c.Author.Name
	if c.Author.Email != "" {
		author += " <" + c.Author.Email + ">"
	}
	return &api.SourceCommit{Message: subject, Author: author, Time: metav1.NewTime(c.Author.When.UTC())}
}

// sync makes the cache hold the commit the ref names now and returns it.
func (g *Git) sync(ctx context.Context) (plumbing.Hash, error) {
	am, err := g.auth.method(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var t target
	if isSHA(g.spec.Ref) {
		t = target{commit: plumbing.NewHash(g.spec.Ref)}
	} else {
		refs, err := g.listRemote(ctx, am)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if t, err = resolve(refs, g.spec.Ref, g.url); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if g.cache.hasCommit(t.commit) {
		// Unchanged, or moved back to a commit fetched before (a
		// force-push to an older commit): no fetch.
		if err := g.cache.setHead(t.commit); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("git cache %s: %w", g.cache.dir, err)
		}
		return t.commit, nil
	}
	return g.fetch(ctx, am, t)
}
