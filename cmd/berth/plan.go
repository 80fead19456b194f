package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
)

// errDoesNotFit ends a plan that found something that would not go in.
var errDoesNotFit = &exitError{code: exitUsage}

type planOptions struct {
	paths    []string
	output   string
	timeout  time.Duration
	revision string
}

func newPlanCommand(g *globalOptions) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR|- | plan source NAME [--revision REF]",
		Short: "Show whether manifests would fit, schedule and roll out",
		Long: `Plan asks the server what applying manifests would do, without applying
them: on a private copy of its store it applies them as the applier does
(creates, updates and, for a Source, prunes, with admission: validation,
quotas, LimitRanges), runs the controllers that turn workloads into pods
and the scheduler over the live nodes, and reports:

  the objects created, updated and pruned;
  the pods no node would take, by workload, with the scheduler's reasons;
  writes that admission refuses, and claims that would stay Pending;
  Services whose selector would match no pod (a warning);
  for a changed Deployment or StatefulSet, whether its rollout finishes
  within maxSurge and maxUnavailable, and the PodDisruptionBudgets it
  would go below (a warning);
  the capacity left per node and in total.

Nothing is written. It exits 0 when everything fits, 2 when something
would not (or the manifests are invalid), and 1 when the plan could not
be made (the server unreachable, the deadline passed before it began).
Only the admin may plan.`,
		Example: `  berth plan -f deploy/
  berth plan -f deploy/ -o json
  berth plan source fleet --revision feature/bigger-web`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := readForAPI(cmd, g, o.paths, true)
			if err != nil {
				return err
			}
			var body bytes.Buffer
			for _, d := range objs {
				data, err := json.Marshal(d.Object)
				if err != nil {
					return failed(err)
				}
				body.WriteString("---\n")
				body.Write(data)
				body.WriteString("\n")
			}
			rev := o.revision
			if rev == "" {
				rev = strings.Join(o.paths, ",")
			}
			return runPlan(cmd, g, o, url.Values{"revision": {rev}}, body.Bytes())
		},
	}
	cmd.Flags().StringArrayVarP(&o.paths, "filename", "f", nil, "manifest file, directory (recursive) or - for stdin; repeatable")
	_ = cmd.MarkFlagRequired("filename")
	addPlanFlags(cmd, o)
	cmd.AddCommand(newPlanSourceCommand(g))
	return cmd
}

func newPlanSourceCommand(g *globalOptions) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "source NAME [--revision REF]",
		Short: "Plan a Source's repository at its ref, or at another branch, tag or commit",
		Long: `Plan source has the server read the Source's repository (at --revision,
a branch, tag or commit, when given; at the Source's ref otherwise), build
it as the Source would, and plan it as that Source: objects the Source
applied that the revision no longer holds are pruned in the plan.`,
		Example: `  berth plan source fleet --revision 3f2a9c1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"source": {args[0]}}
			if o.revision != "" {
				q.Set("ref", o.revision)
			}
			return runPlan(cmd, g, o, q, nil)
		},
	}
	cmd.Flags().StringVar(&o.revision, "revision", "", "branch, tag or commit to plan in place of the Source's ref")
	addPlanFlags(cmd, o)
	return cmd
}

func addPlanFlags(cmd *cobra.Command, o *planOptions) {
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json, or empty for text")
	cmd.Flags().DurationVar(&o.timeout, "timeout", controlplane.DefaultPlanTimeout, "how long the server may take; past it the plan is incomplete and fails")
}

func runPlan(cmd *cobra.Command, g *globalOptions, o *planOptions, q url.Values, body []byte) error {
	if o.output != "" && o.output != "json" {
		return usageErrorf("--output %q: json, or leave it out", o.output)
	}
	if o.timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	q.Set("timeout", o.timeout.String())
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ca, ok := c.(*clientAPI)
	if !ok {
		return failed(errors.New("this client cannot plan"))
	}
	resp, err := ca.c.Do(cmd.Context(), http.MethodPost, api.PlanPath, q, body, "application/yaml")
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
		return reportedFailure()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return failed(fmt.Errorf("read the plan: %w", err))
	}
	var rep controlplane.PlanReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return failed(fmt.Errorf("decode the plan: %w", err))
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&rep); err != nil {
			return failed(err)
		}
	} else {
		printPlan(out, &rep)
	}
	if !rep.Fits {
		return errDoesNotFit
	}
	return nil
}

// planNodesShown is how many nodes the text report lists one by one;
// past it, -o json has them.
const planNodesShown = 20

func printPlan(w io.Writer, r *controlplane.PlanReport) {
	fmt.Fprintf(w, "Plan of %s at store revision %d (%s)\n", orDash(r.Revision), r.StoreRevision, r.Elapsed)
	if len(r.Errors) > 0 {
		fmt.Fprintln(w, "\nThe revision is invalid:")
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	counts := map[string]int{}
	for _, c := range r.Changes {
		counts[c.Action]++
	}
	fmt.Fprintf(w, "\nObjects: %d to create, %d to update, %d to prune\n", counts["create"], counts["update"], counts["prune"])
	for _, c := range r.Changes {
		line := fmt.Sprintf("  %-7s %s", c.Action, c.Object)
		if len(c.Fields) > 0 {
			line += ": " + strings.Join(c.Fields, ", ")
		}
		fmt.Fprintln(w, line)
	}
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", title)
		for _, s := range items {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	var lines []string
	for _, u := range r.Unplaceable {
		lines = append(lines, fmt.Sprintf("%s: %d pod(s): %s", u.Workload, u.Pods, strings.Join(u.Reasons, "; ")))
	}
	section("Pods no node would take:", lines)
	lines = nil
	for _, f := range r.Refusals {
		lines = append(lines, f.Object+": "+f.Message)
	}
	section("Refused by admission:", lines)
	lines = nil
	for _, f := range r.PendingClaims {
		lines = append(lines, f.Object+": "+f.Message)
	}
	section("Claims that would stay Pending:", lines)
	lines = nil
	for _, f := range r.EmptyServices {
		lines = append(lines, f.Object+": "+f.Message)
	}
	section("Warning: Services that would select no pod:", lines)
	lines = nil
	for _, ro := range r.Rollouts {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", ro.Workload, ro.Strategy, ro.Message))
		for _, wn := range ro.Warnings {
			lines = append(lines, "  warning: "+wn)
		}
	}
	section("Rollouts:", lines)
	fmt.Fprintf(w, "\nPods: %d created, %d placed, %d deleted, %d unschedulable\n", r.Pods.Created, r.Pods.Placed, r.Pods.Deleted, r.Pods.Unplaced)
	fmt.Fprintf(w, "Capacity left: cpu %s of %s, memory %s of %s, pods %d of %d\n",
		milli(r.Total.MilliCPU), milli(r.Total.AllocatableMilliCPU), bytesOf(r.Total.Memory), bytesOf(r.Total.AllocatableMemory),
		r.Total.Pods, r.Total.AllocatablePods)
	if len(r.Nodes) <= planNodesShown {
		for _, n := range r.Nodes {
			fmt.Fprintf(w, "  %-24s cpu %s of %s, memory %s of %s, pods %d of %d\n", n.Node,
				milli(n.MilliCPU), milli(n.AllocatableMilliCPU), bytesOf(n.Memory), bytesOf(n.AllocatableMemory), n.Pods, n.AllocatablePods)
		}
	} else {
		fmt.Fprintf(w, "  (%d nodes: -o json lists each)\n", len(r.Nodes))
	}
	if r.Incomplete {
		fmt.Fprintln(w, "\nThe plan did not finish before its deadline (--timeout).")
	}
	if r.Fits {
		fmt.Fprintln(w, "\nResult: fits")
	} else {
		fmt.Fprintf(w, "\nResult: does not fit (%d problem(s))\n", len(r.Failures()))
	}
}

func milli(m int64) string { return resource.NewMilliQuantity(m, resource.DecimalSI).String() }

func bytesOf(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
