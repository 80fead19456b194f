package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

func TestSafeNextStaysOnTheDashboard(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "/ui/",
		"/ui/nodes":                "/ui/nodes",
		"/ui/?q=a&status=ready":    "/ui/?q=a&status=ready",
		"/ui/sources/hello":        "/ui/sources/hello",
		"https://evil.example/ui/": "/ui/",
		"//evil.example/ui/":       "/ui/",
		"/ui//evil.example":        "/ui/",
		"/ui/\\evil":               "/ui/",
		"/ui/../api/v1/secrets":    "/ui/",
		"/ui/login?next=/ui/nodes": "/ui/",
		"/api/v1/namespaces":       "/ui/",
		"/ui/x\r\nSet-Cookie: a=b": "/ui/",
		"javascript:alert(1)//ui/": "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/ui/", "/ui/nodes?x=1", "//evil", "https://a/ui/", "/ui/%2e%2e/api", "/ui/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		u, err := url.Parse(got)
		if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(got, Prefix) || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\r\n\\") {
			t.Fatalf("safeNext(%q) = %q: leaves the dashboard", next, got)
		}
	})
}

func TestLogOptions(t *testing.T) {
	for _, c := range []struct {
		q, want, err string
	}{
		{"", "follow=true&tailLines=500&timestamps=false", ""},
		{"container=web&follow=false&tail=20", "container=web&tailLines=20&timestamps=false", ""},
		{"previous=true", "previous=true&tailLines=500&timestamps=false", ""},
		{"tail=99999999", "follow=true&tailLines=10000&timestamps=false", ""},
		{"tail=-1", "", "tail"},
		{"tail=x", "", "tail"},
		{"previous=maybe", "", "previous"},
		{"follow=2", "", "follow"},
		{"container=a/b", "", "container"},
	} {
		q, _ := url.ParseQuery(c.q)
		got, err := logOptions(q)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one about %s", c.q, err, c.err)
			}
			continue
		}
		if err != nil || got.Encode() != c.want {
			t.Errorf("%q: %q, %v; want %q", c.q, got.Encode(), err, c.want)
		}
	}
}

func FuzzLogOptions(f *testing.F) {
	for _, s := range []string{"", "container=web&tail=5", "previous=1&follow=0", "tail=%00", "container=%0a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		out, err := logOptions(q)
		if err != nil {
			return
		}
		if strings.ContainsAny(out.Get("container"), "/\r\n ") || out.Get("tailLines") == "" {
			t.Fatalf("%q gave %v", raw, out)
		}
	})
}

func FuzzWatchesFor(f *testing.F) {
	for _, s := range []string{"", "nodes", "sources/hello", "objects/pods/default/web", "objects/nodes/_/n1", "objects/pods/_/x", "objects//a/b", "a/b/c/d/e"} {
		f.Add(s, "namespace=team")
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		q, _ := url.ParseQuery(query)
		ws, ok := watchesFor(path, q)
		if ok && len(ws) == 0 {
			t.Fatalf("%q: a page with no watch", path)
		}
		for _, w := range ws {
			if w.kind == nil || (!w.kind.Namespaced && w.namespace != "") {
				t.Fatalf("%q: watch %+v", path, w)
			}
		}
	})
}

// FuzzLogin posts whatever a form may hold to the login handler; no
// input panics, and none makes a session without the API's word.
func FuzzLogin(f *testing.F) {
	apiCalls := 0
	apiSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiCalls++
		http.Error(w, `{"kind":"Status","code":401,"message":"no"}`, http.StatusUnauthorized)
	}))
	f.Cleanup(apiSrv.Close)
	s, err := New(Config{API: apiSrv.URL, Transport: apiSrv.Client().Transport})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][2]string{
		{"token=abc&csrf=t&next=/ui/", "t"},
		{"token=&csrf=t", "t"},
		{"token=a%20b&csrf=t", "t"},
		{"token=abc&csrf=u", "t"},
		{"%zz", "t"},
		{"token=" + strings.Repeat("a", 40000) + "&csrf=t", "t"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, body, cookie string) {
		r := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(&http.Cookie{Name: loginCookie, Value: url.QueryEscape(cookie)})
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code == http.StatusSeeOther || s.Sessions() != 0 {
			t.Fatalf("%q: a session without the API's word (%d)", body, w.Code)
		}
		if w.Header().Get("Content-Security-Policy") == "" {
			t.Fatal("no CSP")
		}
	})
}

func TestBuildTree(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	meta := func(name, uid, source string, owner ...string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}
		if source != "" {
			m.Annotations = map[string]string{api.AnnotationSource: source}
		}
		for _, o := range owner {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{UID: types.UID(o), Name: o})
		}
		return m
	}
	one := int32(1)
	objs := []api.Object{
		&api.Pod{ObjectMeta: meta("web-1", "p1", "", "rs1"), Status: api.PodStatus{Phase: api.PodRunning}},
		&api.ReplicaSet{ObjectMeta: meta("web-rs", "rs1", "", "d1"), Spec: api.ReplicaSetSpec{Replicas: &one}, Status: api.ReplicaSetStatus{ReadyReplicas: 1}},
		&api.Deployment{ObjectMeta: meta("web", "d1", "hello"), Spec: api.DeploymentSpec{Replicas: &one}},
		&api.Service{ObjectMeta: meta("web", "s1", "hello")},
		&api.EndpointSlice{ObjectMeta: meta("web-abc", "e1", "", "s1")},
		&api.ConfigMap{ObjectMeta: meta("other", "c1", "elsewhere")},
		&api.Pod{ObjectMeta: meta("stray", "p2", "")},
		&api.Pod{ObjectMeta: meta("waiting", "p3", "hello"), Status: api.PodStatus{Phase: api.PodPending, ContainerStatuses: []api.ContainerStatus{
			{Name: "app", State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "<script>"}}}}}},
	}
	roots := buildTree("hello", objs, map[types.UID]string{"s1": "reverted spec.ports"}, now)
	var got []string
	var walk func(ns []*treeNode, depth int)
	walk = func(ns []*treeNode, depth int) {
		for _, n := range ns {
			got = append(got, strings.Repeat("  ", depth)+n.Kind+" "+n.Name+" "+string(n.Health)+" "+n.Age+" "+n.Drift)
			walk(n.Children, depth+1)
		}
	}
	walk(roots, 0)
	want := []string{
		"Deployment web Progressing 60m ",
		"  ReplicaSet web-rs Healthy 60m ",
		"    Pod web-1 Healthy 60m ",
		"Pod waiting Degraded 60m ",
		"Service web Healthy 60m reverted spec.ports",
		"  EndpointSlice web-abc Healthy 60m ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if treeCount(roots) != 6 {
		t.Errorf("count %d", treeCount(roots))
	}
	if roots[1].Message != "app: CrashLoopBackOff <script>" {
		t.Errorf("message %q", roots[1].Message)
	}
}

// A StatefulSet holds its pods and the claims of its templates (owned or
// found by name), a DaemonSet its pods, a CronJob its Jobs and their pods;
// a claim that only looks like a set's stays out.
func TestBuildTreeOfStatefulSetDaemonSetAndCronJob(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	meta := func(name, uid, source string, owner ...string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}
		if source != "" {
			m.Annotations = map[string]string{api.AnnotationSource: source}
		}
		for _, o := range owner {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{UID: types.UID(o), Name: o})
		}
		return m
	}
	two := int32(2)
	db := &api.StatefulSet{ObjectMeta: meta("db", "ss", "hello"), Spec: api.StatefulSetSpec{Replicas: &two,
		VolumeClaimTemplates: []api.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
		Status: api.StatefulSetStatus{Replicas: 2, ReadyReplicas: 1, CurrentReplicas: 2, UpdatedReplicas: 2}}
	db.Generation, db.Status.ObservedGeneration = 1, 1
	agent := &api.DaemonSet{ObjectMeta: meta("agent", "ds", "hello"), Status: api.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1,
		NumberReady: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1, ObservedGeneration: 1}}
	agent.Generation = 1
	bound := api.PersistentVolumeClaimStatus{Phase: api.ClaimBound}
	objs := []api.Object{
		db,
		&api.Pod{ObjectMeta: meta("db-0", "db0", "", "ss"), Status: api.PodStatus{Phase: api.PodRunning}},
		&api.Pod{ObjectMeta: meta("db-1", "db1", "", "ss"), Status: api.PodStatus{Phase: api.PodPending}},
		&api.PersistentVolumeClaim{ObjectMeta: meta("data-db-0", "c0", ""), Status: bound},
		&api.PersistentVolumeClaim{ObjectMeta: meta("data-db-1", "c1", "", "ss"), Status: bound},
		&api.PersistentVolumeClaim{ObjectMeta: meta("data-db-x", "cx", ""), Status: bound},
		agent,
		&api.Pod{ObjectMeta: meta("agent-abc", "dsp", "", "ds"), Status: api.PodStatus{Phase: api.PodRunning}},
		&api.CronJob{ObjectMeta: meta("report", "cj", "hello"), Spec: api.CronJobSpec{Schedule: "@daily"}},
		&api.Job{ObjectMeta: meta("report-1", "job", "", "cj"), Status: api.JobStatus{Failed: 1,
			Conditions: []api.JobCondition{{Type: api.JobFailed, Status: api.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "<b>too many</b>"}}}},
		&api.Pod{ObjectMeta: meta("report-1-x", "jp", "", "job"), Status: api.PodStatus{Phase: api.PodFailed}},
	}
	roots := buildTree("hello", objs, nil, now)
	var got []string
	var walk func(ns []*treeNode, depth int)
	walk = func(ns []*treeNode, depth int) {
		for _, n := range ns {
			got = append(got, strings.Repeat("  ", depth)+n.Kind+" "+n.Name+" "+string(n.Health))
			walk(n.Children, depth+1)
		}
	}
	walk(roots, 0)
	want := []string{
		"CronJob report Healthy",
		"  Job report-1 Degraded",
		"    Pod report-1-x Degraded",
		"DaemonSet agent Healthy",
		"  Pod agent-abc Healthy",
		"StatefulSet db Progressing",
		"  Pod db-0 Healthy",
		"  Pod db-1 Progressing",
		"  PersistentVolumeClaim data-db-0 Healthy",
		"  PersistentVolumeClaim data-db-1 Healthy",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msg := roots[0].Children[0].Message; !strings.Contains(msg, "Job Failed") {
		t.Errorf("the failed Job's message %q", msg)
	}
}

func TestFoldKeepsWhatIsNotHealthyInSight(t *testing.T) {
	root := &treeNode{Kind: "ReplicaSet", Name: "web"}
	for i := range 150 {
		h := Healthy
		if i%50 == 49 {
			h = Degraded
		}
		root.Children = append(root.Children, &treeNode{Kind: "Pod", Name: fmt.Sprintf("p%03d", i), Health: h})
	}
	fold([]*treeNode{root}, 100)
	if len(root.Children) != 100 || root.Children[0].Name != "p049" || root.Children[2].Name != "p149" || root.Children[3].Name != "p000" {
		t.Errorf("children %d, first %v %v %v %v", len(root.Children), root.Children[0].Name, root.Children[1].Name, root.Children[2].Name, root.Children[3].Name)
	}
	if fmt.Sprint(root.Folded) != "[{Healthy 50}]" || treeCount([]*treeNode{root}) != 151 {
		t.Errorf("folded %v, count %d", root.Folded, treeCount([]*treeNode{root}))
	}
}

func TestRoundDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		412345 * time.Nanosecond:   "412µs",
		41234567 * time.Nanosecond: "41.2ms",
		4123456789:                 "4.12s",
	} {
		if got := roundDuration(d).String(); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}
