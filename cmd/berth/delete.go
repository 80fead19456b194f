package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/api"
)

// deleteFlags are the flags of `berth delete` (SPEC §2).
type deleteFlags struct {
	paths          []string
	selector       string
	all            bool
	cascade        string
	gracePeriod    int
	now            bool
	ignoreNotFound bool
}

// Propagation policies, as the API spells them.
var cascadePolicies = map[string]string{
	"background": "Background",
	"foreground": "Foreground",
	"orphan":     "Orphan",
	// kubectl's older spellings.
	"true":  "Background",
	"false": "Orphan",
}

func newDeleteCommand(g *globalOptions) *cobra.Command {
	o := &deleteFlags{}
	cmd := &cobra.Command{
		Use:   "delete (KIND NAME... | KIND/NAME... | KIND -l SEL | KIND --all | -f FILE|DIR)",
		Short: "Delete objects, cascading to what they own",
		Long: `Delete removes objects through the API and prints one line for each:

  pod "web-0" deleted

Objects they own are deleted after them (--cascade=background, the
default), before them (foreground), or left in place (orphan). Pods stop
within their terminationGracePeriodSeconds unless --grace-period says
otherwise. An object that does not exist is reported, the others are still
deleted, and the exit status is 1 (0 with --ignore-not-found).`,
		Example: `  berth delete pod web-0
  berth delete deploy/web svc/web
  berth delete pods -l app=web --grace-period=5
  berth delete -f deploy/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDelete(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.paths, "filename", "f", nil, "delete the objects of these manifests (file, directory or -); repeatable")
	f.StringVarP(&o.selector, "selector", "l", "", "delete the objects with these labels")
	f.BoolVar(&o.all, "all", false, "delete every object of the kind in the namespace")
	f.StringVar(&o.cascade, "cascade", "background", "background, foreground or orphan")
	f.IntVar(&o.gracePeriod, "grace-period", -1, "seconds pods get to stop; -1 keeps each pod's own, 0 stops them at once")
	f.BoolVar(&o.now, "now", false, "stop pods at once (--grace-period=1)")
	f.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "treat objects that do not exist as deleted")
	return cmd
}

// deleteTarget is one object to delete.
type deleteTarget struct {
	kind      *api.Kind
	namespace string
	name      string
}

func runDelete(cmd *cobra.Command, g *globalOptions, o *deleteFlags, args []string) error {
	policy, ok := cascadePolicies[strings.ToLower(o.cascade)]
	if !ok {
		return usageErrorf("--cascade must be background, foreground or orphan, not %q", o.cascade)
	}
	opts := deleteOptions{PropagationPolicy: policy}
	switch {
	case o.now && o.gracePeriod >= 0:
		return usageErrorf("--now and --grace-period cannot both be given")
	case o.now:
		one := int64(1)
		opts.GracePeriodSeconds = &one
	case o.gracePeriod >= 0:
		gp := int64(o.gracePeriod)
		opts.GracePeriodSeconds = &gp
	}
	if err := checkSelectors(o.selector, ""); err != nil {
		return err
	}

	var targets []deleteTarget
	var reqs []resourceRequest
	switch {
	case len(o.paths) > 0:
		if len(args) > 0 || o.selector != "" || o.all {
			return usageErrorf("-f cannot be combined with kinds, names, -l or --all")
		}
		objs, err := readForAPI(cmd, g, o.paths, false)
		if err != nil {
			return err
		}
		for _, d := range objs {
			targets = append(targets, deleteTarget{kind: d.kind, namespace: d.Object.GetNamespace(), name: d.Object.GetName()})
		}
	case len(args) == 0:
		return usageErrorf("you must name what to delete: KIND NAME, KIND/NAME, KIND -l SELECTOR, KIND --all or -f FILE")
	default:
		var err error
		if reqs, err = resourceArgs(cmd.Context(), g, args); err != nil {
			return err
		}
		for _, r := range reqs {
			switch {
			case len(r.names) > 0 && (o.selector != "" || o.all):
				return usageErrorf("names cannot be combined with -l or --all")
			case len(r.names) == 0 && o.selector == "" && !o.all:
				return usageErrorf("no name was given for %s: name the objects, or select them with -l or --all", r.kind.Resource)
			}
			ns := namespaceFor(r.kind, g.namespace, false)
			for _, name := range r.names {
				targets = append(targets, deleteTarget{kind: r.kind, namespace: ns, name: name})
			}
		}
	}

	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	failures := 0
	// Objects chosen by -l or --all are those that exist now.
	for _, r := range reqs {
		if len(r.names) > 0 {
			continue
		}
		ns := namespaceFor(r.kind, g.namespace, false)
		objs, _, err := c.List(ctx, r.kind, ns, listOptions{LabelSelector: o.selector})
		if err != nil {
			fmt.Fprintln(stderr, errorMessage(err))
			failures++
			continue
		}
		for _, obj := range objs {
			targets = append(targets, deleteTarget{kind: r.kind, namespace: obj.GetNamespace(), name: obj.GetName()})
		}
	}
	if len(targets) == 0 && failures == 0 {
		fmt.Fprintln(stderr, "No resources found")
		return nil
	}
	for _, t := range targets {
		if err := c.Delete(ctx, t.kind, t.namespace, t.name, opts); err != nil {
			if o.ignoreNotFound && apierrors.IsNotFound(err) {
				continue
			}
			fmt.Fprintln(stderr, errorMessage(err))
			failures++
			continue
		}
		fmt.Fprintf(stdout, "%s %q deleted\n", resourceName(t.kind), t.name)
	}
	if failures > 0 {
		return reportedFailure()
	}
	return nil
}
