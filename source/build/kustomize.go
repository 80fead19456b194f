package build

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
)

// kustomize builds the kustomization in dir with kustomize's own library,
// on an in-memory copy of the tree: overlays, components, generators,
// patches and images work as `kustomize build` does them; plugins and exec
// functions are off, and a kustomization reaching outside the tree (a
// remote base, an http file) is refused before the build starts, so that
// kustomize never clones or downloads.
func kustomize(files []File, dir string) ([]File, api.ErrorList) {
	c := &kustomizeCheck{files: map[string][]byte{}, dirs: map[string]bool{}, seen: map[string]bool{}}
	for _, f := range files {
		c.files[f.Name] = f.Data
		for d := path.Dir(f.Name); ; d = path.Dir(d) {
			if c.dirs[d] {
				break
			}
			c.dirs[d] = true
			if d == "." {
				break
			}
		}
	}
	root := c.kustomizationIn(dir)
	if errs := c.check(dir); len(errs) > 0 {
		return nil, errs
	}
	fsys := filesys.MakeFsInMemory()
	for _, f := range files {
		if err := fsys.WriteFile("/"+f.Name, f.Data); err != nil {
			return nil, api.ErrorList{fileError(f.Name, "kustomize: %v", err)}
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fsys, path.Join("/", dir))
	if err != nil {
		return nil, api.ErrorList{fileError(root, "kustomize build: %v", err)}
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, api.ErrorList{fileError(root, "kustomize build: %v", err)}
	}
	return []File{{Name: root, Data: out}}, nil
}

// kustomizeCheck walks the kustomizations a build reaches, refusing any
// reference kustomize would fetch from elsewhere.
type kustomizeCheck struct {
	files map[string][]byte
	dirs  map[string]bool // every folder holding a file, "." included
	seen  map[string]bool
}

// kustomizationIn names the kustomization file of dir (the first of
// KustomizationNames present), or the first name when there is none.
func (c *kustomizeCheck) kustomizationIn(dir string) string {
	for _, n := range KustomizationNames {
		if _, ok := c.files[join(dir, n)]; ok {
			return join(dir, n)
		}
	}
	return join(dir, KustomizationNames[0])
}

// check reads the kustomization of dir and those it reaches through
// folders of the tree.
func (c *kustomizeCheck) check(dir string) api.ErrorList {
	if c.seen[dir] {
		return nil
	}
	c.seen[dir] = true
	name := c.kustomizationIn(dir)
	data, ok := c.files[name]
	if !ok {
		return nil // a plain folder of resources; kustomize reads it
	}
	k, err := DecodeKustomization(name, data)
	if err != nil {
		return api.ErrorList{err}
	}
	var errs api.ErrorList
	ref := func(field, value string, folder bool) {
		value = strings.TrimSpace(value)
		if value == "" || strings.Contains(value, "\n") {
			return // inline content, not a reference
		}
		if remote(value) {
			errs = append(errs, &api.Error{File: name, Doc: 0, Field: field,
				Message: fmt.Sprintf("%q is remote: berth builds only from the files of the source's own repository (no remote bases, no downloads)", value)})
			return
		}
		if p := join(dir, value); folder && c.dirs[p] {
			errs = append(errs, c.check(p)...)
		}
	}
	list := func(field string, values []string, folder bool) {
		for i, v := range values {
			ref(fmt.Sprintf("%s[%d]", field, i), v, folder)
		}
	}
	list("resources", k.Resources, true)
	list("bases", k.Bases, true)
	list("components", k.Components, true)
	list("crds", k.Crds, false)
	list("configurations", k.Configurations, false)
	list("generators", k.Generators, true)
	list("transformers", k.Transformers, true)
	list("validators", k.Validators, true)
	for i, p := range k.PatchesStrategicMerge {
		ref(fmt.Sprintf("patchesStrategicMerge[%d]", i), string(p), false)
	}
	for i, p := range k.Patches {
		ref(fmt.Sprintf("patches[%d].path", i), p.Path, false)
	}
	for i, p := range k.PatchesJson6902 {
		ref(fmt.Sprintf("patchesJson6902[%d].path", i), p.Path, false)
	}
	for i, r := range k.Replacements {
		ref(fmt.Sprintf("replacements[%d].path", i), r.Path, false)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		ref("openapi.path", p, false)
	}
	kv := func(field string, s types.KvPairSources) {
		for i, f := range s.FileSources {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p
			}
			ref(fmt.Sprintf("%s.files[%d]", field, i), f, false)
		}
		list(field+".envs", s.EnvSources, false)
		ref(field+".env", s.EnvSource, false)
	}
	for i, g := range k.ConfigMapGenerator {
		kv(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)
	}
	for i, g := range k.SecretGenerator {
		kv(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)
	}
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
		errs = append(errs, &api.Error{File: name, Doc: 0, Field: "helmCharts",
			Message: "not supported: kustomize runs the helm program for it; render the chart with a Helm source instead"})
	}
	return errs
}

// DecodeKustomization reads a kustomization file as kustomize's types
// hold it, deprecated fields moved to their successors. The error names
// the file.
func DecodeKustomization(name string, data []byte) (*types.Kustomization, *api.Error) {
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, &api.Error{File: name, Doc: 0, Message: "not a kustomization: " + err.Error()}
	}
	k.FixKustomization()
	return &k, nil
}

// remote reports whether kustomize would fetch ref from elsewhere rather
// than read it from the tree: any URL (http, https, ssh, file, git), an
// scp-like user@host:path, or a github.com path. It errs on the side of
// refusing: kustomize clones whatever its repository parser accepts.
func remote(ref string) bool {
	r := strings.ToLower(strings.TrimSpace(ref))
	r = strings.TrimPrefix(r, "git::")
	if i := strings.Index(r, "://"); i > 0 {
		return true
	}
	if strings.HasPrefix(r, "github.com") {
		return true
	}
	first, _, _ := strings.Cut(r, "/")
	return strings.Contains(first, "@")
}
