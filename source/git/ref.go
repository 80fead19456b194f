package git

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// target is what the source's ref names at the remote now.
type target struct {
	// name is the remote ref to fetch; "" when the ref is a commit SHA.
	name plumbing.ReferenceName
	// commit is the commit it names (an annotated tag peeled).
	commit plumbing.Hash
}

// isSHA reports whether ref is a full commit SHA.
func isSHA(ref string) bool {
	if len(ref) != 40 {
		return false
	}
	for _, c := range ref {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// listRemote lists the remote's refs (git ls-remote), annotated tags
// peeled as "<tag>^{}".
func (g *Git) listRemote(ctx context.Context, am transport.AuthMethod) (map[plumbing.ReferenceName]*plumbing.Reference, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{g.spec.URL}})
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: am, PeelingOption: gogit.AppendPeeled})
	if err != nil {
		return nil, fmt.Errorf("list refs of %s: %w", g.url, describe(err, am != nil))
	}
	byName := make(map[plumbing.ReferenceName]*plumbing.Reference, len(refs))
	for _, r := range refs {
		byName[r.Name()] = r
	}
	return byName, nil
}

// resolve finds the commit the source's ref names at the remote: the
// remote's HEAD when no ref is given, else, as git itself reads a name,
// refs/<ref> spelled out, then a tag, then a branch.
func resolve(refs map[plumbing.ReferenceName]*plumbing.Reference, ref, url string) (target, error) {
	if ref == "" {
		head, ok := refs[plumbing.HEAD]
		if !ok {
			return target{}, fmt.Errorf("%s has no HEAD (an empty repository?); give ref=", url)
		}
		if head.Type() == plumbing.SymbolicReference {
			branch, ok := refs[head.Target()]
			if !ok {
				return target{}, fmt.Errorf("HEAD of %s names %s, which does not exist (an empty repository?)", url, head.Target().Short())
			}
			return target{name: branch.Name(), commit: branch.Hash()}, nil
		}
		return target{name: plumbing.HEAD, commit: head.Hash()}, nil
	}
	candidates := []plumbing.ReferenceName{
		plumbing.ReferenceName("refs/tags/" + ref),
		plumbing.ReferenceName("refs/heads/" + ref),
	}
	if strings.HasPrefix(ref, "refs/") {
		candidates = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	for _, name := range candidates {
		r, ok := refs[name]
		if !ok || r.Type() != plumbing.HashReference {
			continue
		}
		commit := r.Hash()
		if peeled, ok := refs[name+"^{}"]; ok {
			commit = peeled.Hash()
		}
		return target{name: name, commit: commit}, nil
	}
	if len(ref) < 40 && len(ref) >= 4 && isHexPrefix(ref) {
		return target{}, fmt.Errorf("ref %q is not a branch or tag of %s; a commit must be given as its full 40-character SHA", ref, url)
	}
	return target{}, fmt.Errorf("ref %q not found at %s: no such branch or tag (deleted?)", ref, url)
}

func isHexPrefix(s string) bool {
	return isSHA(s + strings.Repeat("0", 40-len(s)))
}

// describe adds to go-git's terse transport errors what to do about them,
// on one line (the server's text may hold several).
func describe(err error, withCredentials bool) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		msg += " (or no access to it)"
	case errors.Is(err, transport.ErrAuthenticationRequired) && withCredentials:
		msg += ": the credentials were refused"
	case errors.Is(err, transport.ErrAuthenticationRequired):
		msg += ": give username= and password-file= (https) or ssh-key-file= (ssh)"
	case errors.Is(err, transport.ErrAuthorizationFailed):
		msg += ": the credentials were refused"
	case errors.Is(err, context.DeadlineExceeded):
		msg = "timed out: " + msg
	}
	return &transportError{msg: msg, err: err}
}

// transportError is a transport error reworded, still matching what it wraps.
type transportError struct {
	msg string
	err error
}

func (e *transportError) Error() string { return e.msg }
func (e *transportError) Unwrap() error { return e.err }
