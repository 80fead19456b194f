package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/source/build"
)

// Types of source, as Spec.Type holds them.
const (
	TypeGit  = "git"
	TypeDir  = "dir"
	TypeHTTP = "http"
	// TypeHelm is a chart repository (index.yaml over HTTP); only Source
	// objects name one, with the chart in their spec.helm.
	TypeHelm = "helm"
)

// Default poll periods (SPEC §3). A dir source is watched; its interval is
// the full relist that catches what the watch missed.
const (
	DefaultGitInterval  = time.Minute
	DefaultHTTPInterval = 20 * time.Second
	DefaultDirInterval  = 20 * time.Second
)

// Options a --source value may carry, in Spec.Options.
const (
	// OptionUsername is the user for HTTPS basic authentication.
	OptionUsername = "username"
	// OptionPasswordFile names a file holding the password or token for
	// HTTPS basic authentication; it is read at each fetch, so a rotated
	// token takes effect without a restart.
	OptionPasswordFile = "password-file"
	// OptionSSHKeyFile names the private key for git+ssh://.
	OptionSSHKeyFile = "ssh-key-file"
	// OptionKnownHostsFile names the known_hosts file that checks the SSH
	// server's host key (default: ~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts).
	OptionKnownHostsFile = "known-hosts-file"
	// OptionInsecureIgnoreHostKey set to true skips the host-key check of
	// git+ssh://; nothing else turns it off.
	OptionInsecureIgnoreHostKey = "insecure-ignore-host-key"
	// OptionAllowMassPrune set to true lets a revision prune more than half
	// of the source's objects (the applier's guard).
	OptionAllowMassPrune = "allowMassPrune"
	// OptionDecryptionKeyFile names a file of age identities that opens
	// the source's files encrypted with SOPS; read at each revision.
	OptionDecryptionKeyFile = "decryption-key-file"
	// OptionHelmValuesFile names a YAML file of values merged over a
	// chart's own (the last of its values); read at each revision.
	OptionHelmValuesFile = "helm-values-file"
	// OptionHelmRelease is the release name a chart is rendered as; the
	// source's name by default.
	OptionHelmRelease = "helm-release"
	// OptionHelmNamespace is the release namespace a chart is rendered
	// for; "default" by default.
	OptionHelmNamespace = "helm-namespace"
)

// Spec is a parsed --source value (SPEC §3).
type Spec struct {
	// Name is name= or the last path element without .git.
	Name string
	// Type is TypeGit, TypeDir or TypeHTTP.
	Type string
	// URL is, for git, the repository URL without the git+ prefix and
	// without berth's query parameters (file://…, https://…, ssh://…); for
	// http, the URL without berth's parameters; for dir, the absolute path.
	URL string
	// Ref is a git branch, tag or full commit SHA; "" is the remote's HEAD.
	Ref string
	// Path is the folder of a git repository that holds the manifests, ""
	// for the root; it is clean, relative and never climbs out.
	Path string
	// Interval is the poll period (the relist period of a dir source),
	// always set: Parse fills in the type's default.
	Interval time.Duration
	// Options holds authentication and other options (the Option* keys).
	Options map[string]string
	// Credentials, when set, returns a git source's credentials at each
	// fetch, in memory (a Secret's data: CredentialUsername,
	// CredentialPassword, CredentialIdentity); they take the place of
	// the password and key files of Options.
	Credentials func(ctx context.Context) (map[string][]byte, error)
	// Build is what the caller resolved for building the source's trees
	// (package build): the age key and chart values as bytes, as the
	// Source controller reads them from Secrets and ConfigMaps. The
	// decryption-key-file= and helm-values-file= options, read at each
	// revision, add to it; helm-release= and helm-namespace= set it.
	Build build.Options
	// Chart and ChartVersion pick the chart of a chart repository
	// (TypeHelm): its name, and a version or semver range ("" is the
	// newest).
	Chart, ChartVersion string
}

// Keys of the map Spec.Credentials returns.
const (
	CredentialUsername = "username"
	CredentialPassword = "password"
	CredentialIdentity = "identity"
)

// berth's own parameters of a --source value, by type. Query parameters of
// an http URL that are not berth's belong to the URL and stay in it.
var (
	commonParams = []string{"name", "interval", OptionAllowMassPrune, OptionDecryptionKeyFile, OptionHelmValuesFile, OptionHelmRelease, OptionHelmNamespace}
	gitParams    = []string{"ref", "path", OptionUsername, OptionPasswordFile, OptionSSHKeyFile, OptionKnownHostsFile, OptionInsecureIgnoreHostKey}
	httpParams   = []string{OptionUsername, OptionPasswordFile}
	boolOptions  = []string{OptionAllowMassPrune, OptionInsecureIgnoreHostKey}
)

// Parse reads a --source value in every form of SPEC §3: a path to a
// directory or file (with optional "name=web," and "interval=30s,"
// prefixes), git+https://, git+http://, git+ssh:// or git+file:// with
// ?ref=&path=&interval=&name= and authentication options, or an http(s)://
// URL with ?interval=&name=. Errors name the part of the value that is
// wrong.
func Parse(value string) (Spec, error) {
	v := strings.TrimSpace(value)
	spec, err := parse(v)
	if err != nil {
		return Spec{}, fmt.Errorf("source %q: %w", value, err)
	}
	return spec, nil
}

// CheckNames refuses two specs of one name: a source's name is its
// Source object's (SPEC §3).
func CheckNames(specs []Spec) error {
	seen := make(map[string]bool, len(specs))
	for _, spec := range specs {
		if seen[spec.Name] {
			return fmt.Errorf("two sources are named %q: give one a name= (SPEC §3)", spec.Name)
		}
		seen[spec.Name] = true
	}
	return nil
}

func parse(v string) (Spec, error) {
	lower := strings.ToLower(v)
	switch {
	case v == "":
		return Spec{}, errors.New("empty: give a path, git+https://…, git+ssh://…, git+file://… or http(s)://…")
	case strings.HasPrefix(lower, "git+"):
		return parseGit(v[len("git+"):])
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		return parseHTTP(v)
	case strings.Contains(v, "://"):
		scheme := v[:strings.Index(v, "://")]
		return Spec{}, fmt.Errorf("unsupported scheme %q: use git+https://, git+http://, git+ssh://, git+file://, http(s):// or a path", scheme)
	}
	return parseDir(v)
}

// parseDir reads "[name=N,][interval=D,]path".
func parseDir(v string) (Spec, error) {
	params := map[string]string{}
	for {
		i := strings.IndexByte(v, ',')
		key, val, ok := strings.Cut(v[:max(i, 0)], "=")
		if i < 0 || !ok || !slices.Contains(commonParams, key) {
			break
		}
		if _, dup := params[key]; dup {
			return Spec{}, fmt.Errorf("%s= given twice", key)
		}
		params[key] = val
		v = v[i+1:]
	}
	if key, _, ok := strings.Cut(v, "="); ok && slices.Contains(commonParams, key) && !strings.ContainsAny(v, `/\`) {
		return Spec{}, fmt.Errorf("no path after %s=: write %s=VALUE,PATH", key, key)
	}
	if v == "" {
		return Spec{}, errors.New("no path after the name= and interval= prefixes")
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return Spec{}, fmt.Errorf("path %q: %w", v, err)
	}
	spec := Spec{Type: TypeDir, URL: abs, Interval: DefaultDirInterval}
	if err := spec.apply(params, filepath.Base(abs)); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

func parseGit(raw string) (Spec, error) {
	u, params, err := parseURL(raw, append(slices.Clone(commonParams), gitParams...), true)
	if err != nil {
		return Spec{}, err
	}
	switch u.Scheme {
	case "https", "http", "ssh":
		if u.Host == "" {
			return Spec{}, fmt.Errorf("git+%s:// URL has no host", u.Scheme)
		}
		if u.Path == "" || u.Path == "/" {
			return Spec{}, fmt.Errorf("git+%s:// URL has no repository path", u.Scheme)
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Spec{}, fmt.Errorf("git+file:// URL has host %q: write git+file:///absolute/path (three slashes)", u.Host)
		}
		if !path.IsAbs(u.Path) || u.Path == "/" {
			return Spec{}, fmt.Errorf("git+file:// URL needs an absolute repository path, as git+file:///srv/repo.git")
		}
	default:
		return Spec{}, fmt.Errorf("unsupported git scheme %q: use git+https://, git+http://, git+ssh:// or git+file://", "git+"+u.Scheme)
	}
	if u.Fragment != "" {
		return Spec{}, fmt.Errorf("URL fragment #%s is not supported: use ?ref=", u.Fragment)
	}
	isSSH := u.Scheme == "ssh"
	isHTTP := u.Scheme == "https" || u.Scheme == "http"
	for _, k := range []string{OptionSSHKeyFile, OptionKnownHostsFile, OptionInsecureIgnoreHostKey} {
		if _, ok := params[k]; ok && !isSSH {
			return Spec{}, fmt.Errorf("%s= needs a git+ssh:// URL", k)
		}
	}
	for _, k := range []string{OptionUsername, OptionPasswordFile} {
		if _, ok := params[k]; ok && !isHTTP {
			return Spec{}, fmt.Errorf("%s= needs a git+https:// or git+http:// URL", k)
		}
	}
	spec := Spec{Type: TypeGit, URL: u.String(), Interval: DefaultGitInterval}
	if ref, ok := params["ref"]; ok {
		if err := checkRef(ref); err != nil {
			return Spec{}, err
		}
		spec.Ref = ref
	}
	if p, ok := params["path"]; ok {
		if spec.Path, err = cleanRepoPath(p); err != nil {
			return Spec{}, err
		}
	}
	if err := spec.apply(params, strings.TrimSuffix(path.Base(strings.TrimRight(u.Path, "/")), ".git")); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

func parseHTTP(raw string) (Spec, error) {
	u, params, err := parseURL(raw, append(slices.Clone(commonParams), httpParams...), false)
	if err != nil {
		return Spec{}, err
	}
	if u.Host == "" {
		return Spec{}, fmt.Errorf("%s:// URL has no host", u.Scheme)
	}
	spec := Spec{Type: TypeHTTP, URL: u.String(), Interval: DefaultHTTPInterval}
	fallback := path.Base(strings.TrimRight(u.Path, "/"))
	if fallback == "." || fallback == "/" {
		fallback = u.Hostname()
	}
	if err := spec.apply(params, fallback); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// parseURL parses raw and takes berth's parameters (known) out of its
// query. With strict, any other parameter is an error; otherwise it stays
// in the URL, in its place.
func parseURL(raw string, known []string, strict bool) (*url.URL, map[string]string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, fmt.Errorf("invalid URL: %w", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	params := map[string]string{}
	var kept []string
	for part := range strings.SplitSeq(u.RawQuery, "&") {
		if part == "" {
			continue
		}
		rk, rv, _ := strings.Cut(part, "=")
		k, err1 := url.QueryUnescape(rk)
		val, err2 := url.QueryUnescape(rv)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("query parameter %q: %w", part, err)
		}
		if !slices.Contains(known, k) {
			if strict {
				return nil, nil, fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(known, ", "))
			}
			kept = append(kept, part)
			continue
		}
		if _, dup := params[k]; dup {
			return nil, nil, fmt.Errorf("parameter %q given twice", k)
		}
		params[k] = val
	}
	u.RawQuery = strings.Join(kept, "&")
	u.ForceQuery = false
	return u, params, nil
}

// apply sets the name, the interval and the options from parameters,
// deriving the name from fallback when none is given.
func (s *Spec) apply(params map[string]string, fallback string) error {
	if name, ok := params["name"]; ok {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("name %q: %s", name, strings.Join(errs, "; "))
		}
		s.Name = name
	} else {
		s.Name = derivedName(fallback)
		if s.Name == "" {
			return fmt.Errorf("cannot derive a source name from %q: give name=", fallback)
		}
	}
	if iv, ok := params["interval"]; ok {
		d, err := time.ParseDuration(iv)
		if err != nil {
			return fmt.Errorf("interval %q: not a duration such as 30s or 5m", iv)
		}
		if d <= 0 {
			return fmt.Errorf("interval %q: must be positive", iv)
		}
		s.Interval = d
	}
	for k, v := range params {
		switch k {
		case "name", "interval", "ref", "path":
			continue
		}
		if slices.Contains(boolOptions, k) {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s=%q: want true or false", k, v)
			}
			v = strconv.FormatBool(b)
		} else if v == "" {
			return fmt.Errorf("%s= is empty", k)
		}
		if s.Options == nil {
			s.Options = map[string]string{}
		}
		s.Options[k] = v
	}
	return nil
}

// derivedName turns a path element into a valid source name: lower case,
// runs of other characters turned into "-", trimmed to 253 characters.
func derivedName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.':
			if r == '.' && (b.Len() == 0 || dash) {
				continue
			}
			b.WriteRune(r)
			dash = false
		default:
			if b.Len() > 0 && !dash {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	name := b.String()
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = name[:validation.DNS1123SubdomainMaxLength]
	}
	name = strings.Trim(name, "-.")
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return ""
	}
	return name
}

// checkRef refuses what no branch, tag or commit can be called
// (git-check-ref-format's rules, loosely).
func checkRef(ref string) error {
	switch {
	case ref == "":
		return errors.New("ref= is empty: leave it out for the remote's HEAD")
	case strings.HasPrefix(ref, "-"), strings.HasPrefix(ref, "/"), strings.HasSuffix(ref, "/"),
		strings.HasSuffix(ref, ".lock"), strings.HasSuffix(ref, "."),
		strings.Contains(ref, ".."), strings.Contains(ref, "//"), strings.Contains(ref, "@{"):
		return fmt.Errorf("ref %q is not a valid branch, tag or commit name", ref)
	}
	for _, r := range ref {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return fmt.Errorf("ref %q: character %q is not allowed in a ref", ref, r)
		}
	}
	return nil
}

// cleanRepoPath makes path= a clean relative path inside the repository.
func cleanRepoPath(p string) (string, error) {
	if strings.ContainsRune(p, '\\') || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q: use forward slashes", p)
	}
	c := path.Clean("/" + p)
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("path %q climbs out of the repository", p)
		}
	}
	c = strings.TrimPrefix(c, "/")
	if c == "." {
		c = ""
	}
	return c, nil
}
