package main

import (
	"strings"

	"github.com/berth-dev/berth/api"
)

// describeConfigMap prints each key with its value, as kubectl does, and
// only the size of binary values.
func describeConfigMap(w *describeWriter, obj api.Object, _ *describeContext) {
	c := obj.(*api.ConfigMap)
	describeHeader(w, c, true)
	w.write(level0, "\nData\n====\n")
	for _, k := range sortedKeys(c.Data) {
		w.write(level0, "%s:\n----\n", k)
		w.write(level0, "%s\n", strings.ReplaceAll(c.Data[k], "\t", "    "))
		w.write(level0, "\n")
	}
	w.write(level0, "\nBinaryData\n====\n")
	for _, k := range sortedKeys(c.BinaryData) {
		w.write(level0, "%s: %d bytes\n", k, len(c.BinaryData[k]))
	}
	w.write(level0, "\n")
}

// describeSecret prints the secret's keys and the size of each value,
// never a value: describe output ends up in terminals, logs and tickets.
func describeSecret(w *describeWriter, obj api.Object, _ *describeContext) {
	s := obj.(*api.Secret)
	describeHeader(w, s, true)
	w.write(level0, "\nType:\t%s\n", s.Type)
	w.write(level0, "\nData\n====\n")
	sizes := map[string]int{}
	for k, v := range s.StringData {
		sizes[k] = len(v)
	}
	for k, v := range s.Data {
		sizes[k] = len(v)
	}
	for _, k := range sortedKeys(sizes) {
		w.write(level0, "%s:\t%d bytes\n", k, sizes[k])
	}
}

// describeResourceQuota prints what is used of each limit, as kubectl
// does.
func describeResourceQuota(w *describeWriter, obj api.Object, _ *describeContext) {
	q := obj.(*api.ResourceQuota)
	w.write(level0, "Name:\t%s\n", q.Name)
	w.write(level0, "Namespace:\t%s\n", q.Namespace)
	describeQuotaUsage(w, level0, q, "----")
}

// describeQuotaUsage prints a quota's table; kubectl underlines the Used
// and Hard titles with four dashes on a quota and three in a namespace.
func describeQuotaUsage(w *describeWriter, level int, q *api.ResourceQuota, dashes string) {
	hard := q.Status.Hard
	if len(hard) == 0 {
		hard = q.Spec.Hard
	}
	w.write(level, "Resource\tUsed\tHard\n")
	w.write(level, "--------\t%s\t%s\n", dashes, dashes)
	for _, name := range sortedResourceNames(hard) {
		used := q.Status.Used[name]
		h := hard[name]
		w.write(level, "%s\t%s\t%s\n", name, used.String(), h.String())
	}
}

// describeNamespace follows kubectl: the namespace's phase and the quotas
// that bound it.
func describeNamespace(w *describeWriter, obj api.Object, dc *describeContext) {
	n := obj.(*api.Namespace)
	w.write(level0, "Name:\t%s\n", n.Name)
	describeLabels(w, level0, "Labels", n.Labels)
	describeAnnotations(w, n.Annotations)
	w.write(level0, "Status:\t%s\n", n.Status.Phase)
	w.write(level0, "\n")
	var quotas []*api.ResourceQuota
	for _, q := range dc.quotas {
		if q.Namespace == n.Name {
			quotas = append(quotas, q)
		}
	}
	if len(quotas) == 0 {
		w.write(level0, "No resource quota.\n")
	} else {
		w.write(level0, "Resource Quotas\n")
		for _, q := range quotas {
			w.write(level1, "Name:\t%s\n", q.Name)
			describeQuotaUsage(w, level1, q, "---")
		}
	}
	w.write(level0, "\n")
	var limits []*api.LimitRange
	for _, l := range dc.limitRanges {
		if l.Namespace == n.Name {
			limits = append(limits, l)
		}
	}
	if len(limits) == 0 {
		w.write(level0, "No LimitRange resource.\n")
		return
	}
	w.write(level0, "Resource Limits\n Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n")
	w.write(level0, " ----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n")
	for _, l := range limits {
		describeLimitRangeItems(w, l, " ")
	}
}

// describeLimitRange follows kubectl describe limits: a row per type and
// resource, "-" where the item sets nothing.
func describeLimitRange(w *describeWriter, obj api.Object, _ *describeContext) {
	l := obj.(*api.LimitRange)
	w.write(level0, "Name:\t%s\n", l.Name)
	w.write(level0, "Namespace:\t%s\n", l.Namespace)
	w.write(level0, "Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n")
	w.write(level0, "----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n")
	describeLimitRangeItems(w, l, "")
}

func describeLimitRangeItems(w *describeWriter, l *api.LimitRange, prefix string) {
	for _, it := range l.Spec.Limits {
		names := api.ResourceList{}
		for _, rl := range []api.ResourceList{it.Max, it.Min, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio} {
			api.AddResources(names, rl)
		}
		cell := func(rl api.ResourceList, name api.ResourceName) string {
			if q, ok := rl[name]; ok {
				return q.String()
			}
			return "-"
		}
		for _, name := range sortedResourceNames(names) {
			w.write(level0, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", prefix, it.Type, name,
				cell(it.Min, name), cell(it.Max, name), cell(it.DefaultRequest, name), cell(it.Default, name), cell(it.MaxLimitRequestRatio, name))
		}
	}
}

// describeServiceAccount follows kubectl: the secrets the account names.
// berth's tokens are signed per pod, never stored, so Tokens is empty.
func describeServiceAccount(w *describeWriter, obj api.Object, _ *describeContext) {
	sa := obj.(*api.ServiceAccount)
	describeHeader(w, sa, true)
	var pull, mountable []string
	for _, s := range sa.ImagePullSecrets {
		pull = append(pull, s.Name)
	}
	for _, s := range sa.Secrets {
		mountable = append(mountable, s.Name)
	}
	describeLines(w, "Image pull secrets", pull)
	describeLines(w, "Mountable secrets", mountable)
	describeLines(w, "Tokens", nil)
}
