package main

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeNode follows kubectl's node description: roles, taints, whether
// it is cordoned, its Lease (the heartbeat), its conditions, addresses, capacity and
// what is allocatable, what the agent reported about the machine, the
// pods it runs with their requests and limits, and the totals.
func describeNode(w *describeWriter, obj api.Object, dc *describeContext) {
	n := obj.(*api.Node)
	w.write(level0, "Name:\t%s\n", n.Name)
	w.write(level0, "Roles:\t%s\n", orNone(strings.Join(table.NodeRoles(n), ",")))
	describeLabels(w, level0, "Labels", n.Labels)
	describeAnnotations(w, n.Annotations)
	w.write(level0, "CreationTimestamp:\t%s\n", formatTime(n.CreationTimestamp))
	describeTaints(w, n.Spec.Taints)
	w.write(level0, "Unschedulable:\t%t\n", n.Spec.Unschedulable)
	describeLease(w, dc.lease)

	if len(n.Status.Conditions) > 0 {
		w.write(level0, "Conditions:\n")
		w.write(level1, "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n")
		w.write(level1, "----\t------\t-----------------\t------------------\t------\t-------\n")
		for _, c := range n.Status.Conditions {
			w.write(level1, "%s \t%s \t%s \t%s \t%s \t%s\n", c.Type, c.Status,
				formatTime(c.LastHeartbeatTime), formatTime(c.LastTransitionTime), c.Reason, c.Message)
		}
	}
	w.write(level0, "Addresses:\n")
	for _, a := range n.Status.Addresses {
		w.write(level1, "%s:\t%s\n", a.Type, a.Address)
	}
	describeResourceList(w, "Capacity", n.Status.Capacity)
	describeResourceList(w, "Allocatable", n.Status.Allocatable)

	info := n.Status.NodeInfo
	w.write(level0, "System Info:\n")
	w.write(level1, "Machine ID:\t%s\n", info.MachineID)
	w.write(level1, "Boot ID:\t%s\n", info.BootID)
	w.write(level1, "Kernel Version:\t%s\n", info.KernelVersion)
	w.write(level1, "OS Image:\t%s\n", info.OSImage)
	w.write(level1, "Operating System:\t%s\n", info.OperatingSystem)
	w.write(level1, "Architecture:\t%s\n", info.Architecture)
	w.write(level1, "Container Runtime Version:\t%s\n", info.ContainerRuntimeVersion)
	w.write(level1, "Kubelet Version:\t%s\n", info.KubeletVersion)
	if n.Spec.PodCIDR != "" {
		w.write(level0, "PodCIDR:\t%s\n", n.Spec.PodCIDR)
	}
	if n.Spec.ProviderID != "" {
		w.write(level0, "ProviderID:\t%s\n", n.Spec.ProviderID)
	}

	pods := nonTerminatedPods(n.Name, dc.pods)
	alloc := n.Status.Allocatable
	w.write(level0, "Non-terminated Pods:\t(%d in total)\n", len(pods))
	w.write(level1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n")
	w.write(level1, "---------\t----\t\t------------\t----------\t---------------\t-------------\t---\n")
	for _, p := range pods {
		req, lim := api.PodRequests(&p.Spec), api.PodLimits(&p.Spec)
		w.write(level1, "%s\t%s\t\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name,
			fractionOf(req, alloc, api.ResourceCPU), fractionOf(lim, alloc, api.ResourceCPU),
			fractionOf(req, alloc, api.ResourceMemory), fractionOf(lim, alloc, api.ResourceMemory),
			table.Age(p.CreationTimestamp, dc.now))
	}

	reqs, lims := api.ResourceList{}, api.ResourceList{}
	for _, p := range pods {
		api.AddResources(reqs, api.PodRequests(&p.Spec))
		api.AddResources(lims, api.PodLimits(&p.Spec))
	}
	w.write(level0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n")
	w.write(level1, "Resource\tRequests\tLimits\n")
	w.write(level1, "--------\t--------\t------\n")
	for _, r := range []api.ResourceName{api.ResourceCPU, api.ResourceMemory, api.ResourceEphemeralStorage} {
		w.write(level1, "%s\t%s\t%s\n", r, fractionOf(reqs, alloc, r), fractionOf(lims, alloc, r))
	}
}

// describeTaints prints taints as `key=value:Effect`, sorted.
func describeTaints(w *describeWriter, taints []api.Taint) {
	w.write(level0, "Taints:\t")
	if len(taints) == 0 {
		w.write(level0, "%s\n", table.None)
		return
	}
	lines := make([]string, len(taints))
	for i, t := range taints {
		lines[i] = t.Key
		if t.Value != "" {
			lines[i] += "=" + t.Value
		}
		lines[i] += ":" + string(t.Effect)
	}
	sort.Strings(lines)
	for i, l := range lines {
		if i > 0 {
			w.write(level0, "\t")
		}
		w.write(level0, "%s\n", l)
	}
}

func describeResourceList(w *describeWriter, title string, rl api.ResourceList) {
	if len(rl) == 0 {
		return
	}
	w.write(level0, "%s:\n", title)
	for _, name := range sortedResourceNames(rl) {
		q := rl[name]
		w.write(level1, "%s:\t%s\n", name, q.String())
	}
}

// nonTerminatedPods are the pods bound to a node that still hold its
// resources: not Succeeded, not Failed.
func nonTerminatedPods(node string, pods []*api.Pod) []*api.Pod {
	var out []*api.Pod
	for _, p := range pods {
		if p.Spec.NodeName != node || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
			continue
		}
		out = append(out, p)
	}
	return out
}

// fractionOf renders an amount with its share of what is allocatable, as
// kubectl does: `250m (12%)`.
func fractionOf(rl, alloc api.ResourceList, name api.ResourceName) string {
	q := rl[name]
	a := alloc[name]
	pct := int64(0)
	if name == api.ResourceCPU {
		if a.MilliValue() > 0 {
			pct = int64(float64(q.MilliValue()) / float64(a.MilliValue()) * 100)
		}
	} else if a.Value() > 0 {
		pct = int64(float64(q.Value()) / float64(a.Value()) * 100)
	}
	return fmt.Sprintf("%s (%d%%)", q.String(), pct)
}

// describeLease shows who holds a node's Lease and when it was renewed, as
// kubectl does.
func describeLease(w *describeWriter, l *api.Lease) {
	if l == nil {
		w.write(level0, "Lease:\t%s\n", table.None)
		return
	}
	micro := func(t *metav1.MicroTime) string {
		if t == nil {
			return "<unset>"
		}
		return formatTime(metav1.NewTime(t.Time))
	}
	holder := "<unset>"
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	w.write(level0, "Lease:\n")
	w.write(level1, "HolderIdentity:\t%s\n", holder)
	w.write(level1, "AcquireTime:\t%s\n", micro(l.Spec.AcquireTime))
	w.write(level1, "RenewTime:\t%s\n", micro(l.Spec.RenewTime))
}
