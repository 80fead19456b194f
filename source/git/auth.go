package git

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/berth-dev/berth/source"
)

// auth builds the credentials of one source from its options. Files are
// read at each use, so that a rotated token or key is picked up without a
// restart.
type auth struct {
	scheme         string // https, http, ssh or file
	user           string // from the URL or username=
	passwordFile   string
	sshKeyFile     string
	knownHostsFile string // "" for the defaults
	insecure       bool
	hostPort       string // of an ssh URL, for the host-key algorithms
	// creds reads credentials kept in memory (a Secret's), which take
	// the place of the files.
	creds func(ctx context.Context) (map[string][]byte, error)
}

// newAuth checks the options of spec against its URL.
func newAuth(spec source.Spec, log *slog.Logger) (*auth, error) {
	u, err := url.Parse(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", spec.URL, err)
	}
	a := &auth{scheme: u.Scheme, user: u.User.Username(), creds: spec.Credentials}
	opt := spec.Options
	if v := opt[source.OptionUsername]; v != "" {
		a.user = v
	}
	a.passwordFile = opt[source.OptionPasswordFile]
	a.sshKeyFile = opt[source.OptionSSHKeyFile]
	a.knownHostsFile = opt[source.OptionKnownHostsFile]
	if v, ok := opt[source.OptionInsecureIgnoreHostKey]; ok {
		if a.insecure, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", source.OptionInsecureIgnoreHostKey, v)
		}
	}
	isSSH := a.scheme == "ssh"
	isHTTP := a.scheme == "https" || a.scheme == "http"
	switch {
	case !isSSH && (a.sshKeyFile != "" || a.knownHostsFile != "" || a.insecure):
		return nil, fmt.Errorf("%s=, %s= and %s= need a git+ssh:// URL", source.OptionSSHKeyFile, source.OptionKnownHostsFile, source.OptionInsecureIgnoreHostKey)
	case !isHTTP && a.passwordFile != "":
		return nil, fmt.Errorf("%s= needs a git+https:// or git+http:// URL", source.OptionPasswordFile)
	case a.insecure && a.knownHostsFile != "":
		return nil, fmt.Errorf("%s= and %s=true contradict each other", source.OptionKnownHostsFile, source.OptionInsecureIgnoreHostKey)
	}
	if isSSH {
		port := u.Port()
		if port == "" {
			port = "22"
		}
		a.hostPort = net.JoinHostPort(u.Hostname(), port)
		if a.user == "" {
			a.user = "git"
		}
		if a.insecure {
			log.Warn("the SSH host key of this source is not checked (insecure-ignore-host-key=true): anyone between berth and the server can serve it other manifests")
		}
	}
	if isHTTP && a.passwordFile != "" && a.user == "" {
		a.user = "git" // servers that take a token ignore the user, but it must not be empty
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		log.Warn("the source URL holds a password; prefer password-file=")
	}
	return a, nil
}

// method returns the transport credentials for one list or fetch; nil means
// none (public HTTPS, file://) or, for ssh, go-git's default of the agent.
func (a *auth) method(ctx context.Context) (transport.AuthMethod, error) {
	if a.creds != nil {
		return a.fromSecret(ctx)
	}
	switch a.scheme {
	case "https", "http":
		if a.passwordFile == "" {
			if a.user != "" {
				return &githttp.BasicAuth{Username: a.user}, nil
			}
			return nil, nil
		}
		data, err := os.ReadFile(a.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", source.OptionPasswordFile, err)
		}
		return &githttp.BasicAuth{Username: a.user, Password: strings.TrimRight(string(data), "\r\n")}, nil
	case "ssh":
		return a.sshMethod()
	}
	return nil, nil
}

// fromSecret builds the credentials from data kept in memory: a user
// and password over HTTPS, a private key over SSH.
func (a *auth) fromSecret(ctx context.Context) (transport.AuthMethod, error) {
	data, err := a.creds(ctx)
	if err != nil {
		return nil, err
	}
	user := a.user
	if v := data[source.CredentialUsername]; len(v) > 0 {
		user = strings.TrimRight(string(v), "\r\n")
	}
	switch a.scheme {
	case "https", "http":
		pw := strings.TrimRight(string(data[source.CredentialPassword]), "\r\n")
		if user == "" && pw == "" {
			return nil, nil
		}
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: pw}, nil
	case "ssh":
		key := data[source.CredentialIdentity]
		if len(key) == 0 {
			return nil, fmt.Errorf("the credentials Secret has no %q key", source.CredentialIdentity)
		}
		signer, err := ssh.ParsePrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("the %q key of the credentials Secret: %w", source.CredentialIdentity, err)
		}
		return a.sshWith(signer)
	}
	return nil, nil
}

func (a *auth) sshMethod() (transport.AuthMethod, error) {
	var signer ssh.Signer
	if a.sshKeyFile != "" {
		pem, err := os.ReadFile(a.sshKeyFile)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", source.OptionSSHKeyFile, err)
		}
		signer, err = ssh.ParsePrivateKey(pem)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("%s %s is encrypted; give a key without a passphrase", source.OptionSSHKeyFile, a.sshKeyFile)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", source.OptionSSHKeyFile, a.sshKeyFile, err)
		}
	}
	return a.sshWith(signer)
}

// sshWith is the SSH method of a key (nil: the SSH agent's) with the
// host-key check the options ask for.
func (a *auth) sshWith(signer ssh.Signer) (transport.AuthMethod, error) {
	var helper gitssh.HostKeyCallbackHelper
	if a.insecure {
		helper.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // asked for explicitly, and warned about
	} else {
		cb, algos, err := a.knownHosts()
		if err != nil {
			return nil, err
		}
		helper.HostKeyCallback, helper.HostKeyAlgorithms = cb, algos
	}
	if signer != nil {
		return &gitssh.PublicKeys{User: a.user, Signer: signer, HostKeyCallbackHelper: helper}, nil
	}
	m, err := gitssh.NewSSHAgentAuth(a.user)
	if err != nil {
		return nil, fmt.Errorf("no %s= and no SSH agent: %w", source.OptionSSHKeyFile, err)
	}
	m.HostKeyCallbackHelper = helper
	return m, nil
}

// knownHosts returns the callback that checks the server's host key
// against known-hosts-file (or ~/.ssh/known_hosts and
// /etc/ssh/ssh_known_hosts), and the key algorithms it knows for the host,
// so that the server offers the key the file holds.
func (a *auth) knownHosts() (ssh.HostKeyCallback, []string, error) {
	var files []string
	if a.knownHostsFile != "" {
		if _, err := os.Stat(a.knownHostsFile); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", source.OptionKnownHostsFile, err)
		}
		files = []string{a.knownHostsFile}
	}
	db, err := gitssh.NewKnownHostsDb(files...)
	if err != nil {
		return nil, nil, fmt.Errorf("known hosts for the SSH host-key check (give %s= or, knowing the risk, %s=true): %w",
			source.OptionKnownHostsFile, source.OptionInsecureIgnoreHostKey, err)
	}
	return db.HostKeyCallback(), db.HostKeyAlgorithms(a.hostPort), nil
}
