package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

// topOptions are the flags of `berth top`, kubectl's names.
type topOptions struct {
	allNamespaces bool
	selector      string
	containers    bool
	noHeaders     bool
}

// usageItem is one node's or pod's metrics as metrics.k8s.io answers
// them: the usage of the node, or of each of the pod's containers.
type usageItem struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Usage      api.ResourceList `json:"usage"`
	Containers []struct {
		Name  string           `json:"name"`
		Usage api.ResourceList `json:"usage"`
	} `json:"containers"`
}

// metricsReader is what `berth top` needs beyond apiClient: a list or an
// object of metrics.k8s.io/v1beta1, at a path under it.
type metricsReader interface {
	ResourceMetrics(ctx context.Context, path string, q url.Values) ([]usageItem, error)
}

func newTopCommand(g *globalOptions) *cobra.Command {
	o := &topOptions{}
	cmd := &cobra.Command{
		Use:   "top node|pod [NAME] [-l SELECTOR] [-A] [--containers]",
		Short: "Show what nodes and pods use",
		Long: `Top shows the CPU (in cores, averaged over the agents' last 10 seconds)
and memory (the working set) that nodes or pods use, as kubectl top does,
from the resource metrics the control plane gathers from the agents. A
node's share of what it can allocate is in percent; --containers shows
each container of a pod.`,
		Example: `  berth top node
  berth top pod -A
  berth top pod -l app=web --containers`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTop(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "pods of every namespace")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, as app=web")
	f.BoolVar(&o.containers, "containers", false, "show each container of a pod")
	f.BoolVar(&o.noHeaders, "no-headers", false, "leave the table header out")
	return cmd
}

func runTop(cmd *cobra.Command, g *globalOptions, o *topOptions, args []string) error {
	k, ok := api.LookupResource(args[0])
	nodes := ok && k == api.KindOf(&api.Node{})
	if !nodes && (!ok || k != api.KindOf(&api.Pod{})) {
		return usageErrorf("berth top shows nodes or pods, not %q", args[0])
	}
	name := ""
	if len(args) == 2 {
		name = args[1]
		switch {
		case o.selector != "":
			return usageErrorf("a name cannot be given together with a selector")
		case o.allNamespaces && !nodes:
			return usageErrorf("an object cannot be retrieved by name across all namespaces; name its namespace with -n")
		}
	}
	if err := checkSelectors(o.selector, ""); err != nil {
		return err
	}
	if nodes && (o.allNamespaces || o.containers) {
		return usageErrorf("-A and --containers are for pods")
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	mr, ok := c.(metricsReader)
	if !ok {
		return failed(errors.New("this client cannot read metrics"))
	}
	ctx := cmd.Context()
	q := url.Values{}
	if o.selector != "" {
		q.Set("labelSelector", o.selector)
	}
	path := "/nodes"
	if !nodes {
		path = "/pods"
		if !o.allNamespaces {
			path = "/namespaces/" + url.PathEscape(g.namespace) + "/pods"
		}
	}
	if name != "" {
		path += "/" + url.PathEscape(name)
	}
	items, err := mr.ResourceMetrics(ctx, path, q)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
		return reportedFailure()
	}
	if len(items) == 0 {
		// As kubectl: no pods to measure is no error, pods not measured
		// yet is.
		if !nodes && name == "" {
			if pods, _, err := c.List(ctx, k, namespaceFor(k, g.namespace, o.allNamespaces), listOptions{LabelSelector: o.selector}); err == nil && len(pods) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), noResourcesMessage([]resourceRequest{{kind: k}}, g.namespace, o.allNamespaces))
				return nil
			}
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "error: metrics not available yet")
		return reportedFailure()
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), tableMinWidth, 4, tablePadding, ' ', 0)
	if nodes {
		allocatable := map[string]api.ResourceList{}
		if objs, _, err := c.List(ctx, api.KindOf(&api.Node{}), "", listOptions{}); err == nil {
			for _, o := range objs {
				n := o.(*api.Node)
				allocatable[n.Name] = n.Status.Allocatable
			}
		}
		printNodeUsage(tw, items, allocatable, o.noHeaders)
	} else {
		printPodUsage(tw, items, o.allNamespaces, o.containers, o.noHeaders)
	}
	return tw.Flush()
}

// cpuCores and memoryBytes print usage as kubectl top does: millicores,
// and mebibytes.
func cpuCores(l api.ResourceList) string {
	q := l[api.ResourceCPU]
	return fmt.Sprintf("%dm", q.MilliValue())
}

func memoryBytes(l api.ResourceList) string {
	q := l[api.ResourceMemory]
	return fmt.Sprintf("%dMi", q.Value()/(1024*1024))
}

// percentOf is used's share of total, as kubectl top node prints it.
func percentOf(used, total int64) string {
	if total <= 0 {
		return "<unknown>"
	}
	return fmt.Sprintf("%d%%", used*100/total)
}

func printNodeUsage(w io.Writer, items []usageItem, allocatable map[string]api.ResourceList, noHeaders bool) {
	sort.Slice(items, func(i, j int) bool { return items[i].Metadata.Name < items[j].Metadata.Name })
	if !noHeaders {
		fmt.Fprintln(w, "NAME\tCPU(cores)\tCPU(%)\tMEMORY(bytes)\tMEMORY(%)")
	}
	for _, it := range items {
		alloc := allocatable[it.Metadata.Name]
		cpu, mem := it.Usage[api.ResourceCPU], it.Usage[api.ResourceMemory]
		acpu, amem := alloc[api.ResourceCPU], alloc[api.ResourceMemory]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", it.Metadata.Name,
			cpuCores(it.Usage), percentOf(cpu.MilliValue(), acpu.MilliValue()),
			memoryBytes(it.Usage), percentOf(mem.Value(), amem.Value()))
	}
}

func printPodUsage(w io.Writer, items []usageItem, allNamespaces, containers, noHeaders bool) {
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].Metadata, items[j].Metadata
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	var cols []string
	if allNamespaces {
		cols = append(cols, "NAMESPACE")
	}
	if containers {
		cols = append(cols, "POD", "NAME")
	} else {
		cols = append(cols, "NAME")
	}
	cols = append(cols, "CPU(cores)", "MEMORY(bytes)")
	if !noHeaders {
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	for _, it := range items {
		prefix := ""
		if allNamespaces {
			prefix = it.Metadata.Namespace + "\t"
		}
		if containers {
			for _, c := range it.Containers {
				fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\n", prefix, it.Metadata.Name, c.Name, cpuCores(c.Usage), memoryBytes(c.Usage))
			}
			continue
		}
		// Summed exactly, then rounded, as kubectl sums them.
		sum := api.ResourceList{api.ResourceCPU: resource.Quantity{}, api.ResourceMemory: resource.Quantity{}}
		for _, c := range it.Containers {
			for _, r := range []api.ResourceName{api.ResourceCPU, api.ResourceMemory} {
				q := sum[r]
				q.Add(c.Usage[r])
				sum[r] = q
			}
		}
		fmt.Fprintf(w, "%s%s\t%s\t%s\n", prefix, it.Metadata.Name, cpuCores(sum), memoryBytes(sum))
	}
}

// ResourceMetrics reads a list or an object of metrics.k8s.io/v1beta1.
func (a *clientAPI) ResourceMetrics(ctx context.Context, path string, q url.Values) ([]usageItem, error) {
	resp, err := a.c.Do(ctx, http.MethodGet, "/apis/metrics.k8s.io/v1beta1"+path, q, nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		usageItem
		Kind  string      `json:"kind"`
		Items []usageItem `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if strings.HasSuffix(doc.Kind, "List") {
		return doc.Items, nil
	}
	return []usageItem{doc.usageItem}, nil
}
