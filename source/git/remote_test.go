package git

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/berth-dev/berth/testtool"
)

// remote is a bare repository made with the git CLI, and a work clone that
// commits and pushes to it, as a user's laptop would.
type remote struct {
	t    *testing.T
	git  string
	home string
	bare string // the bare repository
	work string // the clone that pushes
}

func newRemote(t *testing.T) *remote {
	t.Helper()
	r := &remote{t: t, git: testtool.Need(t, "git"), home: t.TempDir()}
	root := t.TempDir()
	r.bare = filepath.Join(root, "fleet.git")
	r.work = filepath.Join(root, "work")
	r.run(root, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	r.run(root, "init", "--quiet", "--initial-branch=main", r.work)
	r.run(r.work, "remote", "add", "origin", r.bare)
	return r
}

// run runs git in dir, with no user or system configuration.
func (r *remote) run(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.git, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (an empty value deletes one), commits and pushes
// to branch, and returns the commit's SHA.
func (r *remote) commit(branch string, files map[string]string) string {
	r.t.Helper()
	for name, data := range files {
		p := filepath.Join(r.work, name)
		if data == "" {
			r.run(r.work, "rm", "--quiet", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			r.t.Fatal(err)
		}
		r.run(r.work, "add", name)
	}
	r.run(r.work, "commit", "--quiet", "--allow-empty", "-m", "change")
	r.run(r.work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	return r.run(r.work, "rev-parse", "HEAD")
}

// forcePush points branch at commit.
func (r *remote) forcePush(branch, commit string) {
	r.t.Helper()
	r.run(r.work, "reset", "--quiet", "--hard", commit)
	r.run(r.work, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+branch)
}

// url is the repository as a git+file:// source names it.
func (r *remote) url() string { return "file://" + r.bare }

func configMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: \"" + value + "\"\n"
}

// smartHTTP serves the bare repositories of a folder over git's smart HTTP
// protocol (git http-backend behind net/http/cgi), counting the listings
// and the fetches it answers, and asking for basic authentication when
// user is set.
type smartHTTP struct {
	srv      *httptest.Server
	lists    atomic.Int64 // GET …/info/refs?service=git-upload-pack
	fetches  atomic.Int64 // POST …/git-upload-pack
	mu       sync.Mutex
	user     string
	password string
}

func serveHTTP(t *testing.T, r *remote) *smartHTTP {
	t.Helper()
	s := &smartHTTP{}
	backend := &cgi.Handler{
		Path: r.git,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(r.bare), "GIT_HTTP_EXPORT_ALL=1",
			"HOME=" + r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		user, password := s.user, s.password
		s.mu.Unlock()
		if user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		switch {
		case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/info/refs"):
			s.lists.Add(1)
		case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/git-upload-pack"):
			s.fetches.Add(1)
		}
		backend.ServeHTTP(w, req)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *smartHTTP) requireAuth(user, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.password = user, password
}

// url is the repository as a git+http:// source names it.
func (s *smartHTTP) url(r *remote) string {
	return s.srv.URL + "/" + filepath.Base(r.bare)
}
