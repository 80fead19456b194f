package cri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// The kubelet's defaults of image garbage collection.
const (
	DefaultImageGCHighThreshold = 85
	DefaultImageGCLowThreshold  = 80
	DefaultImageMinimumGCAge    = 2 * time.Minute
	// DefaultImageGCPeriod is how often the disk is looked at.
	DefaultImageGCPeriod = 5 * time.Minute
)

// ImageGCPolicy is when images are removed, as the kubelet's
// --image-gc-high-threshold, --image-gc-low-threshold and
// --minimum-image-ttl-duration say: once the image file system is
// HighThresholdPercent full, unused images are removed, least recently
// used first, until it is LowThresholdPercent full; none younger than
// MinAge (since the runtime first had it), none a container uses (running
// or not) and none of Keep (the sandbox image) or pinned by the runtime.
type ImageGCPolicy struct {
	HighThresholdPercent, LowThresholdPercent int
	MinAge                                    time.Duration
	Keep                                      []string
}

// Validate says what is wrong with p, naming the flag.
func (p ImageGCPolicy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("--image-gc-high-threshold %d: want 0 to 100", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("--image-gc-low-threshold %d: want 0 to 100", p.LowThresholdPercent)
	case p.LowThresholdPercent >= p.HighThresholdPercent && p.HighThresholdPercent != 100:
		return fmt.Errorf("--image-gc-low-threshold %d must be below --image-gc-high-threshold %d", p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MinAge < 0:
		return fmt.Errorf("--minimum-image-ttl-duration %s: negative", p.MinAge)
	}
	return nil
}

// gcImage is what image garbage collection knows of one image.
type gcImage struct {
	id                  string
	size                uint64
	firstSeen, lastUsed time.Time
	inUse, keep         bool
}

// imagesToFree is the kubelet's choice, a pure function: nothing while the
// file system (capacity bytes, available free) is under the high
// threshold; else the unused images at least minAge old, least recently
// used first (then the oldest), until what they free brings it down to
// the low threshold.
func imagesToFree(images []gcImage, capacity, available uint64, p ImageGCPolicy, now time.Time) []gcImage {
	if capacity == 0 || p.HighThresholdPercent >= 100 {
		return nil
	}
	usedPercent := 100 - int(available*100/capacity)
	if usedPercent < p.HighThresholdPercent {
		return nil
	}
	target := capacity * uint64(100-p.LowThresholdPercent) / 100
	if available >= target {
		return nil
	}
	toFree := target - available
	var cands []gcImage
	for _, im := range images {
		if im.inUse || im.keep || now.Sub(im.firstSeen) < p.MinAge {
			continue
		}
		cands = append(cands, im)
	}
	slices.SortStableFunc(cands, func(a, b gcImage) int {
		if c := a.lastUsed.Compare(b.lastUsed); c != 0 {
			return c
		}
		return a.firstSeen.Compare(b.firstSeen)
	})
	var out []gcImage
	var freed uint64
	for _, im := range cands {
		if freed >= toFree {
			break
		}
		out = append(out, im)
		freed += im.size
	}
	return out
}

// ImageGC removes images by an ImageGCPolicy, remembering when it first
// saw each image and when a container last used it.
type ImageGC struct {
	r      *Runtime
	policy ImageGCPolicy
	clock  clock.WithTicker
	// statfs reads the image file system's capacity and free bytes.
	statfs func(path string) (capacity, available uint64, err error)

	mu     sync.Mutex
	images map[string]*gcImage
}

// NewImageGC is r's image garbage collector; the clock times MinAge and
// Run's period.
func NewImageGC(r *Runtime, p ImageGCPolicy, clk clock.WithTicker) *ImageGC {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ImageGC{r: r, policy: p, clock: clk, statfs: statfs, images: map[string]*gcImage{}}
}

func statfs(path string) (uint64, uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}

// Run collects every period until ctx ends, as the kubelet's image
// manager does, after looking once at once so images' ages count from
// the agent's start.
func (g *ImageGC) Run(ctx context.Context, period time.Duration) {
	if _, err := g.detect(ctx); err != nil && ctx.Err() == nil {
		g.r.o.Logger.Warn("image garbage collection", "err", err)
	}
	t := g.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if removed, err := g.Collect(ctx); err != nil && ctx.Err() == nil {
			g.r.o.Logger.Warn("image garbage collection", "err", err)
		} else if len(removed) > 0 {
			g.r.o.Logger.Info("image garbage collection", "removed", removed)
		}
	}
}

// detect lists the images and the containers and records what is new and
// what is in use.
func (g *ImageGC) detect(ctx context.Context) ([]gcImage, error) {
	imgs, err := g.r.is.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	cs, err := g.r.rs.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range cs {
		used[c.ImageRef] = true
		if c.Image != nil {
			used[c.Image.Image] = true
		}
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]bool{}
	var out []gcImage
	for _, im := range imgs {
		names := append(append([]string{im.Id}, im.RepoTags...), im.RepoDigests...)
		rec := g.images[im.Id]
		if rec == nil {
			rec = &gcImage{id: im.Id, firstSeen: now}
			g.images[im.Id] = rec
		}
		seen[im.Id] = true
		rec.size = im.Size
		rec.inUse = slices.ContainsFunc(names, func(n string) bool { return used[n] })
		rec.keep = im.Pinned || slices.ContainsFunc(names, func(n string) bool { return slices.Contains(g.policy.Keep, n) })
		if rec.inUse {
			rec.lastUsed = now
		}
		out = append(out, *rec)
	}
	for id := range g.images {
		if !seen[id] {
			delete(g.images, id)
		}
	}
	return out, nil
}

// Collect removes what the policy says should go now, and says which
// images it removed.
func (g *ImageGC) Collect(ctx context.Context) ([]string, error) {
	imgs, err := g.detect(ctx)
	if err != nil {
		return nil, err
	}
	fs, err := g.r.is.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("image file system: %w", err)
	}
	if len(fs.GetImageFilesystems()) == 0 || fs.ImageFilesystems[0].GetFsId().GetMountpoint() == "" {
		return nil, errors.New("image file system: the runtime names none")
	}
	mount := fs.ImageFilesystems[0].FsId.Mountpoint
	capacity, available, err := g.statfs(mount)
	if err != nil {
		return nil, fmt.Errorf("image file system %s: %w", mount, err)
	}
	var removed []string
	var errs []error
	for _, im := range imagesToFree(imgs, capacity, available, g.policy, g.clock.Now()) {
		if err := g.r.is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: im.id}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s: %w", im.id, err))
			continue
		}
		removed = append(removed, im.id)
		g.mu.Lock()
		delete(g.images, im.id)
		g.mu.Unlock()
	}
	return removed, errors.Join(errs...)
}
