package testtool

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitRepo is a bare repository made with the git program and a clone that
// commits and pushes to it, as a user's laptop would: the place a git
// Source of a test fetches from. Git runs with no user or system
// configuration, so what a developer's ~/.gitconfig says changes nothing.
type GitRepo struct {
	t    testing.TB
	git  string
	home string
	// Bare is the repository a Source fetches from; Work is the clone.
	Bare, Work string
}

// NewGitRepo makes name.git and its clone in a temporary folder, with
// main as the first branch. It skips the test when git is missing.
func NewGitRepo(t testing.TB, name string) *GitRepo {
	t.Helper()
	r := &GitRepo{t: t, git: Need(t, "git"), home: t.TempDir()}
	root := t.TempDir()
	r.Bare = filepath.Join(root, name+".git")
	r.Work = filepath.Join(root, "work")
	r.Git(root, "init", "--quiet", "--bare", "--initial-branch=main", r.Bare)
	r.Git(root, "init", "--quiet", "--initial-branch=main", r.Work)
	r.Git(r.Work, "remote", "add", "origin", r.Bare)
	return r
}

// URL is the bare repository as a file:// URL.
func (r *GitRepo) URL() string { return "file://" + r.Bare }

// Git runs git in dir and returns what it printed, trimmed; it fails the
// test when git fails.
func (r *GitRepo) Git(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.git, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=commit.gpgsign", "GIT_CONFIG_VALUE_0=false",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes a file of the clone, making its folders.
func (r *GitRepo) Write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.Work, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Push commits everything in the clone with message msg, pushes it to
// branch and returns the commit.
func (r *GitRepo) Push(branch, msg string) string {
	r.t.Helper()
	r.Git(r.Work, "add", "-A")
	r.Git(r.Work, "commit", "--quiet", "--allow-empty", "-m", msg)
	r.Git(r.Work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	return r.Git(r.Work, "rev-parse", "HEAD")
}

// Commit writes files (an empty content removes the file), commits and
// pushes them to branch, and returns the commit.
func (r *GitRepo) Commit(branch string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		if content == "" {
			r.Git(r.Work, "rm", "--quiet", "--ignore-unmatch", name)
			continue
		}
		r.Write(name, content)
	}
	return r.Push(branch, "change")
}

// ForcePush points branch at commit.
func (r *GitRepo) ForcePush(branch, commit string) {
	r.t.Helper()
	r.Git(r.Work, "reset", "--quiet", "--hard", commit)
	r.Git(r.Work, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+branch)
}
