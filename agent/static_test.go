package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// staticRecorder keeps what StaticPods reported.
type staticRecorder struct {
	mu      sync.Mutex
	sets    [][]*api.Pod
	errs    []error
	changes int
}

func (r *staticRecorder) options(o StaticOptions) StaticOptions {
	o.OnChange = func(pods []*api.Pod) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sets = append(r.sets, pods)
	}
	o.OnError = func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.errs = append(r.errs, err)
	}
	return o
}

// latest is the last set reported, by pod name, and how many sets came.
func (r *staticRecorder) latest() (map[string]*api.Pod, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sets) == 0 {
		return nil, 0
	}
	out := map[string]*api.Pod{}
	for _, p := range r.sets[len(r.sets)-1] {
		out[p.Name] = p
	}
	return out, len(r.sets)
}

func (r *staticRecorder) errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// waitSet waits for a reported set of exactly the names, checked by check.
func (r *staticRecorder) waitSet(t *testing.T, what string, names []string, check func(map[string]*api.Pod) error) map[string]*api.Pod {
	t.Helper()
	var got map[string]*api.Pod
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		set, _ := r.latest()
		var have []string
		for n := range set {
			have = append(have, n)
		}
		slices.Sort(have)
		if !slices.Equal(have, names) {
			return fmt.Errorf("pods %v, want %v", have, names)
		}
		if check != nil {
			if err := check(set); err != nil {
				return err
			}
		}
		got = set
		return nil
	})
	return got
}

// waitError waits for an error that holds every part.
func (r *staticRecorder) waitError(t *testing.T, parts ...string) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, "error "+strings.Join(parts, " … "), func() error {
	next:
		for _, err := range r.errors() {
			for _, p := range parts {
				if !strings.Contains(err.Error(), p) {
					continue next
				}
			}
			return nil
		}
		return fmt.Errorf("errors %v", r.errors())
	})
}

// runStatic runs StaticPods until the test ends.
func runStatic(t *testing.T, o StaticOptions) {
	t.Helper()
	s, err := NewStaticPods(o)
	if err != nil {
		t.Fatal(err)
	}
	testtool.Run(t, "static pods", s.Run)
}

func podManifest(name, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
spec:
  containers:
  - name: main
    image: busybox
    command: ["/bin/sh", "-c", %q]
`, name, name, command)
}

func writeManifest(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename, as editors do, so that a reader never sees half.
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestStaticPodsDir(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, filepath.Join(dir, "web.yaml"), podManifest("web", "sleep 100"))
	writeManifest(t, filepath.Join(dir, "db.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db","namespace":"data"},"spec":{"containers":[{"name":"db","image":"postgres"}]}}`)
	writeManifest(t, filepath.Join(dir, "notes.txt"), "not a manifest")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, filepath.Join(dir, "sub", "deep.yaml"), podManifest("deep", "true"))

	r := &staticRecorder{}
	runStatic(t, r.options(StaticOptions{NodeName: "n1", ManifestDir: dir}))
	first := r.waitSet(t, "the first pods", []string{"db-n1", "web-n1"}, nil)
	web, db := first["web-n1"], first["db-n1"]
	if web.Namespace != "default" || db.Namespace != "data" {
		t.Errorf("namespaces %q %q", web.Namespace, db.Namespace)
	}
	for _, p := range first {
		if p.Spec.NodeName != "n1" || p.UID == "" || p.Annotations[pods.AnnotationConfigHash] != string(p.UID) || p.Annotations[pods.AnnotationConfigSource] != pods.ConfigSourceFile {
			t.Errorf("pod %s: node %q uid %q annotations %v", p.Name, p.Spec.NodeName, p.UID, p.Annotations)
		}
	}
	if web.Spec.RestartPolicy == "" || web.Labels["app"] != "web" {
		t.Errorf("web not defaulted or lost its labels: %+v", web.ObjectMeta)
	}

	// An agent restart reads the same UIDs.
	again := &staticRecorder{}
	runStatic(t, again.options(StaticOptions{NodeName: "n1", ManifestDir: dir}))
	second := again.waitSet(t, "the pods after a restart", []string{"db-n1", "web-n1"}, nil)
	if second["web-n1"].UID != web.UID || second["db-n1"].UID != db.UID {
		t.Errorf("UIDs changed across a restart: %s %s, then %s %s", web.UID, db.UID, second["web-n1"].UID, second["db-n1"].UID)
	}

	// An edit gives the pod a new UID and leaves the other alone.
	writeManifest(t, filepath.Join(dir, "web.yaml"), podManifest("web", "sleep 200"))
	edited := r.waitSet(t, "the edited pod", []string{"db-n1", "web-n1"}, func(set map[string]*api.Pod) error {
		if set["web-n1"].UID == web.UID {
			return errors.New("web kept its UID")
		}
		return nil
	})
	if edited["db-n1"].UID != db.UID {
		t.Errorf("db changed UID on an edit of web")
	}
	if c := edited["web-n1"].Spec.Containers[0].Command; c[2] != "sleep 200" {
		t.Errorf("command %v", c)
	}
	editedUID := edited["web-n1"].UID

	// A broken file keeps its last good pod, and says why.
	writeManifest(t, filepath.Join(dir, "web.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: [broken\n")
	r.waitError(t, "web.yaml")
	writeManifest(t, filepath.Join(dir, "other.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	r.waitError(t, filepath.Join(dir, "other.yaml"), "document 0", "ConfigMap is not a Pod")
	writeManifest(t, filepath.Join(dir, "cache.yaml"), podManifest("cache", "sleep 1"))
	r.waitSet(t, "a new pod beside the kept one", []string{"cache-n1", "db-n1", "web-n1"}, func(set map[string]*api.Pod) error {
		if set["web-n1"].UID != editedUID {
			return fmt.Errorf("web UID %s, want the last good %s", set["web-n1"].UID, editedUID)
		}
		return nil
	})
	// Still broken the same way, web.yaml is not reported again.
	webErrors := 0
	for _, err := range r.errors() {
		if strings.Contains(err.Error(), "web.yaml") {
			webErrors++
		}
	}
	if webErrors != 1 {
		t.Errorf("web.yaml reported %d times, want once: %v", webErrors, r.errors())
	}

	// An invalid pod fails its file the same way.
	writeManifest(t, filepath.Join(dir, "cache.yaml"), podManifest("cache", "sleep 1")+"  restartPolicy: Sometimes\n")
	r.waitError(t, "cache.yaml", "restartPolicy")

	// Fixed, it runs again with a new UID; a deleted file's pod goes.
	writeManifest(t, filepath.Join(dir, "web.yaml"), podManifest("web", "sleep 300"))
	if err := os.Remove(filepath.Join(dir, "db.json")); err != nil {
		t.Fatal(err)
	}
	r.waitSet(t, "the fixed pod", []string{"cache-n1", "web-n1"}, func(set map[string]*api.Pod) error {
		if u := set["web-n1"].UID; u == editedUID || u == web.UID {
			return fmt.Errorf("web UID %s not new", u)
		}
		return nil
	})
}

func TestStaticPodUID(t *testing.T) {
	m := &api.Pod{}
	m.Name = "web"
	m.Spec.Containers = []api.Container{{Name: "main", Image: "busybox"}}
	a, err := StaticPod(m, "n1", pods.ConfigSourceFile, "/etc/berth/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		node, location string
		edit           func(*api.Pod)
		same           bool
	}{
		{"same", "n1", "/etc/berth/web.yaml", nil, true},
		{"other node", "n2", "/etc/berth/web.yaml", nil, false},
		{"other file", "n1", "/etc/berth/web2.yaml", nil, false},
		{"other content", "n1", "/etc/berth/web.yaml", func(p *api.Pod) { p.Spec.Containers[0].Image = "nginx" }, false},
		{"a label", "n1", "/etc/berth/web.yaml", func(p *api.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
	}
	for _, tt := range tests {
		p := m.DeepCopy()
		if tt.edit != nil {
			tt.edit(p)
		}
		b, err := StaticPod(p, tt.node, pods.ConfigSourceFile, tt.location)
		if err != nil {
			t.Fatal(err)
		}
		if (a.UID == b.UID) != tt.same {
			t.Errorf("%s: UIDs %s and %s, same=%v", tt.name, a.UID, b.UID, tt.same)
		}
	}
	if m.Name != "web" || m.Namespace != "" || m.UID != "" {
		t.Errorf("StaticPod changed its input: %+v", m.ObjectMeta)
	}
}

func TestStaticPodsHTTP(t *testing.T) {
	var (
		mu     sync.Mutex
		body   = podManifest("edge", "sleep 1")
		broken bool
		hits   int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hits++
		if broken {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	set := func(s string) {
		mu.Lock()
		body = s
		mu.Unlock()
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	r := &staticRecorder{}
	var logged testtool.Buffer
	runStatic(t, r.options(StaticOptions{NodeName: "n1", ManifestURL: srv.URL + "/pods.yaml", Interval: time.Second, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))}))
	// Each poll of the condition moves the clock past the poll period.
	poll := func(what string, names []string, check func(map[string]*api.Pod) error) map[string]*api.Pod {
		t.Helper()
		var got map[string]*api.Pod
		testtool.WaitFor(t, 10*time.Second, what, func() error {
			clk.Step(2 * time.Second)
			s, _ := r.latest()
			var have []string
			for n := range s {
				have = append(have, n)
			}
			slices.Sort(have)
			if !slices.Equal(have, names) {
				return fmt.Errorf("pods %v, want %v", have, names)
			}
			if check != nil {
				if err := check(s); err != nil {
					return err
				}
			}
			got = s
			return nil
		})
		return got
	}
	first := poll("the URL's pod", []string{"edge-n1"}, nil)["edge-n1"]
	if first.Annotations[pods.AnnotationConfigSource] != pods.ConfigSourceHTTP || first.Spec.NodeName != "n1" {
		t.Errorf("pod %+v", first.ObjectMeta)
	}

	set(podManifest("edge", "sleep 2") + "---\n" + podManifest("side", "sleep 3"))
	second := poll("the edited body", []string{"edge-n1", "side-n1"}, func(s map[string]*api.Pod) error {
		if s["edge-n1"].UID == first.UID {
			return errors.New("edge kept its UID")
		}
		return nil
	})

	set("kind: Pod\napiVersion: v1\nmetadata: {name: [x]}\n")
	testtool.WaitFor(t, 10*time.Second, "the error of a broken body", func() error {
		clk.Step(2 * time.Second)
		for _, err := range r.errors() {
			if strings.Contains(err.Error(), srv.URL) {
				return nil
			}
		}
		return fmt.Errorf("errors %v", r.errors())
	})
	if s, _ := r.latest(); len(s) != 2 || s["edge-n1"].UID != second["edge-n1"].UID {
		t.Errorf("the last good pods were not kept: %v", s)
	}

	set(podManifest("edge", "sleep 4"))
	fixed := poll("the fixed body", []string{"edge-n1"}, func(s map[string]*api.Pod) error {
		if u := s["edge-n1"].UID; u == first.UID || u == second["edge-n1"].UID {
			return errors.New("edge kept an old UID")
		}
		return nil
	})["edge-n1"]

	// A server that fails keeps the pods; the outage is logged once
	// however many retries it takes, by the source's loop, and not again
	// as an error of the static pods.
	mu.Lock()
	broken, hits = true, 0
	mu.Unlock()
	testtool.WaitFor(t, 10*time.Second, "five failed polls", func() error {
		clk.Step(2 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if hits < 5 {
			return fmt.Errorf("%d polls", hits)
		}
		return nil
	})
	// The status line, not "500": the server's port may hold those digits.
	const outage = "500 Internal Server Error"
	outages := strings.Count(logged.String(), outage)
	for _, err := range r.errors() {
		if strings.Contains(err.Error(), outage) {
			outages++
		}
	}
	if outages != 1 {
		t.Errorf("outage reported %d times, want once: %v\n%s", outages, r.errors(), logged.String())
	}
	if s, _ := r.latest(); len(s) != 1 || s["edge-n1"].UID != fixed.UID {
		t.Errorf("pods changed during the outage: %v", s)
	}
}

func TestNewStaticPodsErrors(t *testing.T) {
	if _, err := NewStaticPods(StaticOptions{ManifestDir: "/x"}); err == nil {
		t.Error("no node name: no error")
	}
	if _, err := NewStaticPods(StaticOptions{NodeName: "n1"}); err == nil {
		t.Error("no dir nor URL: no error")
	}
	if _, err := NewStaticPods(StaticOptions{NodeName: "n1", ManifestURL: "ftp://x"}); err == nil {
		t.Error("an ftp URL: no error")
	}
}

// TestStaticPodRefersToNoObject: a static pod that names a Secret,
// ConfigMap, claim or service account is refused, naming the field: its
// mirror pod would be refused, and the node may read none of them for it.
func TestStaticPodRefersToNoObject(t *testing.T) {
	for field, edit := range map[string]func(*api.Pod){
		"spec.volumes[0].secret": func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "admin-token"}}}}
		},
		"spec.containers[0].envFrom[0].configMapRef": func(p *api.Pod) {
			p.Spec.Containers[0].EnvFrom = []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "c"}}}}
		},
		"spec.serviceAccountName": func(p *api.Pod) { p.Spec.ServiceAccountName = "admin" },
	} {
		m := &api.Pod{}
		m.Name, m.Namespace = "web", "kube"
		m.Spec.Containers = []api.Container{{Name: "c", Image: "busybox"}}
		edit(m)
		_, err := StaticPod(m, "n1", pods.ConfigSourceFile, "/etc/berth/web.yaml")
		if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "kube/web-n1") {
			t.Errorf("%s: StaticPod = %v, want an error naming the pod and the field", field, err)
		}
	}
}
