package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/source/dir"
	sourcehttp "github.com/berth-dev/berth/source/http"
)

// StaticOptions are what StaticPods needs.
type StaticOptions struct {
	NodeName string
	// ManifestDir is --manifest-dir: every manifest file directly in it.
	ManifestDir string
	// ManifestURL is --manifest-url: one YAML or JSON stream, polled.
	ManifestURL string
	// Interval is the relist period of the directory and the poll period
	// of the URL; 0 is the sources' defaults.
	Interval time.Duration
	// OnChange receives the whole desired set of static pods each time it
	// changes. The pods are the receiver's.
	OnChange func(pods []*api.Pod)
	// OnError receives what kept a file (or the URL's body) from being
	// parsed; the file's last good pods keep running. It reports the error
	// (nil: a warning on Logger). A source that cannot be read at all (the
	// URL down) is not passed here: the source's poll loop logs that on
	// Logger, once per outage, and keeps the last good pods.
	OnError func(err error)
	Clock   clock.WithTicker
	Logger  *slog.Logger
}

// StaticPods reads the node's static pods from a directory, a URL or both,
// with no API server needed, so that a node runs them alone (standalone
// mode) and before it can reach the control plane.
type StaticPods struct {
	o       StaticOptions
	sources []*staticSource

	last []string // UIDs of the set OnChange was last given
	sent bool
}

// staticSource is one place static pods come from and what it last held.
type staticSource struct {
	src   source.Source
	kind  string // pods.ConfigSourceFile or pods.ConfigSourceHTTP
	base  string // the directory, or "" for a URL (its file name is the URL)
	files map[string][]*api.Pod
	// reported holds the error last reported for each broken file.
	reported map[string]string
	revs     chan source.Revision
	closed   bool
}

// NewStaticPods checks the options and makes the sources; Run reads them.
func NewStaticPods(o StaticOptions) (*StaticPods, error) {
	if o.NodeName == "" {
		return nil, errors.New("static pods: no node name")
	}
	if o.ManifestDir == "" && o.ManifestURL == "" {
		return nil, errors.New("static pods: neither a manifest dir nor a manifest URL")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnChange == nil {
		o.OnChange = func([]*api.Pod) {}
	}
	if o.OnError == nil {
		log := o.Logger
		o.OnError = func(err error) { log.Warn("static pods", "err", err) }
	}
	s := &StaticPods{o: o}
	if o.ManifestDir != "" {
		root, err := filepath.Abs(o.ManifestDir)
		if err != nil {
			return nil, fmt.Errorf("static pods %s: %w", o.ManifestDir, err)
		}
		d, err := dir.New(source.Spec{Name: "static", Type: source.TypeDir, URL: root, Interval: o.Interval},
			dir.Options{Clock: o.Clock, Logger: o.Logger, Flat: true})
		if err != nil {
			return nil, fmt.Errorf("static pods %s: %w", o.ManifestDir, err)
		}
		s.sources = append(s.sources, &staticSource{src: d, kind: pods.ConfigSourceFile, base: root})
	}
	if o.ManifestURL != "" {
		h, err := sourcehttp.New(source.Spec{Name: "static", Type: source.TypeHTTP, URL: o.ManifestURL, Interval: o.Interval},
			sourcehttp.Options{Clock: o.Clock, Logger: o.Logger})
		if err != nil {
			return nil, fmt.Errorf("static pods %s: %w", o.ManifestURL, err)
		}
		s.sources = append(s.sources, &staticSource{src: h, kind: pods.ConfigSourceHTTP})
	}
	for _, src := range s.sources {
		src.files = map[string][]*api.Pod{}
		src.revs = make(chan source.Revision)
	}
	return s, nil
}

// Run reads the sources until ctx is done, calling OnChange and OnError
// from this goroutine.
func (s *StaticPods) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(s.sources))
	for _, src := range s.sources {
		wg.Go(func() {
			defer close(src.revs)
			if err := src.src.Run(ctx, src.revs); err != nil {
				errs <- fmt.Errorf("static pods: %w", err)
			}
		})
	}
	defer wg.Wait()
	cases := func() (a, b chan source.Revision) {
		for i, src := range s.sources {
			if src.closed {
				continue
			}
			if i == 0 {
				a = src.revs
			} else {
				b = src.revs
			}
		}
		return a, b
	}
	for {
		a, b := cases()
		if a == nil && b == nil {
			select {
			case err := <-errs:
				return err
			default:
				return nil
			}
		}
		var (
			rev source.Revision
			ok  bool
			src *staticSource
		)
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case rev, ok = <-a:
			src = s.sources[0]
		case rev, ok = <-b:
			src = s.sources[len(s.sources)-1]
		}
		if !ok {
			src.closed = true
			continue
		}
		for _, err := range s.apply(src, rev) {
			s.o.OnError(err)
		}
		s.emit()
	}
}

// apply takes in one revision of a source: each file that reads well
// replaces its pods, each that does not keeps its last good ones.
func (s *StaticPods) apply(src *staticSource, rev source.Revision) []error {
	if rev.Err != nil {
		return nil // the source's loop has logged it, once per outage
	}
	objs := map[string][]*api.Decoded{}
	for _, d := range rev.Objects {
		objs[d.File] = append(objs[d.File], d)
	}
	bad := map[string]api.ErrorList{}
	for _, e := range rev.Errors {
		bad[e.File] = append(bad[e.File], e)
	}
	var errs []error
	files := map[string][]*api.Pod{}
	reported := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(joinKeys(objs, bad))) {
		var err error
		if l := bad[name]; len(l) > 0 {
			err = fmt.Errorf("static pods: %w", l.Err())
		} else if pods, perr := s.pods(src, name, objs[name]); perr != nil {
			err = perr
		} else {
			files[name] = pods
			continue
		}
		if old, ok := src.files[name]; ok {
			files[name] = old
		}
		// A file still broken the same way is not reported again when
		// another file changes.
		reported[name] = err.Error()
		if src.reported[name] != err.Error() {
			errs = append(errs, err)
		}
	}
	src.files = files
	src.reported = reported
	return errs
}

func joinKeys(a map[string][]*api.Decoded, b map[string]api.ErrorList) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// pods turns one file's objects into static pods; any that is not a valid
// Pod fails the whole file.
func (s *StaticPods) pods(src *staticSource, file string, objs []*api.Decoded) ([]*api.Pod, error) {
	location := file
	if src.base != "" && !filepath.IsAbs(file) {
		location = filepath.Join(src.base, file)
	}
	var out []*api.Pod
	for _, d := range objs {
		pod, ok := d.Object.(*api.Pod)
		if !ok {
			return nil, fmt.Errorf("static pods %s: document %d: %s is not a Pod: a static pod manifest holds only Pods", location, d.Doc, d.Object.GetObjectKind().GroupVersionKind().Kind)
		}
		p, err := StaticPod(pod, s.o.NodeName, src.kind, location)
		if err != nil {
			return nil, fmt.Errorf("static pods %s: document %d: %w", location, d.Doc, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// StaticPod makes the pod the agent runs from a manifest's pod: named
// <name>-<node>, in namespace default unless it says, bound to the node,
// defaulted and validated, with a UID that hashes the node, the manifest's
// location and the pod, so that an unchanged manifest keeps its UID across
// agent restarts and an edited one gets a new one (the kubelet's config
// hash). configSource is pods.ConfigSourceFile or pods.ConfigSourceHTTP.
func StaticPod(manifest *api.Pod, node, configSource, location string) (*api.Pod, error) {
	p := manifest.DeepCopy()
	p.Name = p.Name + "-" + node
	p.Spec.NodeName = node
	p.UID = ""
	p.ResourceVersion = ""
	api.Default(p)
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(node), []byte(location), data} {
		h.Write(part)
		h.Write([]byte{0})
	}
	hash := hex.EncodeToString(h.Sum(nil)[:16])
	p.UID = types.UID(hash)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[pods.AnnotationConfigSource] = configSource
	p.Annotations[pods.AnnotationConfigHash] = hash
	if errs := api.Validate(p); len(errs) > 0 {
		return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, errs.ToAggregate())
	}
	// As in Kubernetes, a static pod names no other API object: the
	// server refuses its mirror pod, and the node may read none of them.
	if refs := api.StaticPodReferences(&p.Spec); len(refs) > 0 {
		return nil, fmt.Errorf("pod %s/%s: a static pod may not refer to other API objects: %s", p.Namespace, p.Name, strings.Join(refs, "; "))
	}
	return p, nil
}

// emit calls OnChange when the set of pods differs from the last one sent.
func (s *StaticPods) emit() {
	var all []*api.Pod
	seen := map[string]string{}
	for _, src := range s.sources {
		for _, file := range slices.Sorted(maps.Keys(src.files)) {
			for _, p := range src.files[file] {
				key := p.Namespace + "/" + p.Name
				if where, dup := seen[key]; dup {
					err := fmt.Errorf("static pods: pod %s is defined in %s and in %s; the first is kept", key, where, p.Annotations[pods.AnnotationConfigSource]+":"+file)
					s.o.OnError(err)
					continue
				}
				seen[key] = src.kind + ":" + file
				all = append(all, p)
			}
		}
	}
	slices.SortFunc(all, func(a, b *api.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	uids := make([]string, len(all))
	for i, p := range all {
		uids[i] = string(p.UID)
	}
	if s.sent && slices.Equal(uids, s.last) {
		return
	}
	s.sent, s.last = true, uids
	out := make([]*api.Pod, len(all))
	for i, p := range all {
		out[i] = p.DeepCopy()
	}
	s.o.OnChange(out)
}
