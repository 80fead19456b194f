package git

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/berth-dev/berth/source"
)

// sshServer serves a remote's bare repository over SSH, as a git host
// does: it takes one client key and runs `git upload-pack` for the
// command the client asks for.
type sshServer struct {
	addr    string
	hostKey ssh.Signer
	wg      sync.WaitGroup
}

func newKey(t *testing.T) (ssh.Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return signer, pem.EncodeToMemory(block)
}

func serveSSH(t *testing.T, r *remote, client ssh.PublicKey) *sshServer {
	t.Helper()
	s := &sshServer{}
	s.hostKey, _ = newKey(t)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(s.hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c, cfg, r) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		s.wg.Wait()
	})
	return s
}

func (s *sshServer) serve(c net.Conn, cfg *ssh.ServerConfig, r *remote) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		s.session(ch, chReqs, r)
	}
}

// session runs the one command a git client execs.
func (s *sshServer) session(ch ssh.Channel, reqs <-chan *ssh.Request, r *remote) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		n := binary.BigEndian.Uint32(req.Payload)
		command := string(req.Payload[4 : 4+n])
		_ = req.Reply(true, nil)
		status := uint32(1)
		if svc, path, ok := strings.Cut(command, " "); ok && svc == "git-upload-pack" &&
			strings.Trim(path, "'") == "/"+filepath.Base(r.bare) {
			cmd := exec.Command(r.git, "upload-pack", r.bare)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
			if cmd.Run() == nil {
				status = 0
			}
		} else {
			_, _ = io.WriteString(ch.Stderr(), "unknown command "+command+"\n")
		}
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
		return
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGitSSH(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	clientKey, clientPEM := newKey(t)
	srv := serveSSH(t, r, clientKey.PublicKey())
	keyFile := writeFile(t, "id_ed25519", clientPEM)
	url := "git+ssh://git@" + srv.addr + "/fleet.git"
	known := writeFile(t, "known_hosts", []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.addr)}, srv.hostKey.PublicKey())+"\n"))
	otherHost, _ := newKey(t)
	wrongKnown := writeFile(t, "known_hosts", []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.addr)}, otherHost.PublicKey())+"\n"))
	_, otherPEM := newKey(t)
	otherKeyFile := writeFile(t, "other_key", otherPEM)

	t.Run("host key checked", func(t *testing.T) {
		h := start(t, url+"?ssh-key-file="+keyFile+"&known-hosts-file="+known, "")
		if rev := h.receive(); !rev.OK() || rev.ID != c1 || objects(rev) != "a.yaml:a" {
			t.Fatalf("%s %s %v %v", rev.ID, objects(rev), rev.Errors, rev.Err)
		}
	})
	t.Run("host key mismatch", func(t *testing.T) {
		h := start(t, url+"?ssh-key-file="+keyFile+"&known-hosts-file="+wrongKnown, "")
		rev := h.receive()
		if rev.Err == nil || !strings.Contains(rev.Err.Error(), "key mismatch") {
			t.Fatalf("%+v", rev)
		}
		t.Log(rev.Err)
	})
	t.Run("host unknown", func(t *testing.T) {
		empty := writeFile(t, "known_hosts", nil)
		h := start(t, url+"?ssh-key-file="+keyFile+"&known-hosts-file="+empty, "")
		rev := h.receive()
		if rev.Err == nil || !strings.Contains(rev.Err.Error(), "key is unknown") {
			t.Fatalf("%+v", rev)
		}
		t.Log(rev.Err)
	})
	t.Run("known hosts file missing", func(t *testing.T) {
		h := start(t, url+"?ssh-key-file="+keyFile+"&known-hosts-file=/nonexistent/known_hosts", "")
		rev := h.receive()
		if rev.Err == nil || !strings.Contains(rev.Err.Error(), "known-hosts-file") {
			t.Fatalf("%+v", rev)
		}
	})
	t.Run("client key refused", func(t *testing.T) {
		h := start(t, url+"?ssh-key-file="+otherKeyFile+"&known-hosts-file="+known, "")
		rev := h.receive()
		if rev.Err == nil || !strings.Contains(rev.Err.Error(), "unable to authenticate") {
			t.Fatalf("%+v", rev)
		}
		t.Log(rev.Err)
	})
	t.Run("insecure-ignore-host-key warns", func(t *testing.T) {
		var logs bytes.Buffer
		spec, err := source.Parse(url + "?ssh-key-file=" + keyFile + "&insecure-ignore-host-key=true")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(spec, Options{CacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "not checked") {
			t.Errorf("no warning: %q", logs.String())
		}
		h := start(t, url+"?ssh-key-file="+keyFile+"&insecure-ignore-host-key=true", "")
		if rev := h.receive(); !rev.OK() || rev.ID != c1 {
			t.Fatalf("%s %v", rev.ID, rev.Err)
		}
	})
}

func TestGitAuthOptions(t *testing.T) {
	_, pemData := newKey(t)
	key := writeFile(t, "key", pemData)
	encKey := filepath.Join("testdata", "encrypted_ed25519") // a throw-away key, passphrase "pw"
	tests := []struct {
		spec    source.Spec
		newErr  string // from New
		authErr string // from building the credentials
	}{
		{spec: source.Spec{URL: "ssh://h/r.git", Options: map[string]string{source.OptionSSHKeyFile: "/missing"}}, authErr: "read ssh-key-file"},
		{spec: source.Spec{URL: "ssh://h/r.git", Options: map[string]string{source.OptionSSHKeyFile: encKey, source.OptionInsecureIgnoreHostKey: "true"}}, authErr: "is encrypted"},
		{spec: source.Spec{URL: "ssh://h/r.git", Options: map[string]string{source.OptionSSHKeyFile: key, source.OptionKnownHostsFile: "/k", source.OptionInsecureIgnoreHostKey: "true"}}, newErr: "contradict"},
		{spec: source.Spec{URL: "https://h/r.git", Options: map[string]string{source.OptionSSHKeyFile: key}}, newErr: "need a git+ssh:// URL"},
		{spec: source.Spec{URL: "file:///r.git", Options: map[string]string{source.OptionPasswordFile: "/p"}}, newErr: "needs a git+https://"},
		{spec: source.Spec{URL: "https://h/r.git", Options: map[string]string{source.OptionPasswordFile: "/missing"}}, authErr: "read password-file"},
	}
	for _, tt := range tests {
		tt.spec.Type, tt.spec.Name = source.TypeGit, "x"
		g, err := New(tt.spec, Options{CacheDir: t.TempDir()})
		if tt.newErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.newErr) {
				t.Errorf("%v: New: %v; want %q", tt.spec.Options, err, tt.newErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: New: %v", tt.spec.Options, err)
		}
		if _, err := g.auth.method(context.Background()); err == nil || !strings.Contains(err.Error(), tt.authErr) {
			t.Errorf("%v: credentials: %v; want %q", tt.spec.Options, err, tt.authErr)
		}
	}

	// A password-only source gets a user (servers taking a token ignore it).
	token := writeFile(t, "token", []byte("tok\n"))
	g, err := New(source.Spec{Name: "x", Type: source.TypeGit, URL: "https://h/r.git", Options: map[string]string{source.OptionPasswordFile: token}}, Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.auth.method(context.Background())
	if err != nil || m.String() != "http-basic-auth - git:*******" {
		t.Errorf("password-only credentials: %v %v", m, err)
	}
}
