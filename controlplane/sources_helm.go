package controlplane

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/source/build"
	"github.com/berth-dev/berth/store"
)

// ObjectData reads the data of a ConfigMap or Secret (kind), for the
// credentials, keys and values a Source names: the server reads its
// store, the CLI the API. A ConfigMap's data and binaryData are one map.
// An object that does not exist is an error wrapping ErrNotFound.
type ObjectData func(ctx context.Context, kind, namespace, name string) (map[string][]byte, error)

// ErrNotFound is what ObjectData's error wraps when the object does not
// exist.
var ErrNotFound = store.ErrNotFound

// DefaultValuesKey is the key of a valuesFrom object read when none is
// named, as Flux's HelmRelease reads.
const DefaultValuesKey = "values.yaml"

// helmBuild puts spec.helm into a spec's build options: the release's
// name and namespace, the chart of a chart repository, and the values of
// valuesFrom (each ConfigMap or Secret read now) then of values, merged
// in that order over the chart's values.yaml. An error names the object
// and key that could not be read.
func helmBuild(ctx context.Context, out *source.Spec, h *api.SourceHelm, get ObjectData) error {
	out.Build.Helm.ReleaseName = h.ReleaseName
	out.Build.Helm.Namespace = h.TargetNamespace
	out.Chart, out.ChartVersion = h.Chart, h.Version
	for i, ref := range h.ValuesFrom {
		ns := cmp.Or(ref.Namespace, api.NamespaceSystem)
		key := cmp.Or(ref.ValuesKey, DefaultValuesKey)
		where := fmt.Sprintf("spec.helm.valuesFrom[%d]: %s/%s/%s", i, ref.Kind, ns, ref.Name)
		data, err := get(ctx, ref.Kind, ns, ref.Name)
		if store.IsNotFound(err) && ref.Optional {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		value, ok := data[key]
		if !ok {
			if ref.Optional {
				continue
			}
			return fmt.Errorf("%s: no key %q", where, key)
		}
		name := where + " key " + key
		if ref.TargetPath != "" {
			value = valuesAt(ref.TargetPath, string(value))
		}
		out.Build.Helm.Values = append(out.Build.Helm.Values, build.File{Name: name, Data: value})
	}
	if h.Values != nil && len(h.Values.Raw) > 0 {
		out.Build.Helm.Values = append(out.Build.Helm.Values, build.File{Name: "spec.helm.values", Data: h.Values.Raw})
	}
	return nil
}

// valuesAt is a document of values holding value, as a string, at the
// dotted path (as helm --set-string a.b.c=value does).
func valuesAt(path, value string) []byte {
	var v any = value
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		v = map[string]any{keys[i]: v}
	}
	data, _ := json.Marshal(v)
	return data
}

// buildDigest identifies what a spec's build reads besides the source:
// the key and values resolved from objects. A new digest makes a new
// fetcher, so that changed values are rendered although the source's
// revision did not move.
func buildDigest(spec source.Spec) string {
	h := sha256.New()
	h.Write(spec.Build.AgeKey)
	for _, v := range spec.Build.Helm.Values {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", v.Name, len(v.Data))
		h.Write(v.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// helmHistory is a release's history after chart c was applied: the same
// release as the head (same digest) changes nothing; otherwise a new
// revision is deployed and the one before superseded: "Install
// complete", "Upgrade complete", or "Rollback to N" when it is what
// revision N deployed (a revert in the repository, or spec.rollbackOnFailure).
func helmHistory(history []api.SourceHelmRelease, c *source.Chart, revision string, now metav1.Time) []api.SourceHelmRelease {
	if len(history) > 0 && history[0].Digest == c.Digest && history[0].Status == api.HelmDeployed {
		return history
	}
	next := api.SourceHelmRelease{
		Revision: 1, Chart: c.Name + "-" + c.Version, AppVersion: c.AppVersion, Status: api.HelmDeployed,
		Updated: now, Description: "Install complete", Digest: c.Digest, SourceRevision: revision,
	}
	if len(history) > 0 {
		next.Revision = history[0].Revision + 1
		next.Description = "Upgrade complete"
		for _, h := range history {
			if h.Digest == c.Digest {
				next.Description = fmt.Sprintf("Rollback to %d", h.Revision)
				break
			}
		}
	}
	out := make([]api.SourceHelmRelease, 0, min(len(history)+1, api.MaxHelmHistory))
	out = append(out, next)
	for _, h := range history[:min(len(history), api.MaxHelmHistory-1)] {
		if h.Status == api.HelmDeployed {
			h.Status = api.HelmSuperseded
		}
		out = append(out, h)
	}
	return out
}

// helmFailed marks the head of a release's history failed when it is the
// release of digest (its objects did not become healthy).
func helmFailed(history []api.SourceHelmRelease, digest string) []api.SourceHelmRelease {
	if len(history) == 0 || history[0].Digest != digest || history[0].Status == api.HelmFailed {
		return history
	}
	out := append([]api.SourceHelmRelease(nil), history...)
	out[0].Status = api.HelmFailed
	out[0].Description = "Upgrade failed: its objects did not become healthy"
	if out[0].Revision == 1 {
		out[0].Description = "Install failed: its objects did not become healthy"
	}
	return out
}
