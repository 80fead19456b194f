package git

import (
	"context"
	"errors"
	"fmt"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Where a full fetch keeps the remote's branches and tags.
const (
	remoteHeads = "refs/berth/remote/heads/"
	remoteTags  = "refs/berth/remote/tags/"
)

// fetch brings t's commit into the cache and returns it.
//
// A branch, a tag or HEAD is fetched with a forced refspec, so that a
// force-push is taken as it is: one commit deep into an empty cache, and
// then incrementally (the server leaves out what the cache's commit
// already holds). go-git asks for no thin packs, so a one-commit-deep
// fetch would bring the whole tree again each time; an incremental one
// brings what changed. When the server wrongly takes the cache for whole
// (the ref moved back to an ancestor the shallow cache never held), the
// fetch is made again one commit deep.
//
// A commit SHA is asked for directly, which servers allow when configured
// to (uploadpack.allowReachableSHA1InWant, as GitHub and GitLab are);
// otherwise every branch and tag is fetched in full and the commit looked
// for among them.
func (g *Git) fetch(ctx context.Context, am transport.AuthMethod, t target) (plumbing.Hash, error) {
	if g.cache.packs() > maxPacks {
		g.log.Info("the git cache has gathered many packfiles; making it afresh", "packs", g.cache.packs())
		if err := g.cache.reset(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if t.name == "" {
		return g.fetchCommit(ctx, am, t.commit)
	}
	spec := config.RefSpec(fmt.Sprintf("+%s:%s", t.name, headRef))
	depth := 1
	if g.cache.hasHead() {
		depth = 0
	}
	for {
		if err := g.fetchRefs(ctx, am, depth, spec); err != nil {
			return plumbing.ZeroHash, err
		}
		ref, err := g.cache.repo.Reference(headRef, true)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("fetch %s from %s: %w", t.name.Short(), g.url, err)
		}
		// The ref may have moved since it was listed: what was fetched wins.
		commit, err := g.cache.peel(ref.Hash())
		if err == nil && g.cache.hasCommit(commit) {
			return commit, nil
		}
		if depth == 1 {
			if err == nil {
				err = errors.New("the commit is not in the cache after the fetch")
			}
			return plumbing.ZeroHash, fmt.Errorf("fetch %s from %s: %w", t.name.Short(), g.url, err)
		}
		g.log.Debug("the incremental fetch missed the commit; fetching it one commit deep", "ref", t.name)
		depth = 1
	}
}

// fetchCommit fetches a commit named by its SHA.
func (g *Git) fetchCommit(ctx context.Context, am transport.AuthMethod, commit plumbing.Hash) (plumbing.Hash, error) {
	t := target{commit: commit}
	spec := config.RefSpec(fmt.Sprintf("+%s:%s", t.commit, headRef))
	err := g.fetchRefs(ctx, am, 1, spec)
	if err == nil && g.cache.hasCommit(t.commit) {
		return t.commit, nil
	}
	// Servers refuse an unadvertised commit in many ways (go-git's
	// ErrExactSHA1NotSupported, "not our ref", a closed connection), and
	// a commit that does not exist the same way: the full fetch tells.
	g.log.Debug("the commit could not be fetched by SHA; fetching every branch and tag", "commit", t.commit, "err", err)
	if g.cache.shallow() {
		// A shallow cache cannot be deepened reliably by go-git.
		if err := g.cache.reset(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	err = g.fetchRefs(ctx, am, 0,
		config.RefSpec("+refs/heads/*:"+remoteHeads+"*"),
		config.RefSpec("+refs/tags/*:"+remoteTags+"*"))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !g.cache.hasCommit(t.commit) {
		return plumbing.ZeroHash, fmt.Errorf("commit %s not found at %s: no branch or tag holds it", t.commit, g.url)
	}
	if err := g.cache.setHead(t.commit); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git cache %s: %w", g.cache.dir, err)
	}
	return t.commit, nil
}

// fetchRefs runs one fetch; up to date is not an error.
func (g *Git) fetchRefs(ctx context.Context, am transport.AuthMethod, depth int, specs ...config.RefSpec) error {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	remote := gogit.NewRemote(g.cache.st, &config.RemoteConfig{Name: "origin", URLs: []string{g.spec.URL}, Fetch: specs})
	err := remote.FetchContext(ctx, &gogit.FetchOptions{
		RefSpecs: specs,
		Depth:    depth,
		Auth:     am,
		Tags:     gogit.NoTags,
		Force:    true,
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetch from %s: %w", g.url, describe(err, am != nil))
	}
	return nil
}
