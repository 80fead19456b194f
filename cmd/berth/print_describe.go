package main

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeContext is what describing an object needs besides the object:
// what the command fetched around it. Describers are pure functions of the
// object and this context, so the golden tests need no server.
type describeContext struct {
	// events are candidates for the Events section: those whose
	// involvedObject is the described object are shown.
	events []*api.Event
	// pods are the pods a node runs, a workload owns or a claim may be
	// used by; each describer picks what concerns it.
	pods []*api.Pod
	// replicaSets are the ReplicaSets of a Deployment's namespace.
	replicaSets []*api.ReplicaSet
	// endpoints is the Endpoints object of a Service, nil when none.
	endpoints *api.Endpoints
	// services and endpointSlices are those of an Ingress's namespace,
	// for its backends.
	services       []*api.Service
	endpointSlices []*api.EndpointSlice
	// quotas are the ResourceQuotas of a described Namespace.
	quotas []*api.ResourceQuota
	// limitRanges are the LimitRanges of a described Namespace.
	limitRanges []*api.LimitRange
	// lease is a described Node's Lease, nil when it has none.
	lease *api.Lease
	now   time.Time
}

// describer writes the kind-specific body of a description.
type describer func(w *describeWriter, obj api.Object, dc *describeContext)

// describers holds the kinds with their own description; the others get
// describeGeneric. They are keyed by kind, as the table columns are.
var describers = map[string]describer{
	"Pod":                     describePod,
	"Node":                    describeNode,
	"Deployment":              describeDeployment,
	"StatefulSet":             describeStatefulSet,
	"DaemonSet":               describeDaemonSet,
	"ReplicaSet":              describeReplicaSet,
	"ReplicationController":   describeReplicationController,
	"Service":                 describeService,
	"Ingress":                 describeIngress,
	"PersistentVolumeClaim":   describePVC,
	"PersistentVolume":        describePV,
	"Source":                  describeSource,
	"ConfigMap":               describeConfigMap,
	"Secret":                  describeSecret,
	"ResourceQuota":           describeResourceQuota,
	"LimitRange":              describeLimitRange,
	"HorizontalPodAutoscaler": describeHPA,
	"Namespace":               describeNamespace,
	"StorageClass":            describeStorageClass,
	"ServiceAccount":          describeServiceAccount,
	"Endpoints":               describeEndpoints,
	"PodDisruptionBudget":     describePodDisruptionBudget,
	"PriorityClass":           describePriorityClass,
}

// withoutEvents are the kinds kubectl describes without an Events
// section.
var withoutEvents = map[string]bool{
	"Event":         true,
	"Namespace":     true,
	"Secret":        true,
	"ResourceQuota": true,
	"LimitRange":    true,
}

// describeObject writes what `describe` shows of one object, ending with
// the Events section, in kubectl's layout.
func describeObject(out io.Writer, k *api.Kind, obj api.Object, dc describeContext) error {
	var buf bytes.Buffer
	w := newDescribeWriter(&buf)
	if d, ok := describers[k.GVK.Kind]; ok {
		d(w, obj, &dc)
	} else {
		describeGeneric(w, k, obj)
	}
	if !withoutEvents[k.GVK.Kind] {
		describeEvents(w, eventsFor(obj, dc.events), dc.now)
	}
	if err := w.flush(); err != nil {
		return err
	}
	_, err := out.Write(buf.Bytes())
	return err
}

// describeWriter writes indented `Key:\tvalue` lines through one
// tabwriter, as kubectl's PrefixWriter does (tabwriter minwidth 0, tab
// width 8, padding 2): values line up within each run of lines that have
// a tab, and a line without one (a section title) starts a new run.
type describeWriter struct {
	tw *tabwriter.Writer
}

func newDescribeWriter(out io.Writer) *describeWriter {
	return &describeWriter{tw: tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)}
}

// write prints a line at an indentation level (two spaces per level).
func (w *describeWriter) write(level int, format string, args ...any) {
	fmt.Fprintf(w.tw, strings.Repeat("  ", level)+format, args...)
}

// flush ends the current alignment run (before a table such as Events).
func (w *describeWriter) flush() error { return w.tw.Flush() }

// Describe levels.
const (
	level0 = iota
	level1
	level2
	level3
)

// describeTimeLayout is how describe prints times, as kubectl does.
const describeTimeLayout = time.RFC1123Z

func formatTime(t metav1.Time) string {
	if t.IsZero() {
		return "<unset>"
	}
	return t.Time.Format(describeTimeLayout)
}

// orNone shows table.None for an empty value.
func orNone(s string) string {
	if s == "" {
		return table.None
	}
	return s
}

// boolWord prints a boolean as kubectl's describe does: True or False.
func boolWord(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// skippedAnnotations are not shown: kubectl's last-applied copy of the
// whole object would drown the rest.
var skippedAnnotations = map[string]bool{api.AnnotationLastAppliedConfig: true}

// maxAnnotationLen is how long an annotation may be before describe
// prints it on lines of its own.
const maxAnnotationLen = 140

// describeLabels prints a map as `key=value`, one per line, aligned.
func describeLabels(w *describeWriter, level int, title string, m map[string]string) {
	w.write(level, "%s:\t", title)
	if len(m) == 0 {
		w.write(level0, "%s\n", table.None)
		return
	}
	for i, k := range sortedKeys(m) {
		if i > 0 {
			w.write(level, "\t")
		}
		w.write(level0, "%s=%s\n", k, m[k])
	}
}

// describeAnnotations prints annotations as `key: value`, a long or
// multi-line value on lines of its own.
func describeAnnotations(w *describeWriter, m map[string]string) {
	w.write(level0, "Annotations:\t")
	var keys []string
	for _, k := range sortedKeys(m) {
		if !skippedAnnotations[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		w.write(level0, "%s\n", table.None)
		return
	}
	for i, k := range keys {
		if i > 0 {
			w.write(level0, "\t")
		}
		v := strings.TrimSuffix(m[k], "\n")
		if len(k)+len(v)+2 > maxAnnotationLen || strings.Contains(v, "\n") {
			w.write(level0, "%s:\n", k)
			for _, line := range strings.Split(v, "\n") {
				w.write(level0, "\t  %s\n", shorten(line, maxAnnotationLen-2))
			}
			continue
		}
		w.write(level0, "%s: %s\n", k, v)
	}
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describeMeta prints the lines every description starts with.
func describeMeta(w *describeWriter, obj api.Object, namespaced bool) {
	describeHeader(w, obj, namespaced)
	w.write(level0, "CreationTimestamp:\t%s\n", formatTime(obj.GetCreationTimestamp()))
}

// describeHeader prints the name, namespace, labels and annotations, the
// lines kubectl starts most descriptions with.
func describeHeader(w *describeWriter, obj api.Object, namespaced bool) {
	w.write(level0, "Name:\t%s\n", obj.GetName())
	if namespaced {
		w.write(level0, "Namespace:\t%s\n", obj.GetNamespace())
	}
	describeLabels(w, level0, "Labels", obj.GetLabels())
	describeAnnotations(w, obj.GetAnnotations())
}

// describeControlledBy prints the object's controller, as
// `Controlled By:  ReplicaSet/web-6b7f`.
func describeControlledBy(w *describeWriter, obj api.Object) {
	if ref := api.ControllerOf(obj); ref != nil {
		w.write(level0, "Controlled By:\t%s/%s\n", ref.Kind, ref.Name)
	}
}

// eventsFor picks the events about obj, by UID (by kind, namespace and
// name for events recorded without one), oldest last seen first, as
// kubectl sorts them.
func eventsFor(obj api.Object, events []*api.Event) []*api.Event {
	k := api.KindOf(obj)
	var out []*api.Event
	for _, e := range events {
		ref := e.InvolvedObject
		switch {
		case ref.UID != "" && obj.GetUID() != "":
			if ref.UID != string(obj.GetUID()) {
				continue
			}
		case k == nil || ref.Kind != k.GVK.Kind || ref.Name != obj.GetName() || ref.Namespace != obj.GetNamespace():
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return eventLastSeen(out[i]).Before(eventLastSeen(out[j]))
	})
	return out
}

func eventLastSeen(e *api.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.FirstTimestamp.Time
}

// describeEvents prints the Events section: `<none>`, or a table of type,
// reason, age (`3m (x4 over 10m)` for a repeated event), source and
// message.
func describeEvents(w *describeWriter, events []*api.Event, now time.Time) {
	if len(events) == 0 {
		w.write(level0, "Events:\t%s\n", table.None)
		return
	}
	w.flush()
	w.write(level0, "Events:\n")
	w.write(level1, "Type\tReason\tAge\tFrom\tMessage\n")
	w.write(level1, "----\t------\t----\t----\t-------\n")
	for _, e := range events {
		age := table.Age(e.FirstTimestamp, now)
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", table.Age(e.LastTimestamp, now), e.Count, age)
		}
		w.write(level1, "%s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, age, e.Source.Component, strings.TrimSpace(e.Message))
	}
}

// describeGeneric describes a kind without a describer of its own: the
// metadata, then every other top-level field: a value on its line, a
// structure (spec, status, …) as indented YAML under its name.
func describeGeneric(w *describeWriter, k *api.Kind, obj api.Object) {
	describeMeta(w, obj, k.Namespaced)
	doc, err := objectDocument(k, obj)
	if err != nil {
		w.write(level0, "Error:\t%v\n", err)
		return
	}
	for _, key := range sortedKeys(doc) {
		switch key {
		case "apiVersion", "kind", "metadata":
			continue
		}
		switch v := doc[key].(type) {
		case map[string]any:
			if len(v) == 0 {
				continue
			}
			w.write(level0, "%s:\n", capitalize(key))
			writeIndentedYAML(w, level1, v)
		case []any:
			w.write(level0, "%s:\n", capitalize(key))
			writeIndentedYAML(w, level1, v)
		default:
			w.write(level0, "%s:\t%v\n", capitalize(key), v)
		}
	}
}

// writeIndentedYAML prints a value as YAML, indented to a level.
func writeIndentedYAML(w *describeWriter, level int, v any) {
	var buf bytes.Buffer
	if err := writeDocument(&buf, outputYAML, v); err != nil {
		w.write(level, "<%v>\n", err)
		return
	}
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		// YAML's own indentation must survive the tabwriter: no tabs.
		w.write(level, "%s\n", strings.ReplaceAll(line, "\t", " "))
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
