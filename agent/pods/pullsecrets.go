package pods

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// The Secret types and keys of registry credentials, as in Kubernetes.
const (
	secretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	secretKeyDockerConfigJSON  = ".dockerconfigjson"
	secretTypeDockercfg        = "kubernetes.io/dockercfg"
	secretKeyDockercfg         = ".dockercfg"

	// ReasonFailedPullSecret is the event of a pull secret the agent
	// could not read; the pull goes on without it.
	ReasonFailedPullSecret = "FailedToRetrieveImagePullSecret"
)

// dockerConfigEntry is one registry's credentials in a docker config.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// registryAuth is a credential and the registry key it is for.
type registryAuth struct {
	key  string
	auth runtime.Auth
}

// parsePullSecret reads a dockerconfigjson (or legacy dockercfg) Secret's
// credentials by registry key; the error names the Secret and its key.
func parsePullSecret(s *api.Secret) ([]registryAuth, error) {
	where := fmt.Sprintf("secret %s/%s", s.Namespace, s.Name)
	data := secretData(s)
	var entries map[string]dockerConfigEntry
	switch {
	case string(s.Type) == secretTypeDockerConfigJSON || s.Type == "" && data[secretKeyDockerConfigJSON] != "":
		raw, ok := data[secretKeyDockerConfigJSON]
		if !ok {
			return nil, fmt.Errorf("%s: no %s key", where, secretKeyDockerConfigJSON)
		}
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return nil, fmt.Errorf("%s: data[%s]: %w", where, secretKeyDockerConfigJSON, err)
		}
		entries = cfg.Auths
	case string(s.Type) == secretTypeDockercfg:
		raw, ok := data[secretKeyDockercfg]
		if !ok {
			return nil, fmt.Errorf("%s: no %s key", where, secretKeyDockercfg)
		}
		if err := json.Unmarshal([]byte(raw), &entries); err != nil {
			return nil, fmt.Errorf("%s: data[%s]: %w", where, secretKeyDockercfg, err)
		}
	default:
		return nil, fmt.Errorf("%s: type %q, want %s", where, s.Type, secretTypeDockerConfigJSON)
	}
	out := make([]registryAuth, 0, len(entries))
	for key, e := range entries {
		a := runtime.Auth{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken, ServerAddress: key}
		if e.Auth != "" {
			b, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("%s: auths[%q].auth: %w", where, key, err)
			}
			user, pass, ok := strings.Cut(string(b), ":")
			if !ok {
				return nil, fmt.Errorf("%s: auths[%q].auth: want base64 of user:password", where, key)
			}
			a.Username, a.Password = user, pass
		}
		out = append(out, registryAuth{key: key, auth: a})
	}
	return out, nil
}

// pullAuths are the credentials of pod's imagePullSecrets for image, the
// most specific registry key first, as the kubelet's keyring finds them;
// none, the image is pulled without. A Secret that cannot be read is
// named in the warning, as the kubelet's event does, and skipped.
func pullAuths(ctx context.Context, refs RefResolver, pod *api.Pod, image string) (auths []runtime.Auth, warning string) {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil, ""
	}
	target, err := imageLocation(image)
	if err != nil {
		return nil, ""
	}
	var found []registryAuth
	var bad []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := getSecret(ctx, refs, pod.Namespace, ref.Name)
		if err == nil {
			var all []registryAuth
			if all, err = parsePullSecret(s); err == nil {
				for _, a := range all {
					if registryKeyMatches(a.key, target) {
						found = append(found, a)
					}
				}
				continue
			}
		}
		bad = append(bad, fmt.Sprintf("%s/%s", pod.Namespace, ref.Name))
	}
	slices.SortStableFunc(found, func(a, b registryAuth) int { return len(normalRegistryKey(b.key)) - len(normalRegistryKey(a.key)) })
	for _, a := range found {
		auths = append(auths, a.auth)
	}
	if len(bad) > 0 {
		warning = fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(bad, ", "))
	}
	return auths, warning
}

// imageLocation is an image's registry host and repository path,
// host/path, Docker Hub's as docker.io.
func imageLocation(image string) (string, error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return "", err
	}
	return dockerHub(ref.Context().RegistryStr()) + "/" + ref.Context().RepositoryStr(), nil
}

// dockerHub names Docker Hub's hosts docker.io.
func dockerHub(host string) string {
	switch host {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return host
}

// normalRegistryKey is a docker config key as host/path: no scheme, no
// trailing slash, Docker Hub's legacy https://index.docker.io/v1/ as
// docker.io.
func normalRegistryKey(key string) string {
	if !strings.Contains(key, "://") {
		key = "https://" + key
	}
	u, err := url.Parse(key)
	if err != nil {
		return ""
	}
	host := dockerHub(u.Host)
	p := strings.TrimSuffix(u.Path, "/")
	if host == "docker.io" && p == "/v1" {
		p = ""
	}
	return host + p
}

// registryKeyMatches says whether a docker config key covers target
// (host/repository), as the kubelet's keyring matches: the hosts have as
// many labels and each matches (globs such as *.example.com), the ports
// are the same, and the key's path is a prefix of the repository's.
func registryKeyMatches(key, target string) bool {
	k := normalRegistryKey(key)
	if k == "" {
		return false
	}
	kHost, kPath, _ := strings.Cut(k, "/")
	tHost, tPath, _ := strings.Cut(target, "/")
	kName, kPort, _ := strings.Cut(kHost, ":")
	tName, tPort, _ := strings.Cut(tHost, ":")
	if kPort != tPort {
		return false
	}
	kl, tl := strings.Split(kName, "."), strings.Split(tName, ".")
	if len(kl) != len(tl) {
		return false
	}
	for i := range kl {
		if ok, err := path.Match(kl[i], tl[i]); err != nil || !ok {
			return false
		}
	}
	return kPath == "" || tPath == kPath || strings.HasPrefix(tPath, kPath+"/")
}
