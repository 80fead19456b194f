package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/api"
)

// describeOptions are the flags of `berth describe` (SPEC §2).
type describeOptions struct {
	allNamespaces bool
	selector      string
}

func newDescribeCommand(g *globalOptions) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:   "describe KIND [NAME...] | KIND/NAME...",
		Short: "Show details of objects, their conditions and recent events",
		Long: `Describe prints objects in detail, as kubectl does: the fields that matter
for the kind, its conditions, and the events recorded about it.

With no NAME every object of the kind is described (narrowed by -l). A
NAME that matches no object describes every object whose name starts
with it, as kubectl does.`,
		Example: `  berth describe pod web-0
  berth describe node
  berth describe deploy -l app=web
  berth describe source fleet`,
		// parseResourceArgs answers no arguments with the known kinds.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDescribe(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "describe objects of every namespace")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, as app=web")
	return cmd
}

func runDescribe(cmd *cobra.Command, g *globalOptions, o *describeOptions, args []string) error {
	reqs, err := resourceArgs(cmd.Context(), g, args)
	if err != nil {
		return err
	}
	if err := checkSelectors(o.selector, ""); err != nil {
		return err
	}
	for _, r := range reqs {
		if len(r.names) > 0 && o.selector != "" {
			return usageErrorf("a name cannot be given together with a selector")
		}
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	r := &related{c: c, log: func(err error) { g.logger.Debug("describe: related objects", "err", err) }}
	failures, described := 0, 0
	for _, req := range reqs {
		ns := namespaceFor(req.kind, g.namespace, o.allNamespaces)
		objs, errs := findForDescribe(ctx, c, req, ns, o.selector)
		for _, e := range errs {
			fmt.Fprintln(stderr, errorMessage(e))
			failures++
		}
		for _, obj := range objs {
			if described > 0 {
				io.WriteString(stdout, "\n\n")
			}
			described++
			if err := describeObject(stdout, req.kind, obj, r.context(ctx, req.kind, obj)); err != nil {
				return failed(err)
			}
		}
	}
	if described == 0 && failures == 0 {
		fmt.Fprintln(stderr, noResourcesMessage(reqs, g.namespace, o.allNamespaces))
	}
	if failures > 0 {
		return reportedFailure()
	}
	return nil
}

// findForDescribe gets each named object, falling back to the objects
// whose names start with the name, as kubectl does; with no names it
// lists the kind.
func findForDescribe(ctx context.Context, c apiClient, r resourceRequest, ns, selector string) ([]api.Object, []error) {
	if len(r.names) == 0 {
		objs, _, err := c.List(ctx, r.kind, ns, listOptions{LabelSelector: selector})
		if err != nil {
			return nil, []error{err}
		}
		return objs, nil
	}
	var objs []api.Object
	var errs []error
	for _, name := range r.names {
		obj, err := c.Get(ctx, r.kind, ns, name)
		if err == nil {
			objs = append(objs, obj)
			continue
		}
		if !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		all, _, lerr := c.List(ctx, r.kind, ns, listOptions{})
		matched := 0
		if lerr == nil {
			for _, o := range all {
				if strings.HasPrefix(o.GetName(), name) {
					objs = append(objs, o)
					matched++
				}
			}
		}
		if matched == 0 {
			errs = append(errs, err)
		}
	}
	return objs, errs
}

// related fetches what descriptions show besides the object, each list
// once per namespace however many objects are described. What cannot be
// fetched is left out of the description, not an error: the object
// itself was found.
type related struct {
	c      apiClient
	log    func(error)
	events map[string][]*api.Event
	pods   map[string][]*api.Pod
	rss    map[string][]*api.ReplicaSet
}

func (r *related) context(ctx context.Context, k *api.Kind, obj api.Object) describeContext {
	dc := describeContext{now: timeNow()}
	if !withoutEvents[k.GVK.Kind] {
		dc.events = r.eventsIn(ctx, obj.GetNamespace())
	}
	ns := obj.GetNamespace()
	switch k.GVK.Kind {
	case "Node":
		pods, _, err := r.c.List(ctx, podKind(), "", listOptions{FieldSelector: "spec.nodeName=" + obj.GetName()})
		r.note(err)
		dc.pods = typed[*api.Pod](pods)
		k, _ := api.KindNamed("Lease")
		lease, err := r.c.Get(ctx, k, api.NamespaceNodeLease, obj.GetName())
		if err == nil {
			dc.lease, _ = lease.(*api.Lease)
		} else if !apierrors.IsNotFound(err) {
			r.note(err)
		}
	case "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "PersistentVolumeClaim":
		dc.pods = r.podsIn(ctx, ns)
	case "Deployment":
		if r.rss == nil {
			r.rss = map[string][]*api.ReplicaSet{}
		}
		if _, ok := r.rss[ns]; !ok {
			k, _ := api.KindNamed("ReplicaSet")
			objs, _, err := r.c.List(ctx, k, ns, listOptions{})
			r.note(err)
			r.rss[ns] = typed[*api.ReplicaSet](objs)
		}
		dc.replicaSets = r.rss[ns]
	case "Namespace":
		k, _ := api.KindNamed("ResourceQuota")
		objs, _, err := r.c.List(ctx, k, obj.GetName(), listOptions{})
		r.note(err)
		dc.quotas = typed[*api.ResourceQuota](objs)
		k, _ = api.KindNamed("LimitRange")
		objs, _, err = r.c.List(ctx, k, obj.GetName(), listOptions{})
		r.note(err)
		dc.limitRanges = typed[*api.LimitRange](objs)
	case "Ingress":
		k, _ := api.KindNamed("Service")
		objs, _, err := r.c.List(ctx, k, ns, listOptions{})
		r.note(err)
		dc.services = typed[*api.Service](objs)
		k, _ = api.KindNamed("EndpointSlice")
		objs, _, err = r.c.List(ctx, k, ns, listOptions{})
		r.note(err)
		dc.endpointSlices = typed[*api.EndpointSlice](objs)
	case "Service":
		k, _ := api.KindNamed("Endpoints")
		ep, err := r.c.Get(ctx, k, ns, obj.GetName())
		if err == nil {
			dc.endpoints, _ = ep.(*api.Endpoints)
		} else if !apierrors.IsNotFound(err) {
			r.note(err)
		}
	}
	return dc
}

// eventsIn lists the events of a namespace; those of cluster-scoped
// objects may be recorded in any namespace, so for them it lists all.
func (r *related) eventsIn(ctx context.Context, ns string) []*api.Event {
	if r.events == nil {
		r.events = map[string][]*api.Event{}
	}
	if evs, ok := r.events[ns]; ok {
		return evs
	}
	k, _ := api.KindNamed("Event")
	objs, _, err := r.c.List(ctx, k, ns, listOptions{})
	r.note(err)
	r.events[ns] = typed[*api.Event](objs)
	return r.events[ns]
}

func (r *related) podsIn(ctx context.Context, ns string) []*api.Pod {
	if r.pods == nil {
		r.pods = map[string][]*api.Pod{}
	}
	if pods, ok := r.pods[ns]; ok {
		return pods
	}
	objs, _, err := r.c.List(ctx, podKind(), ns, listOptions{})
	r.note(err)
	r.pods[ns] = typed[*api.Pod](objs)
	return r.pods[ns]
}

func (r *related) note(err error) {
	if err != nil && r.log != nil {
		r.log(err)
	}
}

func podKind() *api.Kind {
	k, _ := api.KindNamed("Pod")
	return k
}

// typed keeps the objects of one Go type.
func typed[T api.Object](objs []api.Object) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
