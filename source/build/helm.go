package build

import (
	"bytes"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
)

// Helm says how a chart is rendered: the release it is rendered as, and
// the values given to it besides its own values.yaml.
type Helm struct {
	// ReleaseName is .Release.Name; "" is the chart's name.
	ReleaseName string
	// Namespace is .Release.Namespace; "" is "default".
	Namespace string
	// Values are YAML documents of values, merged in order over the
	// chart's values.yaml (a later one wins, key by key): the data of the
	// Source's valuesFrom, then its values. Each is named for errors (as
	// "ConfigMap/web/values key values.yaml").
	Values []File
}

// DefaultNamespace is the release namespace when none is given.
const DefaultNamespace = "default"

// renderChart renders the chart in dir with Helm's engine, as `helm
// template` does: the chart's CRDs first, then every template in name
// order; partials, NOTES.txt and hooks (tests included) are left out, as
// berth runs no hook. lookup returns nothing: no cluster is asked.
func renderChart(files []File, dir string, h Helm) ([]File, api.ErrorList) {
	chartFile := join(dir, ChartFile)
	var bf []*loader.BufferedFile
	prefix := dir + "/"
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.Name, prefix)
		if dir == "." {
			rel, ok = f.Name, true
		}
		if ok {
			bf = append(bf, &loader.BufferedFile{Name: rel, Data: f.Data})
		}
	}
	ch, err := loader.LoadFiles(bf)
	if err != nil {
		return nil, api.ErrorList{fileError(chartFile, "helm: cannot load the chart: %v", err)}
	}
	vals, errs := MergeValues(h.Values)
	if len(errs) > 0 {
		return nil, errs
	}
	opts := chartutil.ReleaseOptions{Name: h.ReleaseName, Namespace: h.Namespace, Revision: 1, IsInstall: true}
	if opts.Name == "" {
		opts.Name = ch.Name()
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	top, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, api.ErrorList{fileError(chartFile, "helm: values: %v", err)}
	}
	rendered, err := engine.Engine{}.Render(ch, top)
	if err != nil {
		return nil, api.ErrorList{fileError(chartFile, "helm render: %v", err)}
	}
	local := func(full string) string {
		rel, _ := strings.CutPrefix(full, ch.Name()+"/")
		return join(dir, rel)
	}
	var out []File
	for _, crd := range ch.CRDObjects() {
		out = append(out, File{Name: local(crd.Filename), Data: crd.File.Data})
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		base := name[strings.LastIndexByte(name, '/')+1:]
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		if data := withoutHooks(rendered[name]); len(data) > 0 {
			out = append(out, File{Name: local(name), Data: data})
		}
	}
	return out, nil
}

// MergeValues merges YAML documents of values in order, a later one
// winning key by key (maps merged, anything else replaced), as helm's -f
// flags do. The errors name the document that is not a map of values.
func MergeValues(docs []File) (map[string]any, api.ErrorList) {
	merged := map[string]any{}
	var errs api.ErrorList
	for _, d := range docs {
		v, err := chartutil.ReadValues(d.Data)
		if err != nil {
			errs = append(errs, fileError(d.Name, "helm values: %v", err))
			continue
		}
		merged = mergeMaps(merged, v)
	}
	return merged, errs
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// withoutHooks drops the documents of a rendered template that are Helm
// hooks, and blank ones; what is left is rejoined as a stream.
func withoutHooks(text string) []byte {
	var b bytes.Buffer
	for _, doc := range splitDocs(text) {
		if strings.TrimSpace(doc) == "" || isHook(doc) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(doc)
		if !strings.HasSuffix(doc, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// splitDocs splits a YAML stream at its "---" lines.
func splitDocs(text string) []string {
	var docs []string
	var cur strings.Builder
	for line := range strings.Lines(text) {
		t := strings.TrimRight(line, "\r\n")
		if t == "---" || strings.HasPrefix(t, "--- ") {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

// isHook reports whether a rendered document carries helm.sh/hook. A
// document that does not parse is kept, for the decoder to name.
func isHook(doc string) bool {
	if !strings.Contains(doc, "helm.sh/hook") {
		return false
	}
	var m struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		return false
	}
	_, ok := m.Metadata.Annotations["helm.sh/hook"]
	return ok
}
