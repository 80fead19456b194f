package cri

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Registries is k3s's registries.yaml: mirrors of registries, and the
// credentials and TLS settings of each registry host.
type Registries struct {
	Mirrors map[string]Mirror         `json:"mirrors,omitempty"`
	Configs map[string]RegistryConfig `json:"configs,omitempty"`
}

// Mirror lists the endpoints tried, in order, for a registry ("*" for
// every registry); the registry itself is tried last.
type Mirror struct {
	Endpoints []string `json:"endpoint,omitempty"`
}

// RegistryConfig is one registry host's credentials and TLS settings.
type RegistryConfig struct {
	Auth *RegistryAuth `json:"auth,omitempty"`
	TLS  *RegistryTLS  `json:"tls,omitempty"`
}

// RegistryAuth is a registry's credentials.
type RegistryAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
}

// RegistryTLS is how a registry's certificate is checked, and the client
// certificate given to it.
type RegistryTLS struct {
	CertFile           string `json:"cert_file,omitempty"`
	KeyFile            string `json:"key_file,omitempty"`
	CAFile             string `json:"ca_file,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// LoadRegistries reads and checks a registries.yaml; its errors name the
// file and the field.
func LoadRegistries(path string) (*Registries, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--registries: %w", err)
	}
	r, err := ParseRegistries(b)
	if err != nil {
		return nil, fmt.Errorf("--registries %s: %w", path, err)
	}
	return r, nil
}

// ParseRegistries decodes a registries.yaml, refusing unknown fields, and
// checks it.
func ParseRegistries(b []byte) (*Registries, error) {
	var raw any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if err := unknownFields(raw); err != nil {
		return nil, err
	}
	var r Registries
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(mapKeys(r.Mirrors)) {
		if name != "*" {
			if err := checkHost(name); err != nil {
				return nil, fmt.Errorf("mirrors.%q: %w", name, err)
			}
		}
		for i, ep := range r.Mirrors[name].Endpoints {
			if _, err := endpointURL(ep); err != nil {
				return nil, fmt.Errorf("mirrors.%q.endpoint[%d]: %w", name, i, err)
			}
		}
	}
	for _, host := range slices.Sorted(mapKeys(r.Configs)) {
		if err := checkHost(host); err != nil {
			return nil, fmt.Errorf("configs.%q: %w", host, err)
		}
		if t := r.Configs[host].TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
			return nil, fmt.Errorf("configs.%q.tls: cert_file and key_file go together", host)
		}
	}
	return &r, nil
}

// registriesFields are the fields of a registries.yaml at each depth:
// what is under mirrors.<name> and configs.<host>, and deeper.
var registriesFields = map[string][]string{
	"":               {"mirrors", "configs"},
	"mirrors.*":      {"endpoint"},
	"configs.*":      {"auth", "tls"},
	"configs.*.auth": {"username", "password", "auth", "identitytoken"},
	"configs.*.tls":  {"cert_file", "key_file", "ca_file", "insecure_skip_verify"},
}

// unknownFields names the first field of a decoded registries.yaml that
// is not one, with its path.
func unknownFields(v any) error {
	var walk func(v any, shape, path string) error
	walk = func(v any, shape, path string) error {
		m, ok := v.(map[string]any)
		if !ok {
			return nil // the typed decoding says what is wrong
		}
		for _, k := range slices.Sorted(mapKeys(m)) {
			p := strings.TrimPrefix(path+"."+strconv.Quote(k), ".")
			var next string
			switch shape {
			case "mirrors", "configs":
				next = shape + ".*"
			default:
				known, ok := registriesFields[shape]
				if !ok {
					continue
				}
				if !slices.Contains(known, k) {
					return fmt.Errorf("%s: unknown field (want one of %s)", p, strings.Join(known, ", "))
				}
				next = strings.TrimPrefix(shape+"."+k, ".")
			}
			if err := walk(m[k], next, p); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(v, "", "")
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkHost checks a registry host[:port].
func checkHost(h string) error {
	if h == "" || strings.ContainsAny(h, "/ \t\n\"\\") {
		return fmt.Errorf("%q is not a registry host[:port]", h)
	}
	return nil
}

// endpointURL checks a mirror endpoint: an http:// or https:// URL.
func endpointURL(ep string) (*url.URL, error) {
	u, err := url.Parse(ep)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(ep, "\"\\\n") {
		return nil, fmt.Errorf("%q: want an http:// or https:// URL", ep)
	}
	return u, nil
}

// hostsDir is a registry's directory under containerd's config_path.
func hostsDir(registry string) string {
	if registry == "*" {
		return "_default"
	}
	return registry
}

// registryServer is the URL of a registry itself.
func registryServer(registry string) string {
	if registry == "docker.io" {
		return "https://registry-1.docker.io"
	}
	return "https://" + registry
}

// hostsMarker heads the hosts.toml files berth writes, so that those of
// a mirror no longer configured are removed.
const hostsMarker = "# written by berth from --registries\n"

// HostsFiles are the hosts.toml files of the mirrors and configured
// registries, by registry directory.
func (r *Registries) HostsFiles() map[string]string {
	q := strconv.Quote
	tls := func(b *strings.Builder, host string) {
		c, ok := r.Configs[host]
		if !ok || c.TLS == nil {
			return
		}
		if c.TLS.CAFile != "" {
			fmt.Fprintf(b, "  ca = %s\n", q(c.TLS.CAFile))
		}
		if c.TLS.CertFile != "" {
			fmt.Fprintf(b, "  client = [[%s, %s]]\n", q(c.TLS.CertFile), q(c.TLS.KeyFile))
		}
		if c.TLS.InsecureSkipVerify {
			b.WriteString("  skip_verify = true\n")
		}
	}
	out := map[string]string{}
	for name, m := range r.Mirrors {
		var b strings.Builder
		b.WriteString(hostsMarker)
		if name != "*" {
			fmt.Fprintf(&b, "server = %s\n", q(registryServer(name)))
		}
		for _, ep := range m.Endpoints {
			u, _ := endpointURL(ep)
			fmt.Fprintf(&b, "\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n", q(strings.TrimSuffix(ep, "/")))
			tls(&b, u.Host)
		}
		out[hostsDir(name)] = b.String()
	}
	for host, c := range r.Configs {
		if _, ok := r.Mirrors[host]; ok || c.TLS == nil {
			continue
		}
		var b strings.Builder
		b.WriteString(hostsMarker)
		fmt.Fprintf(&b, "server = %s\n\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n", q(registryServer(host)), q(registryServer(host)))
		tls(&b, host)
		out[hostsDir(host)] = b.String()
	}
	return out
}

// authConfig is the part of containerd's config.toml holding the
// registries' credentials, which hosts.toml cannot.
func (r *Registries) authConfig() string {
	if r == nil {
		return ""
	}
	q := strconv.Quote
	var b strings.Builder
	for _, host := range slices.Sorted(mapKeys(r.Configs)) {
		a := r.Configs[host].Auth
		if a == nil {
			continue
		}
		fmt.Fprintf(&b, "\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.%s.auth]\n", q(host))
		for _, kv := range [][2]string{{"username", a.Username}, {"password", a.Password}, {"auth", a.Auth}, {"identitytoken", a.IdentityToken}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, "  %s = %s\n", kv[0], q(kv[1]))
			}
		}
	}
	return b.String()
}

// writeHosts writes the hosts.toml files into dir and removes those berth
// wrote before for registries no longer configured.
func (r *Registries) writeHosts(dir string) error {
	files := map[string]string{}
	if r != nil {
		files = r.HostsFiles()
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name(), "hosts.toml")
		if _, keep := files[e.Name()]; keep {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), hostsMarker) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for d, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, d, "hosts.toml"), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}
