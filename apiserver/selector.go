package apiserver

import (
	"fmt"
	"net/url"
	"strconv"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	ksel "k8s.io/apimachinery/pkg/selection"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// fieldGetter reads one selectable field of an object.
type fieldGetter func(api.Object) string

// selectableFields are the fields each kind can be selected by, as in
// Kubernetes: metadata.name and metadata.namespace everywhere, and the
// few per kind that kubectl and the agents use (kubectl describe node
// selects pods by spec.nodeName and status.phase, events by involvedObject).
var selectableFields = map[string]map[string]fieldGetter{
	"Pod": {
		"spec.nodeName":           podField(func(p *api.Pod) string { return p.Spec.NodeName }),
		"spec.restartPolicy":      podField(func(p *api.Pod) string { return string(p.Spec.RestartPolicy) }),
		"spec.schedulerName":      podField(func(p *api.Pod) string { return p.Spec.SchedulerName }),
		"spec.serviceAccountName": podField(func(p *api.Pod) string { return p.Spec.ServiceAccountName }),
		"status.phase":            podField(func(p *api.Pod) string { return string(p.Status.Phase) }),
		"status.podIP":            podField(func(p *api.Pod) string { return p.Status.PodIP }),
	},
	"Node": {
		"spec.unschedulable": fieldOf(func(n *api.Node) string { return strconv.FormatBool(n.Spec.Unschedulable) }),
	},
	"Namespace": {
		"status.phase": fieldOf(func(n *api.Namespace) string { return string(n.Status.Phase) }),
	},
	"PersistentVolume": {
		"status.phase": fieldOf(func(v *api.PersistentVolume) string { return string(v.Status.Phase) }),
	},
	"PersistentVolumeClaim": {
		"status.phase": fieldOf(func(v *api.PersistentVolumeClaim) string { return string(v.Status.Phase) }),
	},
	"Secret": {
		"type": fieldOf(func(s *api.Secret) string { return string(s.Type) }),
	},
	"ReplicationController": {
		"status.replicas": fieldOf(func(rc *api.ReplicationController) string { return strconv.Itoa(int(rc.Status.Replicas)) }),
	},
	"ReplicaSet": {
		"status.replicas": fieldOf(func(rs *api.ReplicaSet) string { return strconv.Itoa(int(rs.Status.Replicas)) }),
	},
	"Event": {
		"involvedObject.kind":            eventField(func(e *api.Event) string { return e.InvolvedObject.Kind }),
		"involvedObject.namespace":       eventField(func(e *api.Event) string { return e.InvolvedObject.Namespace }),
		"involvedObject.name":            eventField(func(e *api.Event) string { return e.InvolvedObject.Name }),
		"involvedObject.uid":             eventField(func(e *api.Event) string { return e.InvolvedObject.UID }),
		"involvedObject.apiVersion":      eventField(func(e *api.Event) string { return e.InvolvedObject.APIVersion }),
		"involvedObject.resourceVersion": eventField(func(e *api.Event) string { return e.InvolvedObject.ResourceVersion }),
		"involvedObject.fieldPath":       eventField(func(e *api.Event) string { return e.InvolvedObject.FieldPath }),
		"reason":                         eventField(func(e *api.Event) string { return e.Reason }),
		"type":                           eventField(func(e *api.Event) string { return e.Type }),
		"source":                         eventField(func(e *api.Event) string { return e.Source.Component }),
	},
	"Source": {
		"spec.type": fieldOf(func(s *api.Source) string { return string(s.Spec.Type) }),
	},
}

func fieldOf[T api.Object](f func(T) string) fieldGetter {
	return func(o api.Object) string {
		if t, ok := o.(T); ok {
			return f(t)
		}
		return ""
	}
}

func podField(f func(*api.Pod) string) fieldGetter     { return fieldOf(f) }
func eventField(f func(*api.Event) string) fieldGetter { return fieldOf(f) }

// SourceField selects, in every kind, the objects a source applied: those
// whose berth.dev/source annotation names it. The store indexes it, so a
// list of one source's objects reads only them.
const SourceField = "metadata.annotations." + api.AnnotationSource

func getField(k *api.Kind, name string) (fieldGetter, bool) {
	switch name {
	case "metadata.name":
		return api.Object.GetName, true
	case "metadata.namespace":
		return api.Object.GetNamespace, true
	case SourceField:
		return func(o api.Object) string { return o.GetAnnotations()[api.AnnotationSource] }, true
	}
	g, ok := selectableFields[k.GVK.Kind][name]
	return g, ok
}

// indexedFields are the field selectors a store index answers directly:
// a list or watch of one node's pods reads only that node's pods. Events
// have no index by involved object, as in Kubernetes: one is written at
// every binding, start and kill and read by a describe now and then, and
// the index cost each of them a radix path copied and 0.4 KB kept (110 to
// 190 MiB of berth sim's peak memory at 100,000 pods); a describe scans the
// namespace's events instead (BenchmarkListEventsOfObject).
var indexedFields = map[string]map[string]string{
	"Pod": {"spec.nodeName": store.IndexNode},
}

// selection is what a list or watch selects: the store filter and the
// parsed field selector (the authorizer reads it: a node may only list its
// own pods).
type selection struct {
	filter store.Filter
	fields fields.Selector
	// none is set when the selectors contradict the path (another
	// namespace): nothing matches.
	none bool
}

// parseSelection reads labelSelector and fieldSelector. Equality on an
// indexed field becomes an index lookup, metadata.namespace the namespace
// filter, and the rest one predicate; an unknown field is a 400, as in
// Kubernetes.
func parseSelection(k *api.Kind, namespace string, q url.Values) (*selection, error) {
	sel := &selection{filter: store.Filter{Namespace: namespace}}
	if ls := q.Get("labelSelector"); ls != "" {
		l, err := labels.Parse(ls)
		if err != nil {
			return nil, badRequest("unable to parse labelSelector %q: %v", ls, err)
		}
		if !l.Empty() {
			sel.filter.Labels = l
		}
	}
	fs := q.Get("fieldSelector")
	if fs == "" {
		return sel, nil
	}
	f, err := fields.ParseSelector(fs)
	if err != nil {
		return nil, badRequest("unable to parse fieldSelector %q: %v", fs, err)
	}
	sel.fields = f
	type test struct {
		get  fieldGetter
		want string
		eq   bool
	}
	var tests []test
	for _, r := range f.Requirements() {
		get, ok := getField(k, r.Field)
		if !ok {
			return nil, badRequest("field label not supported: %s", r.Field)
		}
		eq := r.Operator == ksel.Equals || r.Operator == ksel.DoubleEquals
		if !eq && r.Operator != ksel.NotEquals {
			return nil, badRequest("unsupported operator %q in fieldSelector %q", r.Operator, fs)
		}
		switch {
		case eq && r.Field == "metadata.namespace" && k.Namespaced:
			if sel.filter.Namespace != "" && sel.filter.Namespace != r.Value {
				sel.none = true
			}
			sel.filter.Namespace = r.Value
			continue
		case eq && sel.filter.Index == "" && indexedFields[k.GVK.Kind][r.Field] != "":
			sel.filter.Index = indexedFields[k.GVK.Kind][r.Field]
			sel.filter.Value = r.Value
			continue
		case eq && sel.filter.Index == "" && r.Field == SourceField && r.Value != "":
			sel.filter.Index = store.IndexSource
			sel.filter.Value = r.Value
			continue
		}
		tests = append(tests, test{get: get, want: r.Value, eq: eq})
	}
	if sel.none {
		sel.filter.Predicate = matchNothing
		return sel, nil
	}
	if len(tests) > 0 {
		sel.filter.Predicate = func(o api.Object) bool {
			for _, t := range tests {
				if (t.get(o) == t.want) != t.eq {
					return false
				}
			}
			return true
		}
	}
	return sel, nil
}

// withName narrows a selection to one object, for a watch on a named path.
func (sel *selection) withName(name string) {
	term := fields.OneTermEqualSelector("metadata.name", name)
	if sel.fields == nil {
		sel.fields = term
	} else {
		sel.fields = fields.AndSelectors(sel.fields, term)
	}
	prev := sel.filter.Predicate
	sel.filter.Predicate = func(o api.Object) bool {
		return o.GetName() == name && (prev == nil || prev(o))
	}
}

// matchNothing is the predicate of a selection that cannot match.
func matchNothing(api.Object) bool { return false }

func (sel *selection) String() string {
	return fmt.Sprintf("namespace=%q index=%s:%q fields=%v labels=%v", sel.filter.Namespace, sel.filter.Index, sel.filter.Value, sel.fields, sel.filter.Labels)
}
