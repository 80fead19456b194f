package health

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/berth-dev/berth/api"
)

// Entry is one object that is not healthy, and why.
type Entry struct {
	// Object is "Kind/namespace/name" ("Kind/name" for a cluster-scoped
	// one).
	Object string
	// Status is kstatus's: InProgress, Failed, Terminating, Unknown.
	Status status.Status
	// Message is kstatus's reason, as "Available: 1/3".
	Message string
}

// String is "Kind/namespace/name: Status: message".
func (e Entry) String() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Object, e.Status)
	}
	return fmt.Sprintf("%s: %s: %s", e.Object, e.Status, e.Message)
}

// Report is the health of a set of objects.
type Report struct {
	// Total is how many objects were checked.
	Total int
	// Unhealthy are those not Current, in name order.
	Unhealthy []Entry
}

// Healthy reports whether every object is Current.
func (r Report) Healthy() bool { return len(r.Unhealthy) == 0 }

// Failed reports whether an object failed for good (kstatus Failed: a
// Deployment past its progress deadline, a failed Job): waiting longer
// will not make it healthy.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Unhealthy, func(e Entry) bool { return e.Status == status.FailedStatus })
}

// Summary lists the unhealthy objects, at most n, and how many more.
func (r Report) Summary(n int) string {
	parts := make([]string, 0, min(n, len(r.Unhealthy)))
	for _, e := range r.Unhealthy[:min(n, len(r.Unhealthy))] {
		parts = append(parts, e.String())
	}
	s := strings.Join(parts, "; ")
	if len(r.Unhealthy) > n {
		s += fmt.Sprintf("; and %d more", len(r.Unhealthy)-n)
	}
	return s
}

// Check computes the kstatus of every object.
func Check(objs []api.Object) Report {
	r := Report{Total: len(objs)}
	for _, obj := range objs {
		st, msg := Of(obj)
		if st != status.CurrentStatus {
			r.Unhealthy = append(r.Unhealthy, Entry{Object: Name(obj), Status: st, Message: msg})
		}
	}
	slices.SortFunc(r.Unhealthy, func(a, b Entry) int { return strings.Compare(a.Object, b.Object) })
	return r
}

// Of is the kstatus of one object, with its message.
func Of(obj api.Object) (status.Status, string) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return status.UnknownStatus, err.Error()
	}
	u := &unstructured.Unstructured{Object: m}
	if k := api.KindOf(obj); k != nil {
		u.SetGroupVersionKind(k.GVK)
	}
	res, err := status.Compute(u)
	if err != nil {
		return status.UnknownStatus, err.Error()
	}
	return res.Status, res.Message
}

// Name is "Kind/namespace/name", or "Kind/name" for a cluster-scoped
// object.
func Name(obj api.Object) string {
	kind := "Object"
	if k := api.KindOf(obj); k != nil {
		kind = k.GVK.Kind
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + "/" + ns + "/" + obj.GetName()
	}
	return kind + "/" + obj.GetName()
}
