package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/jsonpath"

	"github.com/berth-dev/berth/api"
)

// getOptions are the flags of `berth get` (SPEC §2).
type getOptions struct {
	allNamespaces bool
	selector      string
	fieldSelector string
	output        string
	watch         bool
	showLabels    bool
	labelColumns  []string
	sortBy        string
	noHeaders     bool
}

func newGetCommand(g *globalOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND[,KIND...] [NAME...] | KIND/NAME...",
		Short: "List or show objects",
		Long: `Get prints objects from the control plane as kubectl does: a table per kind
(-o wide adds columns), or the objects as JSON or YAML (a List when more
than one object was asked for), or their names, or what a template
makes of that JSON: kubectl's JSONPath (-o jsonpath=TEMPLATE) or a Go
template (-o go-template=TEMPLATE, with kubectl's functions exists and
base64decode), or columns of JSONPaths (-o
custom-columns=NAME:.metadata.name,NODE:.spec.nodeName), as kubectl prints
them. -o jsonpath-file=FILE, go-template-file=FILE and
custom-columns-file=FILE read the template from a file (for columns: a
line of headers, then a line of paths).

Kinds are named by plural, singular or short name: ` + knownResources() + `.

-L adds a column with the value of a label, and --sort-by orders the objects
of each kind by a JSONPath (numbers by value, quantities as quantities,
other text in natural order, an object without the field first).

With -w it goes on printing objects as they change, until interrupted.
An object that does not exist is reported and the others still printed;
the exit status is then 1.`,
		Example: `  berth get pods
  berth get deploy,svc -A
  berth get pod web-0 -o yaml
  berth get pods -o jsonpath='{.items[*].status.podIP}'
  berth get secret db -o go-template='{{.data.password | base64decode}}'
  berth get pods -l app=web -o wide -w
  berth get pods -L app,tier --sort-by=.metadata.creationTimestamp
  berth get events --sort-by=.lastTimestamp`,
		// parseResourceArgs answers no arguments with the known kinds.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list objects of every namespace")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, as app=web,tier!=db")
	f.StringVar(&o.fieldSelector, "field-selector", "", "field selector on metadata.name, metadata.namespace, spec.nodeName or status.phase")
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=HEADER:PATH,..., or jsonpath-file=, go-template-file=, custom-columns-file=FILE")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, print changes as they happen")
	f.BoolVar(&o.showLabels, "show-labels", false, "add a LABELS column")
	f.StringSliceVarP(&o.labelColumns, "label-columns", "L", nil, "add a column with the value of each of these labels (comma-separated, or the flag repeated)")
	f.StringVar(&o.sortBy, "sort-by", "", "sort the objects of each kind by this JSONPath, as .metadata.name or {.status.startTime}")
	f.BoolVar(&o.noHeaders, "no-headers", false, "leave the table header out")
	return cmd
}

func runGet(cmd *cobra.Command, g *globalOptions, o *getOptions, args []string) error {
	reqs, err := resourceArgs(cmd.Context(), g, args)
	if err != nil {
		return err
	}
	output, err := parseOutput(o.output)
	if err != nil {
		return err
	}
	if err := checkSelectors(o.selector, o.fieldSelector); err != nil {
		return err
	}
	named := 0
	for _, r := range reqs {
		named += len(r.names)
		if len(r.names) > 0 && (o.selector != "" || o.fieldSelector != "") {
			return usageErrorf("a name cannot be given together with a selector")
		}
		if len(r.names) > 0 && o.allNamespaces && r.kind.Namespaced {
			return usageErrorf("an object cannot be retrieved by name across all namespaces; name its namespace with -n")
		}
	}
	if o.watch && (len(reqs) != 1 || named > 1) {
		return usageErrorf("watch is only supported on one kind, listed or named once")
	}
	var sortBy *jsonpath.JSONPath
	if o.sortBy != "" {
		if o.watch {
			return usageErrorf("--sort-by cannot be used with --watch")
		}
		c, err := newColumn("sort-by", o.sortBy)
		if err != nil {
			return usageErrorf("--sort-by %q: want a JSONPath, as .metadata.name or {.status.startTime}", o.sortBy)
		}
		sortBy = c.path
	}

	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	opts := listOptions{LabelSelector: o.selector, FieldSelector: o.fieldSelector}
	topts := tableOptions{allNamespaces: o.allNamespaces, showLabels: o.showLabels, labelColumns: o.labelColumns, noHeaders: o.noHeaders}

	if o.watch {
		return watchGet(ctx, c, g, reqs[0], opts, output, topts, o.allNamespaces, stdout, stderr)
	}

	var groups []kindObjects
	failures := 0
	found := 0
	for _, r := range reqs {
		ns := namespaceFor(r.kind, g.namespace, o.allNamespaces)
		var objs []api.Object
		var errs []error
		var served *servedTable
		if t, ok := c.(serverTables); ok && servedColumns(r.kind, output) {
			objs, served, errs = fetchTable(ctx, t, r, ns, opts)
		} else {
			objs, errs = fetch(ctx, c, r, ns, opts)
		}
		for _, e := range errs {
			fmt.Fprintln(stderr, errorMessage(e))
			failures++
		}
		found += len(objs)
		if sortBy != nil {
			if err := sortObjects(r.kind, objs, sortBy); err != nil {
				return failed(err)
			}
		}
		groups = append(groups, kindObjects{kind: r.kind, objs: objs, served: served})
	}
	popts := printOptions{output: output, table: topts, single: len(reqs) == 1 && named == 1}
	document := output.document()
	if found > 0 || (document && failures == 0) {
		if err := printObjects(stdout, groups, popts, timeNow()); err != nil {
			return failed(err)
		}
	}
	if found == 0 && failures == 0 && !document {
		fmt.Fprintln(stderr, noResourcesMessage(reqs, g.namespace, o.allNamespaces))
	}
	if failures > 0 {
		return reportedFailure()
	}
	return nil
}

// checkSelectors rejects a selector the server would refuse, before
// anything is asked of it.
func checkSelectors(label, field string) error {
	if label != "" {
		if _, err := labels.Parse(label); err != nil {
			return usageErrorf("invalid label selector %q: %v", label, err)
		}
	}
	if field != "" {
		if _, err := fields.ParseSelector(field); err != nil {
			return usageErrorf("invalid field selector %q: %v", field, err)
		}
	}
	return nil
}

// namespaceFor is where a command looks for objects of a kind: nowhere in
// particular for cluster-scoped kinds and with -A, else -n.
func namespaceFor(k *api.Kind, namespace string, all bool) string {
	if !k.Namespaced || all {
		return ""
	}
	return namespace
}

// fetch gets the named objects of a request, or lists the kind. Each
// name that fails is one error; the others are still returned.
func fetch(ctx context.Context, c apiClient, r resourceRequest, ns string, opts listOptions) ([]api.Object, []error) {
	if len(r.names) == 0 {
		objs, _, err := c.List(ctx, r.kind, ns, opts)
		if err != nil {
			return nil, []error{err}
		}
		return objs, nil
	}
	var objs []api.Object
	var errs []error
	for _, name := range r.names {
		obj, err := c.Get(ctx, r.kind, ns, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs, errs
}

// serverTables is an apiClient that reads the server's Tables.
type serverTables interface {
	Table(ctx context.Context, k *api.Kind, ns, name string, opts listOptions) (*metav1.Table, error)
}

// servedColumns says whether get prints a table of kind k from the
// server's Tables, as kubectl prints every kind: a custom kind known
// from discovery alone, whose CustomResourceDefinition, and so its
// printer columns, the caller may not read. berth computes the columns
// of the other kinds itself, the same the server would send.
func servedColumns(k *api.Kind, output outputFormat) bool {
	return k.Custom && k.CRD == nil && (output.name == outputTable || output.name == outputWide)
}

// fetchTable is fetch through the server's Tables: the objects, and the
// columns and cells to print them with.
func fetchTable(ctx context.Context, c serverTables, r resourceRequest, ns string, opts listOptions) ([]api.Object, *servedTable, []error) {
	served := &servedTable{rows: map[types.UID][]any{}}
	var objs []api.Object
	var errs []error
	add := func(t *metav1.Table) error {
		if served.defs == nil && len(t.ColumnDefinitions) > 0 {
			served.defs = t.ColumnDefinitions
		}
		for _, row := range t.Rows {
			obj := r.kind.New()
			if err := json.Unmarshal(row.Object.Raw, obj); err != nil {
				return fmt.Errorf("the server's table of %s: a row's object: %w", r.kind.Resource, err)
			}
			obj.GetObjectKind().SetGroupVersionKind(r.kind.GVK)
			served.rows[obj.GetUID()] = row.Cells
			objs = append(objs, obj)
		}
		return nil
	}
	if len(r.names) == 0 {
		t, err := c.Table(ctx, r.kind, ns, "", opts)
		if err == nil {
			err = add(t)
		}
		if err != nil {
			return nil, nil, []error{err}
		}
		return objs, served, nil
	}
	for _, name := range r.names {
		t, err := c.Table(ctx, r.kind, ns, name, opts)
		if err == nil {
			err = add(t)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return objs, served, errs
}

// noResourcesMessage is what kubectl says when a list is empty.
func noResourcesMessage(reqs []resourceRequest, namespace string, all bool) string {
	for _, r := range reqs {
		if r.kind.Namespaced && !all {
			return fmt.Sprintf("No resources found in %s namespace.", namespace)
		}
	}
	return "No resources found"
}

// watchGet lists one kind (or one named object), prints it, then prints
// every change from the list's revision on, until the context ends
// (Ctrl-C ends a watch; that is success). A watch the server closes is
// started again from the last revision printed.
func watchGet(ctx context.Context, c apiClient, g *globalOptions, r resourceRequest, opts listOptions, output outputFormat, topts tableOptions, all bool, stdout, stderr io.Writer) error {
	ns := namespaceFor(r.kind, g.namespace, all)
	if len(r.names) == 1 {
		opts.FieldSelector = "metadata.name=" + r.names[0]
	}
	objs, rv, err := c.List(ctx, r.kind, ns, opts)
	if err != nil {
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	p := newStreamPrinter(stdout, r.kind, output, topts)
	if err := p.print(objs, timeNow()); err != nil {
		return failed(err)
	}
	for {
		opts.ResourceVersion = rv
		next, err := watchFrom(ctx, c, r.kind, ns, opts, p)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errWatchClosed):
			if next != "" {
				rv = next
			}
			continue
		case err != nil:
			fmt.Fprintln(stderr, errorMessage(err))
			return reportedFailure()
		}
	}
}

// watchFrom runs one watch, printing its events, until it ends; it
// returns the last revision it saw.
func watchFrom(ctx context.Context, c apiClient, k *api.Kind, ns string, opts listOptions, p *streamPrinter) (string, error) {
	w, err := c.Watch(ctx, k, ns, opts)
	if err != nil {
		return "", err
	}
	defer w.Stop()
	last := ""
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return last, err
		}
		if ev.Object == nil {
			continue
		}
		if rv := ev.Object.GetResourceVersion(); rv != "" {
			last = rv
		}
		if ev.Type == watchBookmark || ev.Type == watchError {
			continue
		}
		if err := p.print([]api.Object{ev.Object}, timeNow()); err != nil {
			return last, err
		}
	}
}
