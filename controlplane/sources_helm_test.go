package controlplane

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// chartRepo is a Helm chart repository served by an httptest server:
// index.yaml and the packages added to it.
type chartRepo struct {
	mu       sync.Mutex
	files    map[string][]byte
	versions []string
	srv      *httptest.Server
}

func newChartRepo(t *testing.T) *chartRepo {
	r := &chartRepo{files: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		data, ok := r.files[strings.TrimPrefix(req.URL.Path, "/")]
		r.mu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// add packages a chart "demo" of version (as `helm package` lays it out:
// one folder named after the chart) and lists it in index.yaml.
func (r *chartRepo) add(t *testing.T, version string) {
	t.Helper()
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: " + version + "\nappVersion: \"app-" + version + "\"\n",
		"values.yaml": "greeting: hello\nreplicas: 1\nauth: {token: none}\n",
		"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  token: {{ .Values.auth.token | quote }}
  chart: {{ .Chart.Version | quote }}
  replicas: {{ .Values.replicas | quote }}
`,
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "demo/" + name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(content))
	}
	tw.Close()
	gz.Close()
	sum := sha256.Sum256(buf.Bytes())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files["charts/demo-"+version+".tgz"] = buf.Bytes()
	r.versions = append(r.versions, fmt.Sprintf("  - name: demo\n    version: %s\n    appVersion: app-%s\n    urls: [charts/demo-%s.tgz]\n    digest: %s\n", version, version, version, hex.EncodeToString(sum[:])))
	r.files["index.yaml"] = []byte("apiVersion: v1\nentries:\n  demo:\n" + strings.Join(r.versions, ""))
}

// TestHelmChartRepositorySource: a Source of type helm renders a chart
// of a chart repository with values from a ConfigMap, a Secret's key at a
// target path and spec.helm.values, as the release and namespace it
// names, CRDs first; a new chart version and changed values are
// upgrades, values set back are a rollback, and status.helm keeps the
// history as `helm history` shows it.
func TestHelmChartRepositorySource(t *testing.T) {
	repo := newChartRepo(t)
	repo.add(t, "0.1.0")
	cp := startControlPlane(t, t.TempDir(), StoreMemory)
	st := cp.Store()
	ctx := context.Background()
	for _, obj := range []api.Object{
		&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "demo-values", Namespace: api.NamespaceSystem},
			Data: map[string]string{"values.yaml": "greeting: from-configmap\n"}},
		&api.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-token", Namespace: api.NamespaceSystem},
			Data: map[string][]byte{"token": []byte("s3cret")}},
	} {
		if _, err := st.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	src := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: api.SourceSpec{
		Type: api.SourceTypeHelm, URL: repo.srv.URL, Interval: &metav1.Duration{Duration: time.Second},
		Helm: &api.SourceHelm{
			Chart: "demo", Version: ">=0.1.0", ReleaseName: "rel", TargetNamespace: "team",
			ValuesFrom: []api.SourceValuesReference{
				{Kind: "ConfigMap", Name: "demo-values"},
				{Kind: "Secret", Name: "demo-token", ValuesKey: "token", TargetPath: "auth.token"},
				{Kind: "ConfigMap", Name: "absent", Optional: true},
			},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 3}`)},
		},
	}}
	if _, err := st.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	config := func() (map[string]string, error) {
		obj, err := st.Get(api.KindOf(&api.ConfigMap{}), "team", "rel-config")
		if err != nil {
			return nil, err
		}
		return obj.(*api.ConfigMap).Data, nil
	}
	type entry struct {
		rev         int64
		chart, app  string
		status, why string
	}
	history := func() []entry {
		var out []entry
		for _, h := range sourceObject(t, st, "demo").Status.Helm {
			out = append(out, entry{h.Revision, h.Chart, h.AppVersion, h.Status, h.Description})
		}
		return out
	}
	expect := func(what string, data map[string]string, want []entry) {
		t.Helper()
		poll(t, what, func() error {
			got, err := config()
			if err != nil {
				return err
			}
			for k, v := range data {
				if got[k] != v {
					return fmt.Errorf("config %v, want %s=%s", got, k, v)
				}
			}
			if h := history(); !reflect.DeepEqual(h, want) {
				return fmt.Errorf("history %+v, want %+v", h, want)
			}
			return nil
		})
	}
	expect("installed", map[string]string{"greeting": "from-configmap", "token": "s3cret", "replicas": "3", "chart": "0.1.0"},
		[]entry{{1, "demo-0.1.0", "app-0.1.0", api.HelmDeployed, "Install complete"}})
	if _, err := st.Get(api.KindOf(&apiextensionsv1.CustomResourceDefinition{}), "", "widgets.example.com"); err != nil {
		t.Errorf("the chart's CRD: %v", err)
	}
	if s, r := readyOf(sourceObject(t, st, "demo")); s != "True" {
		t.Errorf("ready %s %s", s, r)
	}

	repo.add(t, "0.2.0")
	expect("upgraded to 0.2.0", map[string]string{"chart": "0.2.0"}, []entry{
		{2, "demo-0.2.0", "app-0.2.0", api.HelmDeployed, "Upgrade complete"},
		{1, "demo-0.1.0", "app-0.1.0", api.HelmSuperseded, "Install complete"}})

	setValues := func(v string) {
		t.Helper()
		obj, err := st.Get(api.KindOf(&api.ConfigMap{}), api.NamespaceSystem, "demo-values")
		if err != nil {
			t.Fatal(err)
		}
		cm := obj.(*api.ConfigMap).DeepCopy()
		cm.Data["values.yaml"] = v
		if _, err := st.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	setValues("greeting: changed\n")
	expect("upgraded by values", map[string]string{"greeting": "changed"}, []entry{
		{3, "demo-0.2.0", "app-0.2.0", api.HelmDeployed, "Upgrade complete"},
		{2, "demo-0.2.0", "app-0.2.0", api.HelmSuperseded, "Upgrade complete"},
		{1, "demo-0.1.0", "app-0.1.0", api.HelmSuperseded, "Install complete"}})
	setValues("greeting: from-configmap\n")
	expect("rolled back by values", map[string]string{"greeting": "from-configmap"}, []entry{
		{4, "demo-0.2.0", "app-0.2.0", api.HelmDeployed, "Rollback to 2"},
		{3, "demo-0.2.0", "app-0.2.0", api.HelmSuperseded, "Upgrade complete"},
		{2, "demo-0.2.0", "app-0.2.0", api.HelmSuperseded, "Upgrade complete"},
		{1, "demo-0.1.0", "app-0.1.0", api.HelmSuperseded, "Install complete"}})
}

// TestHelmValuesFromMissing: a valuesFrom object that is missing and not
// optional holds the Source back, naming it.
func TestHelmValuesFromMissing(t *testing.T) {
	spec := api.SourceSpec{Type: api.SourceTypeDir, URL: "/nowhere", Helm: &api.SourceHelm{
		ValuesFrom: []api.SourceValuesReference{{Kind: "Secret", Name: "vals", ValuesKey: "v.yaml"}}}}
	get := func(_ context.Context, kind, ns, name string) (map[string][]byte, error) {
		if name == "vals" {
			return map[string][]byte{"other": nil}, nil
		}
		return nil, fmt.Errorf("%s %s/%s: %w", kind, ns, name, ErrNotFound)
	}
	_, err := FetchSpec(context.Background(), "x", spec, get)
	if err == nil || !strings.Contains(err.Error(), `spec.helm.valuesFrom[0]: Secret/kube-system/vals: no key "v.yaml"`) {
		t.Errorf("missing key: %v", err)
	}
	spec.Helm.ValuesFrom[0].Name = "gone"
	if _, err := FetchSpec(context.Background(), "x", spec, get); err == nil || !strings.Contains(err.Error(), "Secret/kube-system/gone") {
		t.Errorf("missing object: %v", err)
	}
	spec.Helm.ValuesFrom[0].Optional = true
	out, err := FetchSpec(context.Background(), "x", spec, get)
	if err != nil || len(out.Build.Helm.Values) != 0 {
		t.Errorf("optional: %v %v", out.Build.Helm.Values, err)
	}
}

// TestHelmChartInGitUpgradeAndRevert: a chart kept in a git repository
// is upgraded by a commit that changes a value and rolled back by its
// revert, and status.helm says so.
func TestHelmChartInGitUpgradeAndRevert(t *testing.T) {
	repo := t.TempDir()
	chart := map[string]string{
		"charts/web/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 1.0.0\nappVersion: \"2.1\"\n",
		"charts/web/values.yaml":           "color: blue\n",
		"charts/web/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {key: {{ .Values.color | quote }}}\n",
	}
	gitCommit(t, repo, chart)
	cp := startControlPlane(t, t.TempDir(), StoreMemory)
	st := cp.Store()
	src := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: api.SourceSpec{
		Type: api.SourceTypeGit, URL: "file://" + repo, Ref: "main", Path: "charts/web",
		Interval: &metav1.Duration{Duration: time.Second}}}
	if _, err := st.Create(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	expect := func(color string, want ...string) {
		t.Helper()
		poll(t, "web "+color, func() error {
			if v, err := configData(st, "web"); err != nil || v != color {
				return fmt.Errorf("key %q %v", v, err)
			}
			var got []string
			for _, h := range sourceObject(t, st, "web").Status.Helm {
				got = append(got, fmt.Sprintf("%d %s %s %s %s", h.Revision, h.Chart, h.AppVersion, h.Status, h.Description))
			}
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("history %q", got)
			}
			return nil
		})
	}
	expect("blue", "1 web-1.0.0 2.1 deployed Install complete")
	chart["charts/web/values.yaml"] = "color: green\n"
	gitCommit(t, repo, chart)
	expect("green", "2 web-1.0.0 2.1 deployed Upgrade complete", "1 web-1.0.0 2.1 superseded Install complete")
	chart["charts/web/values.yaml"] = "color: blue\n"
	gitCommit(t, repo, chart)
	expect("blue", "3 web-1.0.0 2.1 deployed Rollback to 1", "2 web-1.0.0 2.1 superseded Upgrade complete",
		"1 web-1.0.0 2.1 superseded Install complete")
}
