package limitrange

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// AnnotationLimitRanger records on a pod which defaults it was given, in
// Kubernetes' words.
const AnnotationLimitRanger = "kubernetes.io/limit-ranger"

var (
	limitRangeKind = api.KindOf(&api.LimitRange{})
	podKind        = api.KindOf(&api.Pod{})
	claimKind      = api.KindOf(&api.PersistentVolumeClaim{})
)

// Admit is the store hook (a store.AdmitFunc) that applies the
// LimitRanges of the namespace a pod is created in, or a claim is created
// or changed in: a container gets the default request and limit of each
// resource it does not set, then the pod or claim is refused with
// store.ErrForbidden and Kubernetes' message when it falls outside a
// range's min, max or maxLimitRequestRatio. A pod is looked at only when
// it is created, as Kubernetes does: its containers' resources do not
// change afterwards.
func Admit(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if obj == nil || (k != podKind && k != claimKind) || (k == podKind && old != nil) {
		return nil
	}
	ranges, err := rangesIn(tx, obj.GetNamespace())
	if err != nil || len(ranges) == 0 {
		return err
	}
	var problems []string
	switch o := obj.(type) {
	case *api.Pod:
		var defaulted []string
		for _, lr := range ranges {
			defaulted = append(defaulted, ApplyDefaults(o, lr)...)
		}
		if len(defaulted) > 0 {
			annotations := make(map[string]string, len(o.Annotations)+1)
			for key, v := range o.Annotations {
				annotations[key] = v
			}
			annotations[AnnotationLimitRanger] = "LimitRanger plugin set: " + strings.Join(defaulted, "; ")
			o.Annotations = annotations
			// A default limit under a request the container set is
			// Kubernetes' 422 after its admission; here it is refused
			// with the same field error.
			problems = append(problems, overLimit(o)...)
		}
		for _, lr := range ranges {
			problems = append(problems, CheckPod(o, lr)...)
		}
	case *api.PersistentVolumeClaim:
		for _, lr := range ranges {
			problems = append(problems, CheckClaim(o, lr)...)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &store.ObjectError{
		Err: store.ErrForbidden, Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Detail: aggregate(problems),
	}
}

// overLimit returns validation's message for each request over its
// container's limit.
func overLimit(p *api.Pod) []string {
	var out []string
	for _, part := range []struct {
		path string
		cs   []api.Container
	}{{"spec.containers", p.Spec.Containers}, {"spec.initContainers", p.Spec.InitContainers}} {
		for i, c := range part.cs {
			for _, name := range sortedNames(c.Resources.Requests) {
				req := c.Resources.Requests[name]
				if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
					out = append(out, fmt.Sprintf("%s[%d].resources.requests[%s]: Invalid value: %q: must be less than or equal to %s limit of %s",
						part.path, i, name, req.String(), name, lim.String()))
				}
			}
		}
	}
	return out
}

// aggregate joins messages as Kubernetes' error aggregate prints them.
func aggregate(msgs []string) string {
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// rangesIn lists a namespace's LimitRanges, by name.
func rangesIn(tx *store.Txn, namespace string) ([]*api.LimitRange, error) {
	var out []*api.LimitRange
	err := tx.Each(limitRangeKind, store.Filter{Namespace: namespace}, func(o api.Object) bool {
		out = append(out, o.(*api.LimitRange))
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list limit ranges of %s: %w", namespace, err)
	}
	return out, nil
}

// ApplyDefaults gives each container and init container of p the default
// request and limit of lr's Container item for each resource it does not
// set, and returns what it set in the words of Kubernetes' annotation
// ("cpu, memory request for container app"). The containers and their
// lists are copied before they change: a controller's pod may share them
// with its template.
func ApplyDefaults(p *api.Pod, lr *api.LimitRange) []string {
	var requests, limits api.ResourceList
	for _, it := range lr.Spec.Limits {
		if it.Type == api.LimitTypeContainer {
			requests, limits = it.DefaultRequest, it.Default
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return nil
	}
	var notes []string
	apply := func(cs *[]api.Container, what string) {
		copied := false
		for i := range *cs {
			c := &(*cs)[i]
			setReq := missing(c.Resources.Requests, requests)
			setLim := missing(c.Resources.Limits, limits)
			if len(setReq) == 0 && len(setLim) == 0 {
				continue
			}
			if !copied {
				*cs = slices.Clone(*cs)
				c = &(*cs)[i]
				copied = true
			}
			if len(setLim) > 0 {
				c.Resources.Limits = merged(c.Resources.Limits, limits, setLim)
			}
			if len(setReq) > 0 {
				c.Resources.Requests = merged(c.Resources.Requests, requests, setReq)
				notes = append(notes, fmt.Sprintf("%s request for %s %s", join(setReq), what, c.Name))
			}
			if len(setLim) > 0 {
				notes = append(notes, fmt.Sprintf("%s limit for %s %s", join(setLim), what, c.Name))
			}
		}
	}
	apply(&p.Spec.Containers, "container")
	apply(&p.Spec.InitContainers, "init container")
	return notes
}

// missing returns the resources of defaults that have lacks, sorted.
func missing(have, defaults api.ResourceList) []api.ResourceName {
	var out []api.ResourceName
	for name := range defaults {
		if _, ok := have[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// merged returns a new list: have, with names taken from defaults.
func merged(have, defaults api.ResourceList, names []api.ResourceName) api.ResourceList {
	out := make(api.ResourceList, len(have)+len(names))
	for name, q := range have {
		out[name] = q
	}
	for _, name := range names {
		out[name] = defaults[name].DeepCopy()
	}
	return out
}

func join(names []api.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// CheckPod returns Kubernetes' messages for each bound of lr that p's
// containers (Container items) or p as a whole (Pod items) break.
func CheckPod(p *api.Pod, lr *api.LimitRange) []string {
	var out []string
	for _, it := range lr.Spec.Limits {
		switch it.Type {
		case api.LimitTypeContainer:
			for _, cs := range [][]api.Container{p.Spec.Containers, p.Spec.InitContainers} {
				for i := range cs {
					out = append(out, checkItem(it, cs[i].Resources.Requests, cs[i].Resources.Limits)...)
				}
			}
		case api.LimitTypePod:
			out = append(out, checkItem(it, api.PodRequests(&p.Spec), api.PodLimits(&p.Spec))...)
		}
	}
	return out
}

// checkItem applies an item's min, max and ratio to one set of requests
// and limits.
func checkItem(it api.LimitRangeItem, requests, limits api.ResourceList) []string {
	var out []string
	t := string(it.Type)
	for _, name := range sortedNames(it.Min) {
		out = appendErr(out, minConstraint(t, name, it.Min[name], requests, limits))
	}
	for _, name := range sortedNames(it.Max) {
		out = appendErr(out, maxConstraint(t, name, it.Max[name], requests, limits))
	}
	for _, name := range sortedNames(it.MaxLimitRequestRatio) {
		out = appendErr(out, ratioConstraint(t, name, it.MaxLimitRequestRatio[name], requests, limits))
	}
	return out
}

// CheckClaim returns Kubernetes' messages for each bound of lr's
// PersistentVolumeClaim item that c's storage request breaks: its limits
// are not the user's ask, so max bounds the request.
func CheckClaim(c *api.PersistentVolumeClaim, lr *api.LimitRange) []string {
	var out []string
	for _, it := range lr.Spec.Limits {
		if it.Type != api.LimitTypePersistentVolumeClaim {
			continue
		}
		t := string(it.Type)
		for _, name := range sortedNames(it.Min) {
			out = appendErr(out, minConstraint(t, name, it.Min[name], c.Spec.Resources.Requests, api.ResourceList{}))
		}
		for _, name := range sortedNames(it.Max) {
			out = appendErr(out, maxRequestConstraint(t, name, it.Max[name], c.Spec.Resources.Requests))
		}
	}
	return out
}

func appendErr(out []string, err error) []string {
	if err != nil {
		return append(out, err.Error())
	}
	return out
}

func sortedNames(l api.ResourceList) []api.ResourceName {
	out := make([]api.ResourceName, 0, len(l))
	for name := range l {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// values compares in milli-units where none overflows, as Kubernetes does.
func values(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(t string, name api.ResourceName, enforced resource.Quantity, requests, limits api.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(t string, name api.ResourceName, enforced resource.Quantity, requests api.ResourceList) error {
	req, hasReq := requests[name]
	r, _, e := values(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(t string, name api.ResourceName, enforced resource.Quantity, requests, limits api.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, t, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(t string, name api.ResourceName, enforced resource.Quantity, requests, limits api.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := values(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, t, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, t, enforced.String())
	}
	observed := float64(l) / float64(r)
	shown := observed
	most := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		most = float64(enforced.MilliValue())
	}
	if observed > most {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, t, enforced.String(), shown)
	}
	return nil
}
