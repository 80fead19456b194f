package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// driftReason is the reason of the event the applier records when it
// reverts a change made outside the source.
const driftReason = "DriftCorrected"

var (
	sourceKind = api.KindOf(&api.Source{})
	podKind    = api.KindOf(&api.Pod{})
	nodeKind   = api.KindOf(&api.Node{})
	eventKind  = api.KindOf(&api.Event{})
	secretKind = api.KindOf(&api.Secret{})
)

// objectLink is the page of an object; "_" stands for the namespace of a
// cluster-scoped one.
func objectLink(resource, namespace, name string) string {
	if namespace == "" {
		namespace = "_"
	}
	return Prefix + "objects/" + url.PathEscape(resource) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// sourceRow is a Source as the overview lists it.
type sourceRow struct {
	Name      string
	Type      string
	URL       string
	Ref       string
	Revision  string
	Attempted string
	Ready     string
	Reason    string
	Health    Health
	// Error is the first line of a Ready condition that is not True.
	Error    string
	Message  string
	LastSync string
	SyncedAt string
	// Duration is how long the last sync took.
	Duration string
	Objects  int32
	// Commit describes a git revision's commit.
	Commit    *api.SourceCommit
	CommitAge string
	// HeldBack is the revision read but not applied.
	HeldBack string
	// Suspended: spec.suspend holds the source.
	Suspended bool
}

func newSourceRow(s *api.Source, now time.Time) sourceRow {
	r := sourceRow{Name: s.Name, Type: string(s.Spec.Type), URL: s.Spec.URL, Ref: s.Spec.Ref,
		Revision: s.Status.LastAppliedRevision, Attempted: s.Status.LastAttemptedRevision, Objects: s.Status.Objects, Ready: "Unknown",
		Suspended: s.Spec.Suspend}
	r.Health, r.Message = healthOf(s)
	if c := readyCondition(s); c != nil {
		r.Ready, r.Reason = string(c.Status), c.Reason
		if c.Status != metav1.ConditionTrue {
			r.Error, _, _ = strings.Cut(strings.TrimSpace(c.Message), "\n")
		}
	}
	if t := s.Status.LastSyncTime; t != nil {
		r.LastSync = age(now, t.Time)
		r.SyncedAt = t.UTC().Format(time.RFC3339)
	}
	if d := s.Status.LastSyncDuration; d != nil {
		r.Duration = roundDuration(d.Duration).String()
	}
	if c := s.Status.LastAppliedCommit; c != nil {
		r.Commit, r.CommitAge = c, age(now, c.Time.Time)
	}
	if r.Attempted != "" && r.Attempted != r.Revision {
		r.HeldBack = r.Attempted
	}
	return r
}

// roundDuration keeps three or so significant digits: 412µs, 41.2ms, 4.12s.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Millisecond)
}

type phaseCount struct {
	Phase string
	Count int
}

type eventRow struct {
	Type    string
	Reason  string
	Object  string
	Link    string
	Message string
	Count   int32
	Age     string
	at      time.Time
}

func newEventRow(e *api.Event, now time.Time) eventRow {
	at := e.LastTimestamp.Time
	if at.IsZero() {
		at = e.CreationTimestamp.Time
	}
	r := eventRow{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, Age: age(now, at), at: at,
		Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name}
	if k, ok := api.KindNamed(e.InvolvedObject.Kind); ok {
		r.Link = objectLink(k.Resource, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
	}
	return r
}

// newestEvents sorts events newest first and keeps at most n.
func newestEvents(objs []api.Object, now time.Time, n int, keep func(*api.Event) bool) []eventRow {
	var rows []eventRow
	for _, o := range objs {
		e := o.(*api.Event)
		if keep == nil || keep(e) {
			rows = append(rows, newEventRow(e, now))
		}
	}
	slices.SortStableFunc(rows, func(a, b eventRow) int { return b.at.Compare(a.at) })
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows
}

type overviewData struct {
	Query     string
	Status    string
	Namespace string
	Sources   []sourceRow
	Total     int
	// Nodes, Pods and Warnings are nil when the viewer may not list
	// them: the page says so rather than count what it cannot see.
	Nodes      *int
	NodesReady int
	Pods       []phaseCount
	PodsTotal  int
	PodsOK     bool
	Warnings   []eventRow
	WarningsOK bool
}

func (s *Server) overview(ctx context.Context, sess *session, r *http.Request, v *view) (string, int) {
	q := r.URL.Query()
	d := &overviewData{Query: q.Get("q"), Status: q.Get("status"), Namespace: q.Get("namespace")}
	v.Title, v.Nav, v.Data, v.Stream = "Overview", "overview", d, streamPath(r)
	now := s.clock.Now()
	var (
		wg                      sync.WaitGroup
		srcs, nodes, pods, evs  []api.Object
		srcRV, nodeRV, podRV    string
		evRV                    string
		srcErr, nodeErr, podErr error
		evErr                   error
	)
	c := sess.client
	wg.Go(func() { srcs, srcRV, srcErr = c.List(ctx, sourceKind, "", client.ListOptions{}) })
	wg.Go(func() { nodes, nodeRV, nodeErr = c.List(ctx, nodeKind, "", client.ListOptions{}) })
	wg.Go(func() { pods, podRV, podErr = c.List(ctx, podKind, d.Namespace, client.ListOptions{}) })
	wg.Go(func() {
		evs, evRV, evErr = c.List(ctx, eventKind, d.Namespace, client.ListOptions{FieldSelector: "type=" + api.EventTypeWarning})
	})
	wg.Wait()
	v.apiError("sources", srcErr)
	needle := strings.ToLower(d.Query)
	for _, o := range srcs {
		row := newSourceRow(o.(*api.Source), now)
		d.Total++
		text := row.Name + " " + row.URL + " " + row.Type + " " + row.Revision + " " + row.Error
		if row.Commit != nil {
			text += " " + row.Commit.Message + " " + row.Commit.Author
		}
		if needle != "" && !strings.Contains(strings.ToLower(text), needle) {
			continue
		}
		if !statusMatches(d.Status, row) {
			continue
		}
		d.Sources = append(d.Sources, row)
	}
	slices.SortFunc(d.Sources, func(a, b sourceRow) int { return cmp.Compare(a.Name, b.Name) })
	if nodeErr == nil {
		n := len(nodes)
		d.Nodes = &n
		for _, o := range nodes {
			if h, _ := healthOf(o); h == Healthy {
				d.NodesReady++
			}
		}
	}
	v.apiError("nodes", nodeErr)
	if podErr == nil {
		d.PodsOK = true
		counts := map[string]int{}
		for _, o := range pods {
			counts[string(o.(*api.Pod).Status.Phase)]++
		}
		d.PodsTotal = len(pods)
		for _, ph := range []string{"Running", "Pending", "Succeeded", "Failed", "Unknown"} {
			d.Pods = append(d.Pods, phaseCount{ph, counts[ph]})
		}
	}
	v.apiError("pods", podErr)
	if evErr == nil {
		d.WarningsOK = true
		d.Warnings = newestEvents(evs, now, 10, nil)
	}
	v.apiError("events", evErr)
	for _, rv := range []string{srcRV, nodeRV, podRV, evRV} {
		v.seen(rv)
	}
	return "overview", http.StatusOK
}

// statusMatches is the overview's status filter: ready, notready, or
// any.
func statusMatches(status string, r sourceRow) bool {
	switch status {
	case "ready":
		return r.Ready == "True"
	case "notready":
		return r.Ready != "True"
	}
	return true
}

// streamPath is the change stream of a page: the page's path under
// /ui/stream/, with its query.
func streamPath(r *http.Request) string {
	p := Prefix + "stream/" + strings.TrimPrefix(r.URL.Path, Prefix)
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	return p
}

type sourceData struct {
	Source     sourceRow
	Spec       api.SourceSpec
	Conditions []metav1.Condition
	Namespace  string
	Tree       []*treeNode
	Count      int
	// All: every child is shown (?all=1), none folded.
	All     bool
	History []eventRow
	// Unlisted are the kinds the viewer may not list: their objects are
	// missing from the tree.
	Unlisted []string
}

// treeKinds are the kinds a source's tree is gathered from: every kind
// but those no source applies and that own nothing.
func treeKinds() []*api.Kind {
	var out []*api.Kind
	for _, k := range api.Kinds() {
		switch k.Resource {
		case "events", "leases", "sources", "endpoints":
			continue
		}
		out = append(out, k)
	}
	return out
}

// sourceField is the API's field selector of the objects a source
// applied: the store indexes the berth.dev/source annotation.
const sourceField = "metadata.annotations." + api.AnnotationSource

// maxChildNamespaces bounds the namespaces a source's page lists the
// children of its objects in one by one; beyond, it lists all at once.
const maxChildNamespaces = 8

// childKinds are the kinds controllers make for the objects a source
// applied: ReplicaSets, Pods, Jobs, ControllerRevisions, EndpointSlices,
// a StatefulSet's claims.
func childKinds() []*api.Kind {
	var out []*api.Kind
	for _, r := range []string{"replicasets", "pods", "jobs", "controllerrevisions", "endpointslices", "persistentvolumeclaims"} {
		if k, ok := api.LookupResource(r); ok && k.Resource == r {
			out = append(out, k)
		}
	}
	return out
}

// kindList is one list's answer.
type kindList struct {
	kind *api.Kind
	objs []api.Object
	rv   string
	err  error
}

// listKinds lists kinds, each in the namespaces spaces gives ("" is
// all), eight lists at a time; a cluster-scoped kind is listed once.
func listKinds(ctx context.Context, c *client.Client, kinds []*api.Kind, spaces func(*api.Kind) []string, opts client.ListOptions) []kindList {
	var jobs []kindList
	var nss []string
	for _, k := range kinds {
		if !k.Namespaced {
			jobs, nss = append(jobs, kindList{kind: k}), append(nss, "")
			continue
		}
		for _, ns := range spaces(k) {
			jobs, nss = append(jobs, kindList{kind: k}), append(nss, ns)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			j := &jobs[i]
			j.objs, j.rv, j.err = c.List(ctx, j.kind, nss[i], opts)
		})
	}
	wg.Wait()
	return jobs
}

func (s *Server) sourcePage(ctx context.Context, sess *session, r *http.Request, v *view) (string, int) {
	name := r.PathValue("name")
	d := &sourceData{Namespace: r.URL.Query().Get("namespace")}
	v.Title, v.Nav, v.Data, v.Stream = "Source "+name, "overview", d, streamPath(r)
	c := sess.client
	now := s.clock.Now()
	obj, err := c.Get(ctx, sourceKind, "", name)
	if err != nil {
		v.apiError("source "+name, err)
		return "source", statusOf(err)
	}
	src := obj.(*api.Source)
	v.seen(src.ResourceVersion)
	d.Source, d.Spec, d.Conditions = newSourceRow(src, now), src.Spec, src.Status.Conditions
	d.Spec.Options = nil // may hold credentials

	var evs, drifts []api.Object
	var evErr, driftErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		evs, _, evErr = c.List(ctx, eventKind, "", client.ListOptions{FieldSelector: "involvedObject.kind=" + sourceKind.GVK.Kind + ",involvedObject.name=" + name})
	})
	wg.Go(func() {
		drifts, _, driftErr = c.List(ctx, eventKind, d.Namespace, client.ListOptions{FieldSelector: "reason=" + driftReason})
	})
	// The objects the source applied, by the store's index of the
	// source annotation; then, in their namespaces only, the kinds that
	// controllers make for them.
	kinds := treeKinds()
	roots := listKinds(ctx, c, kinds, func(*api.Kind) []string { return []string{d.Namespace} },
		client.ListOptions{FieldSelector: sourceField + "=" + name})
	namespaces := map[string]bool{}
	for _, l := range roots {
		for _, o := range l.objs {
			if o.GetNamespace() != "" {
				namespaces[o.GetNamespace()] = true
			}
		}
	}
	spaces := slices.Sorted(maps.Keys(namespaces))
	if d.Namespace != "" || len(spaces) > maxChildNamespaces {
		spaces = []string{d.Namespace}
	}
	var owned []kindList
	wg.Go(func() {
		if len(namespaces) > 0 || d.Namespace != "" {
			owned = listKinds(ctx, c, childKinds(), func(*api.Kind) []string { return spaces }, client.ListOptions{})
		}
	})
	wg.Wait()
	var all []api.Object
	seen := map[types.UID]bool{}
	unlisted := map[string]bool{}
	for _, l := range slices.Concat(roots, owned) {
		if l.err != nil {
			if client.IsForbidden(l.err) {
				unlisted[l.kind.Resource] = true
			} else {
				v.apiError(l.kind.Resource, l.err)
			}
			continue
		}
		v.seen(l.rv)
		for _, o := range l.objs {
			if !seen[o.GetUID()] {
				seen[o.GetUID()] = true
				all = append(all, o)
			}
		}
	}
	d.Unlisted = slices.Sorted(maps.Keys(unlisted))
	drift := map[types.UID]string{}
	for _, o := range drifts {
		if e := o.(*api.Event); e.InvolvedObject.UID != "" {
			drift[types.UID(e.InvolvedObject.UID)] = e.Message
		}
	}
	if driftErr != nil && !client.IsForbidden(driftErr) {
		v.apiError("events", driftErr)
	}
	if evErr == nil {
		d.History = newestEvents(evs, now, 20, nil)
	} else if !client.IsForbidden(evErr) {
		v.apiError("events", evErr)
	}
	d.Tree = buildTree(name, all, drift, now)
	d.All = r.URL.Query().Get("all") == "1"
	if !d.All {
		fold(d.Tree, maxChildren)
	}
	d.Count = treeCount(d.Tree)
	return "source", http.StatusOK
}

// statusOf is the code a page answers with when the API refused what it
// is about: its code, or 502 when there was none.
func statusOf(err error) int {
	if c := client.Code(err); c >= 400 && c < 600 {
		return c
	}
	return http.StatusBadGateway
}

// syncSource asks for a sync now, as `berth reconcile source` does: a new
// value of the reconcile-requested-at annotation.
func (s *Server) syncSource(w http.ResponseWriter, r *http.Request, sess *session) {
	at := s.clock.Now().UTC().Format(time.RFC3339Nano)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{api.AnnotationReconcileRequestedAt: at}}})
	s.patchSource(w, r, sess, "sync", patch, "?synced="+url.QueryEscape(at))
}

// suspendSource sets or clears the Source's spec.suspend, as `berth
// suspend|resume source` do.
func (s *Server) suspendSource(suspend bool) func(http.ResponseWriter, *http.Request, *session) {
	verb := map[bool]string{true: "suspend", false: "resume"}[suspend]
	patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		s.patchSource(w, r, sess, verb, patch, "")
	}
}

// patchSource writes a merge patch to the Source of the path as the
// viewer, then sends the viewer back to its page; a refusal is the API's
// message in a page with the API's code.
func (s *Server) patchSource(w http.ResponseWriter, r *http.Request, sess *session, verb string, patch []byte, query string) {
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	back := Prefix + "sources/" + url.PathEscape(name)
	if _, err := sess.client.Patch(ctx, sourceKind, "", name, patch); err != nil {
		v := &view{Title: strings.ToUpper(verb[:1]) + verb[1:] + " " + name, User: sess.user, CSRF: sess.csrf, Data: back}
		v.apiError(verb+" "+name, err)
		s.render(w, "failed", statusOf(err), v)
		return
	}
	http.Redirect(w, r, back+query, http.StatusSeeOther)
}

type containerRow struct {
	Name     string
	Image    string
	Ready    bool
	Restarts int32
	State    string
	Init     bool
}

type objectData struct {
	Kind       string
	Resource   string
	Namespace  string
	Name       string
	Health     Health
	Message    string
	Age        string
	Source     string
	YAML       string
	Conditions []condition
	Events     []eventRow
	Pod        *podData
	// Diff compares the object live with what its source declares.
	Diff *diffData
}

// diffData is an object live against what the revision its source last
// applied declares (sources/diff).
type diffData struct {
	Revision string
	// Lines of the unified diff; none when live agrees.
	Lines []diffLine
	// Error is why there is no diff: not allowed, not known.
	Error string
}

type diffLine struct {
	Class string
	Text  string
}

type podData struct {
	Node       string
	NodeLink   string
	Phase      string
	IP         string
	Containers []containerRow
	Logs       string
}

func (s *Server) objectPage(ctx context.Context, sess *session, r *http.Request, v *view) (string, int) {
	resource, ns, name := r.PathValue("resource"), r.PathValue("namespace"), r.PathValue("name")
	if ns == "_" {
		ns = ""
	}
	d := &objectData{Resource: resource, Namespace: ns, Name: name}
	v.Title, v.Nav, v.Data, v.Stream = resource+"/"+name, "objects", d, streamPath(r)
	k, ok := api.LookupResource(resource)
	if !ok || k.Resource != resource {
		v.Errors = append(v.Errors, fmt.Sprintf("resource %q: berth serves no such resource", resource))
		return "object", http.StatusNotFound
	}
	if k.Namespaced == (ns == "") {
		v.Errors = append(v.Errors, fmt.Sprintf("%s: namespace %q: the kind is %snamespaced", resource, ns, map[bool]string{true: "", false: "not "}[k.Namespaced]))
		return "object", http.StatusNotFound
	}
	c := sess.client
	now := s.clock.Now()
	obj, err := c.Get(ctx, k, ns, name)
	if err != nil {
		v.apiError(resource+"/"+name, err)
		return "object", statusOf(err)
	}
	v.seen(obj.GetResourceVersion())
	d.Kind = k.GVK.Kind
	d.Health, d.Message = healthOf(obj)
	d.Age = age(now, obj.GetCreationTimestamp().Time)
	d.Source = obj.GetAnnotations()[api.AnnotationSource]
	d.Conditions = conditionsOf(obj)
	d.YAML, err = objectYAML(obj)
	v.apiError("yaml", err)
	evs, rv, err := c.List(ctx, eventKind, ns, client.ListOptions{FieldSelector: "involvedObject.name=" + name + ",involvedObject.kind=" + k.GVK.Kind})
	if err == nil {
		v.seen(rv)
		d.Events = newestEvents(evs, now, 50, nil)
	} else if !client.IsForbidden(err) {
		v.apiError("events", err)
	}
	if p, ok := obj.(*api.Pod); ok {
		d.Pod = newPodData(p)
	}
	if d.Source != "" && d.Source != string(api.SourceTypeAPI) {
		d.Diff = sourceDiff(ctx, c, d.Source, k, ns, name)
	}
	return "object", http.StatusOK
}

// maxDiffBytes bounds the diff a page shows.
const maxDiffBytes = 1 << 20

// sourceDiff reads, as the viewer, the object live against what its
// source declares: the API's sources/diff, the applier's own comparison.
func sourceDiff(ctx context.Context, c *client.Client, src string, k *api.Kind, ns, name string) *diffData {
	q := url.Values{"resource": {k.Resource}, "name": {name}}
	if ns != "" {
		q.Set("namespace", ns)
	}
	d := &diffData{}
	resp, err := c.Do(ctx, http.MethodGet, "/apis/"+api.BerthV1.String()+"/sources/"+url.PathEscape(src)+"/diff", q, nil, "")
	if err != nil {
		d.Error = errorText(err)
		return d
	}
	defer resp.Body.Close()
	d.Revision = resp.Header.Get("Berth-Revision")
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiffBytes+1))
	if err != nil {
		d.Error = "read the diff: " + err.Error()
		return d
	}
	text := string(body)
	if len(body) > maxDiffBytes {
		text = text[:maxDiffBytes] + "\n… (cut at 1 MiB)"
	}
	for l := range strings.Lines(text) {
		l = strings.TrimRight(l, "\n")
		class := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			class = "d-file"
		case strings.HasPrefix(l, "@@"):
			class = "d-hunk"
		case strings.HasPrefix(l, "+"):
			class = "d-add"
		case strings.HasPrefix(l, "-"):
			class = "d-del"
		}
		d.Lines = append(d.Lines, diffLine{class, l})
	}
	return d
}

func newPodData(p *api.Pod) *podData {
	d := &podData{Node: p.Spec.NodeName, Phase: string(p.Status.Phase), IP: p.Status.PodIP,
		Logs: Prefix + "logs/" + url.PathEscape(p.Namespace) + "/" + url.PathEscape(p.Name)}
	if d.Node != "" {
		d.NodeLink = objectLink("nodes", "", d.Node)
	}
	statuses := map[string]api.ContainerStatus{}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		statuses[cs.Name] = cs
	}
	add := func(c api.Container, init bool) {
		cs := statuses[c.Name]
		row := containerRow{Name: c.Name, Image: c.Image, Ready: cs.Ready, Restarts: cs.RestartCount, Init: init, State: "Waiting"}
		switch {
		case cs.State.Running != nil:
			row.State = "Running"
		case cs.State.Terminated != nil:
			row.State = strings.TrimSpace(fmt.Sprintf("Terminated %s (exit %d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode))
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			row.State = "Waiting: " + cs.State.Waiting.Reason
		}
		d.Containers = append(d.Containers, row)
	}
	for _, c := range p.Spec.InitContainers {
		add(c, true)
	}
	for _, c := range p.Spec.Containers {
		add(c, false)
	}
	return d
}

// objectYAML is an object as YAML without its managed fields, a Secret's
// values replaced by their sizes.
func objectYAML(obj api.Object) (string, error) {
	obj = obj.DeepCopyObject().(api.Object)
	obj.SetManagedFields(nil)
	if k := api.KindOf(obj); k != nil {
		obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	if sec, ok := obj.(*api.Secret); ok {
		hidden := map[string]any{}
		for k, v := range sec.Data {
			hidden[k] = fmt.Sprintf("(hidden: %d bytes)", len(v))
		}
		for k, v := range sec.StringData {
			hidden[k] = fmt.Sprintf("(hidden: %d bytes)", len(v))
		}
		delete(doc, "stringData")
		if len(hidden) > 0 {
			doc["data"] = hidden
		}
		if md, ok := doc["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
					ann["kubectl.kubernetes.io/last-applied-configuration"] = "(hidden)"
				}
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

type nodeRow struct {
	Name       string
	Link       string
	Health     Health
	Message    string
	Conditions []api.NodeCondition
	Taints     []api.Taint
	CPU        string
	Memory     string
	Pods       string
	// CPUUse and MemUse are the usage now in millicores and bytes, and
	// their shares of the capacity in percent; -1 without metrics.
	CPUUse, MemUse         int64
	CPUPercent, MemPercent int
	Age                    string
}

type nodesData struct {
	Nodes      []nodeRow
	MetricsErr string
}

func (s *Server) nodesPage(ctx context.Context, sess *session, r *http.Request, v *view) (string, int) {
	d := &nodesData{}
	v.Title, v.Nav, v.Data, v.Stream = "Nodes", "nodes", d, streamPath(r)
	c := sess.client
	now := s.clock.Now()
	nodes, rv, err := c.List(ctx, nodeKind, "", client.ListOptions{})
	if err != nil {
		v.apiError("nodes", err)
		return "nodes", http.StatusOK
	}
	v.seen(rv)
	usage, err := nodeUsage(ctx, c)
	if err != nil {
		d.MetricsErr = errorText(err)
	}
	for _, o := range nodes {
		n := o.(*api.Node)
		row := nodeRow{Name: n.Name, Link: objectLink("nodes", "", n.Name), Conditions: n.Status.Conditions, Taints: n.Spec.Taints,
			CPUUse: -1, MemUse: -1, Age: age(now, n.CreationTimestamp.Time)}
		row.Health, row.Message = healthOf(n)
		cpu, mem, pods := n.Status.Capacity[api.ResourceCPU], n.Status.Capacity[api.ResourceMemory], n.Status.Capacity[api.ResourcePods]
		row.CPU, row.Memory, row.Pods = cpu.String(), mem.String(), pods.String()
		if u, ok := usage[n.Name]; ok {
			ucpu, umem := u[api.ResourceCPU], u[api.ResourceMemory]
			row.CPUUse, row.MemUse = ucpu.MilliValue(), umem.Value()
			if c := cpu.MilliValue(); c > 0 {
				row.CPUPercent = int(row.CPUUse * 100 / c)
			}
			if m := mem.Value(); m > 0 {
				row.MemPercent = int(row.MemUse * 100 / m)
			}
		}
		d.Nodes = append(d.Nodes, row)
	}
	slices.SortFunc(d.Nodes, func(a, b nodeRow) int { return cmp.Compare(a.Name, b.Name) })
	return "nodes", http.StatusOK
}

// nodeUsage reads the nodes' usage now from metrics.k8s.io, which the
// control plane answers from what the agents sample.
func nodeUsage(ctx context.Context, c *client.Client) (map[string]api.ResourceList, error) {
	resp, err := c.Do(ctx, http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", nil, nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Usage api.ResourceList `json:"usage"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("read node metrics: %w", err)
	}
	out := map[string]api.ResourceList{}
	for _, it := range doc.Items {
		out[it.Metadata.Name] = it.Usage
	}
	return out, nil
}

func pathEscape(s string) string { return url.PathEscape(s) }
