package helmrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/source"
)

// Timeout bounds one read of the index or of a chart package.
const Timeout = 30 * time.Second

// maxIndex and maxChart bound what is read from the repository.
const (
	maxIndex = 32 << 20
	maxChart = 20 << 20
)

// chartDir is the folder the chart's files are put under for the build.
const chartDir = "chart"

// Options are what a Repo needs besides its spec.
type Options struct {
	Logger *slog.Logger
	// Client makes the requests; a client with Timeout when nil.
	Client *nethttp.Client
}

// Repo is the source of one chart of a chart repository.
type Repo struct {
	spec    source.Spec
	index   string // the index's URL
	client  *nethttp.Client
	log     *slog.Logger
	decoder source.Decoder
}

var _ source.Fetcher = (*Repo)(nil)

// New makes the source of spec, a TypeHelm Spec whose URL is the chart
// repository and Chart the chart's name.
func New(spec source.Spec, opts Options) (*Repo, error) {
	if spec.Type != source.TypeHelm {
		return nil, fmt.Errorf("helm source %q: type is %q", spec.Name, spec.Type)
	}
	u, err := url.Parse(spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("helm source %q: %q is not an http(s) URL", spec.Name, spec.URL)
	}
	if spec.Chart == "" {
		return nil, fmt.Errorf("helm source %q: no chart named (spec.helm.chart)", spec.Name)
	}
	if spec.ChartVersion != "" {
		if _, err := semver.NewConstraint(spec.ChartVersion); err != nil {
			return nil, fmt.Errorf("helm source %q: spec.helm.version %q: %v", spec.Name, spec.ChartVersion, err)
		}
	}
	c := opts.Client
	if c == nil {
		c = &nethttp.Client{Timeout: Timeout}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	return &Repo{spec: spec, index: u.String(), client: c, log: log, decoder: source.NewDecoder(spec)}, nil
}

// index is the part of a repository's index.yaml berth reads.
type index struct {
	APIVersion string                    `json:"apiVersion"`
	Entries    map[string][]*chartRecord `json:"entries"`
}

type chartRecord struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	AppVersion string   `json:"appVersion"`
	URLs       []string `json:"urls"`
	Digest     string   `json:"digest"`
}

// Fetch reads the index, picks the newest version the spec allows and,
// unless it is the revision have, downloads and reads the chart. The
// revision's ID names the chart, its version and the package's digest.
func (r *Repo) Fetch(ctx context.Context, have string) source.Revision {
	rec, err := r.pick(ctx)
	if err != nil {
		return source.Revision{Err: err}
	}
	data, err := r.get(ctx, r.chartURL(rec), maxChart)
	if err != nil {
		return source.Revision{Err: err}
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if rec.Digest != "" && !strings.EqualFold(rec.Digest, digest) {
		return source.Revision{Err: fmt.Errorf("chart %s-%s from %s: its digest is %s, the index says %s", rec.Name, rec.Version, r.index, digest, rec.Digest)}
	}
	id := fmt.Sprintf("%s-%s@sha256:%s", rec.Name, rec.Version, digest)
	if id == have {
		return source.Revision{ID: id}
	}
	files, err := loader.LoadArchiveFiles(strings.NewReader(string(data)))
	if err != nil {
		return source.Revision{ID: id, Err: fmt.Errorf("chart %s-%s from %s: %v", rec.Name, rec.Version, r.index, err)}
	}
	c := source.Contents{BuildDir: chartDir}
	for _, f := range files {
		c.Files = append(c.Files, source.File{Name: path.Join(chartDir, f.Name), Data: f.Data})
	}
	return r.decoder.Revision(c, id)
}

// Close has nothing to let go of.
func (r *Repo) Close() {}

// pick is the newest version of the chart the spec's range allows.
func (r *Repo) pick(ctx context.Context) (*chartRecord, error) {
	data, err := r.get(ctx, r.index, maxIndex)
	if err != nil {
		return nil, err
	}
	return choose(r.index, data, r.spec.Chart, r.spec.ChartVersion)
}

// choose picks from an index.yaml (read from where) the newest version of
// chart that versions allows ("" is the newest stable one).
func choose(where string, data []byte, chart, versions string) (*chartRecord, error) {
	var idx index
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	var constraint *semver.Constraints
	if versions != "" {
		var err error
		if constraint, err = semver.NewConstraint(versions); err != nil {
			return nil, fmt.Errorf("spec.helm.version %q: %v", versions, err)
		}
	}
	var best *chartRecord
	var bestV *semver.Version
	for _, rec := range idx.Entries[chart] {
		if rec == nil {
			continue
		}
		v, err := semver.NewVersion(rec.Version)
		if err != nil || len(rec.URLs) == 0 {
			continue
		}
		if constraint != nil && !constraint.Check(v) {
			continue
		}
		if constraint == nil && v.Prerelease() != "" {
			continue // as helm, the newest stable version by default
		}
		if best == nil || v.GreaterThan(bestV) {
			best, bestV = rec, v
		}
	}
	if best == nil {
		if len(idx.Entries[chart]) == 0 {
			return nil, fmt.Errorf("%s: no chart %q", where, chart)
		}
		return nil, fmt.Errorf("%s: no version of chart %q matches %q", where, chart, versions)
	}
	return best, nil
}

// chartURL resolves the package's URL against the index's.
func (r *Repo) chartURL(rec *chartRecord) string {
	base, _ := url.Parse(r.index)
	u, err := base.Parse(rec.URLs[0])
	if err != nil {
		return rec.URLs[0]
	}
	return u.String()
}

// get reads a URL whole, at most max bytes.
func (r *Repo) get(ctx context.Context, u string, max int64) ([]byte, error) {
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != nethttp.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", u, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", u, max)
	}
	return data, nil
}
