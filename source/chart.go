package source

import (
	"crypto/sha256"
	"encoding/hex"
	"path"

	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/source/build"
)

// chartOf describes the chart a tree rendered (nil when its folder holds
// no Chart.yaml): its name and versions, and the digest of the output.
func chartOf(t build.Tree, built []build.File) *Chart {
	want := path.Join(t.Dir, build.ChartFile)
	for _, f := range t.Files {
		if f.Name != want {
			continue
		}
		var meta struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		}
		_ = yaml.Unmarshal(f.Data, &meta)
		h := sha256.New()
		for _, b := range built {
			h.Write([]byte(b.Name))
			h.Write([]byte{0})
			h.Write(b.Data)
			h.Write([]byte{0})
		}
		return &Chart{Name: meta.Name, Version: meta.Version, AppVersion: meta.AppVersion, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}
	}
	return nil
}

// Chart describes the Helm chart a revision rendered, for the history of
// its release.
type Chart struct {
	Name, Version, AppVersion string
	// Digest is the SHA-256 of what the chart rendered (with its values):
	// the same digest is the same release.
	Digest string
}
