package helmrepo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-dev/berth/source"
)

const testIndex = `apiVersion: v1
entries:
  web:
  - {name: web, version: 1.2.0, urls: [web-1.2.0.tgz]}
  - {name: web, version: 2.0.0-rc.1, urls: [web-2.0.0-rc.1.tgz]}
  - {name: web, version: 1.10.3, urls: [https://cdn.example/web-1.10.3.tgz]}
  - {name: web, version: not-semver, urls: [x.tgz]}
  - {name: web, version: 1.11.0}
`

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		versions, want, err string
	}{
		{"", "1.10.3", ""},
		{"~1.2", "1.2.0", ""},
		{">=2.0.0-0", "2.0.0-rc.1", ""},
		{"1.2.0", "1.2.0", ""},
		{">=3", "", `no version of chart "web" matches ">=3"`},
		{"!!", "", `spec.helm.version "!!"`},
	} {
		rec, err := choose("idx", []byte(testIndex), "web", tc.versions)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.versions, err, tc.err)
			}
		case err != nil || rec.Version != tc.want:
			t.Errorf("%q: %v %v, want %s", tc.versions, rec, err, tc.want)
		}
	}
	if _, err := choose("idx", []byte(testIndex), "db", ""); err == nil || !strings.Contains(err.Error(), `idx: no chart "db"`) {
		t.Errorf("missing chart: %v", err)
	}
}

// TestFetchRefusesAWrongDigest: a package whose digest is not the
// index's is refused, naming both.
func TestFetchRefusesAWrongDigest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/repo/index.yaml":
			w.Write([]byte("apiVersion: v1\nentries:\n  web:\n  - {name: web, version: 1.0.0, urls: [web-1.0.0.tgz], digest: abc}\n"))
		case "/repo/web-1.0.0.tgz":
			w.Write([]byte("not a chart"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r, err := New(source.Spec{Name: "web", Type: source.TypeHelm, URL: srv.URL + "/repo/", Chart: "web"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rev := r.Fetch(context.Background(), "")
	if rev.Err == nil || !strings.Contains(rev.Err.Error(), "the index says abc") {
		t.Errorf("fetch: %v", rev.Err)
	}
	r2, _ := New(source.Spec{Name: "web", Type: source.TypeHelm, URL: srv.URL + "/nowhere", Chart: "web"}, Options{})
	if rev := r2.Fetch(context.Background(), ""); rev.Err == nil || !strings.Contains(rev.Err.Error(), "404") {
		t.Errorf("no repository: %v", rev.Err)
	}
}

func FuzzChoose(f *testing.F) {
	f.Add([]byte(testIndex), "web", "")
	f.Add([]byte(testIndex), "web", ">=1 <2")
	f.Add([]byte("entries: {web: [null]}"), "web", "")
	f.Fuzz(func(t *testing.T, data []byte, chart, versions string) {
		rec, err := choose("idx", data, chart, versions)
		if err == nil && (rec == nil || len(rec.URLs) == 0) {
			t.Fatalf("chose %v", rec)
		}
	})
}
