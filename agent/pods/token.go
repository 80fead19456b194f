package pods

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
)

// EnvServiceAccountTokenFile names, in every container of a pod that runs
// as a service account, the file holding the pod's token: under the exec
// runtime there is no /var/run/secrets to mount it at.
const EnvServiceAccountTokenFile = "BERTH_SERVICEACCOUNT_TOKEN_FILE"

// TokenIssuer asks the control plane for a service-account token bound to
// a pod, and reads a service account (whether its pods get a token). The
// agent's RefResolver implements it when it has a server.
type TokenIssuer interface {
	// ServiceAccountToken is a token of pod's service account bound to
	// the pod, for audiences (none: the API server's), valid for
	// expirationSeconds (or less, as the server allows).
	ServiceAccountToken(ctx context.Context, pod *api.Pod, audiences []string, expirationSeconds int64) (string, error)
	ServiceAccount(ctx context.Context, namespace, name string) (*api.ServiceAccount, error)
}

// defaultTokenSeconds is how long a token the agent asks for lives, the
// default of a projected serviceAccountToken: an hour.
const defaultTokenSeconds = 3600

// serviceAccountDir holds a pod's token, its namespace and the CA, as the
// kubelet's projected service-account volume does.
func serviceAccountDir(dataDir, uid string) string {
	return filepath.Join(podDir(dataDir, uid), "serviceaccount")
}

// Files of the service-account directory, the names of the kubelet's.
const (
	serviceAccountTokenName     = "token"
	serviceAccountNamespaceName = "namespace"
	serviceAccountCAName        = "ca.crt"
)

// serviceAccountTokenFile is the token file of a pod, or "" when the pod
// has none yet.
func serviceAccountTokenFile(dataDir string, pod *api.Pod) string {
	p := filepath.Join(serviceAccountDir(dataDir, string(pod.UID)), serviceAccountTokenName)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// setUpServiceAccountToken writes the pod's token when it has none, or
// when the one it has has lived 80% of its life, as the kubelet rotates
// projected tokens; beside it the pod's namespace and caData (the CAs
// the agent trusts for the server) as ca.crt, kept as they are. Static
// pods and standalone agents have no tokens, nor has a pod whose
// automountServiceAccountToken, or else its service account's, says
// false: what was written for it before is removed (for the account's,
// when the token is next due).
func setUpServiceAccountToken(ctx context.Context, dataDir string, refs RefResolver, caData []byte, pod *api.Pod, now time.Time) error {
	ti, ok := refs.(TokenIssuer)
	if !ok || pod.Spec.ServiceAccountName == "" || IsStatic(pod) {
		return nil
	}
	dir := serviceAccountDir(dataDir, string(pod.UID))
	if a := pod.Spec.AutomountServiceAccountToken; a != nil && !*a {
		return os.RemoveAll(dir)
	}
	path := filepath.Join(dir, serviceAccountTokenName)
	var tok string
	if !tokenFresh(path, now) {
		// The account is read only when a token is due, not at every
		// refresh: an account that stops mounting tokens takes the pod's
		// away at its next rotation.
		if pod.Spec.AutomountServiceAccountToken == nil {
			sa, err := ti.ServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
			if err != nil {
				return fmt.Errorf("service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
			}
			if a := sa.AutomountServiceAccountToken; a != nil && !*a {
				return os.RemoveAll(dir)
			}
		}
		var err error
		if tok, err = ti.ServiceAccountToken(ctx, pod, nil, defaultTokenSeconds); err != nil {
			return fmt.Errorf("service account %s/%s token: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
		}
	}
	if err := EnsureDir(dir, projectedDirMode); err != nil {
		return err
	}
	if err := writeFileIfChanged(filepath.Join(dir, serviceAccountNamespaceName), []byte(pod.Namespace), 0o644); err != nil {
		return err
	}
	// The CA is public: 0644, as the kubelet projects it.
	ca := filepath.Join(dir, serviceAccountCAName)
	if len(caData) == 0 {
		if err := os.Remove(ca); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else if err := writeFileIfChanged(ca, caData, 0o644); err != nil {
		return err
	}
	owner, mode := tokenAccess(pod)
	if tok == "" {
		// Kept: its owner and mode are set again, for a token an
		// older agent wrote.
		err := errors.Join(os.Chmod(path, mode), owner.set(path))
		return errors.Join(err, serviceAccountGroup(pod, dir))
	}
	if err := writeFileAtomicAs(path, []byte(tok), mode, owner); err != nil {
		return err
	}
	return serviceAccountGroup(pod, dir)
}

// serviceAccountGroup gives the service-account directory to the pod's
// fsGroup, read-only, as the kubelet's SetVolumeOwnership does to the
// projected volume that holds a pod's token: namespace and ca.crt too,
// and the directory, which is setgid so what is written next is the
// group's from the start.
func serviceAccountGroup(pod *api.Pod, dir string) error {
	gid, _ := podFSGroup(pod)
	if gid == nil {
		return nil
	}
	return setVolumeOwnership(dir, *gid, true, corev1.FSGroupChangeAlways)
}

// tokenFresh reports whether the token at path has lived less than 80% of
// its life at now.
func tokenFresh(path string, now time.Time) bool {
	old, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	iat, exp, err := tokenLifetime(string(old))
	return err == nil && now.Before(iat.Add(exp.Sub(iat)*8/10))
}

// writeFileIfChanged writes path atomically unless it already holds b.
func writeFileIfChanged(path string, b []byte, mode fs.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	return writeFileAtomic(path, b, mode)
}

// tokenLifetime reads the iat and exp claims of a JWT without verifying
// it: the agent only needs to know when to ask for a new one.
func tokenLifetime(tok string) (iat, exp time.Time, err error) {
	parts := strings.Split(strings.TrimSpace(tok), ".")
	if len(parts) != 3 {
		return iat, exp, errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return iat, exp, err
	}
	var claims struct {
		IssuedAt  int64 `json:"iat"`
		ExpiresAt int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return iat, exp, err
	}
	if claims.ExpiresAt <= claims.IssuedAt {
		return iat, exp, errors.New("no lifetime")
	}
	return time.Unix(claims.IssuedAt, 0), time.Unix(claims.ExpiresAt, 0), nil
}
