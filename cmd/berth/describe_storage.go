package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describePVC follows kubectl: class, phase, the volume it is bound to,
// its capacity and access modes, and the pods that use it.
func describePVC(w *describeWriter, obj api.Object, dc *describeContext) {
	c := obj.(*api.PersistentVolumeClaim)
	w.write(level0, "Name:\t%s\n", c.Name)
	w.write(level0, "Namespace:\t%s\n", c.Namespace)
	w.write(level0, "StorageClass:\t%s\n", table.ClaimClass(c))
	if c.DeletionTimestamp != nil {
		w.write(level0, "Status:\tTerminating (lasts %s)\n", table.Age(*c.DeletionTimestamp, dc.now))
	} else {
		w.write(level0, "Status:\t%s\n", c.Status.Phase)
	}
	w.write(level0, "Volume:\t%s\n", c.Spec.VolumeName)
	describeLabels(w, level0, "Labels", c.Labels)
	describeAnnotations(w, c.Annotations)
	w.write(level0, "Finalizers:\t%v\n", finalizers(c.Finalizers))
	capacity, modes := "", ""
	if c.Spec.VolumeName != "" {
		q := c.Status.Capacity[api.ResourceStorage]
		capacity, modes = q.String(), table.AccessModes(c.Status.AccessModes)
	}
	w.write(level0, "Capacity:\t%s\n", capacity)
	w.write(level0, "Access Modes:\t%s\n", modes)
	if c.Spec.VolumeMode != nil {
		w.write(level0, "VolumeMode:\t%s\n", *c.Spec.VolumeMode)
	}
	var users []string
	for _, p := range dc.pods {
		if p.Namespace != c.Namespace {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == c.Name {
				users = append(users, p.Name)
				break
			}
		}
	}
	describeLines(w, "Used By", users)
}

// describePV follows kubectl: class, phase, claim, reclaim policy, access
// modes, capacity, node affinity and where the data lives.
func describePV(w *describeWriter, obj api.Object, dc *describeContext) {
	v := obj.(*api.PersistentVolume)
	describeHeader(w, v, false)
	w.write(level0, "Finalizers:\t%v\n", finalizers(v.Finalizers))
	w.write(level0, "StorageClass:\t%s\n", table.VolumeClass(v))
	if v.DeletionTimestamp != nil {
		w.write(level0, "Status:\tTerminating (lasts %s)\n", table.Age(*v.DeletionTimestamp, dc.now))
	} else {
		w.write(level0, "Status:\t%s\n", v.Status.Phase)
	}
	claim := ""
	if v.Spec.ClaimRef != nil {
		claim = v.Spec.ClaimRef.Namespace + "/" + v.Spec.ClaimRef.Name
	}
	w.write(level0, "Claim:\t%s\n", claim)
	w.write(level0, "Reclaim Policy:\t%s\n", v.Spec.PersistentVolumeReclaimPolicy)
	w.write(level0, "Access Modes:\t%s\n", table.AccessModes(v.Spec.AccessModes))
	if v.Spec.VolumeMode != nil {
		w.write(level0, "VolumeMode:\t%s\n", *v.Spec.VolumeMode)
	}
	q := v.Spec.Capacity[api.ResourceStorage]
	w.write(level0, "Capacity:\t%s\n", q.String())
	describeVolumeNodeAffinity(w, v.Spec.NodeAffinity)
	w.write(level0, "Message:\t%s\n", v.Status.Message)
	w.write(level0, "Source:\n")
	switch {
	case v.Spec.HostPath != nil:
		hostPathType := table.None
		if v.Spec.HostPath.Type != nil {
			hostPathType = string(*v.Spec.HostPath.Type)
		}
		w.write(level2, "Type:\tHostPath (bare host directory volume)\n")
		w.write(level2, "Path:\t%s\n", v.Spec.HostPath.Path)
		w.write(level2, "HostPathType:\t%s\n", hostPathType)
	case v.Spec.Local != nil:
		w.write(level2, "Type:\tLocalVolume (a persistent volume backed by local storage on a node)\n")
		w.write(level2, "Path:\t%s\n", v.Spec.Local.Path)
	default:
		w.write(level2, "Type:\t%s\n", table.None)
	}
}

// finalizers prints a finalizer list as kubectl's %v of a slice does.
func finalizers(f []string) string {
	return "[" + strings.Join(f, " ") + "]"
}

func describeVolumeNodeAffinity(w *describeWriter, a *api.VolumeNodeAffinity) {
	w.write(level0, "Node Affinity:\t")
	if a == nil || a.Required == nil {
		w.write(level0, "%s\n", table.None)
		return
	}
	w.write(level0, "\n")
	w.write(level1, "Required Terms:\t")
	if len(a.Required.NodeSelectorTerms) == 0 {
		w.write(level0, "%s\n", table.None)
		return
	}
	w.write(level0, "\n")
	for i, term := range a.Required.NodeSelectorTerms {
		w.write(level2, "Term %d:\t", i)
		if len(term.MatchExpressions) == 0 {
			w.write(level0, "%s\n", table.None)
			continue
		}
		for j, r := range term.MatchExpressions {
			if j > 0 {
				w.write(level2, "\t")
			}
			expr := fmt.Sprintf("%s %s", r.Key, strings.ToLower(string(r.Operator)))
			if len(r.Values) > 0 {
				expr += " [" + strings.Join(r.Values, ", ") + "]"
			}
			w.write(level0, "%s\n", expr)
		}
	}
}

// describeLines prints a list under a title, one item per line.
func describeLines(w *describeWriter, title string, items []string) {
	w.write(level0, "%s:\t", title)
	if len(items) == 0 {
		w.write(level0, "%s\n", table.None)
		return
	}
	for i, it := range items {
		if i > 0 {
			w.write(level0, "\t")
		}
		w.write(level0, "%s\n", it)
	}
}

// describeStorageClass follows kubectl: whether it is the default, who
// provisions its volumes and how they are bound and reclaimed.
func describeStorageClass(w *describeWriter, obj api.Object, _ *describeContext) {
	sc := obj.(*api.StorageClass)
	w.write(level0, "Name:\t%s\n", sc.Name)
	isDefault := "No"
	if table.IsDefaultClass(sc) {
		isDefault = "Yes"
	}
	w.write(level0, "IsDefaultClass:\t%s\n", isDefault)
	ann := map[string]string{}
	for k, v := range sc.Annotations {
		if !skippedAnnotations[k] {
			ann[k] = v
		}
	}
	w.write(level0, "Annotations:\t%s\n", labels.FormatLabels(ann))
	w.write(level0, "Provisioner:\t%s\n", sc.Provisioner)
	w.write(level0, "Parameters:\t%s\n", labels.FormatLabels(sc.Parameters))
	expansion := "<unset>"
	if sc.AllowVolumeExpansion != nil {
		expansion = boolWord(*sc.AllowVolumeExpansion)
	}
	w.write(level0, "AllowVolumeExpansion:\t%s\n", expansion)
	if len(sc.MountOptions) == 0 {
		w.write(level0, "MountOptions:\t%s\n", table.None)
	} else {
		w.write(level0, "MountOptions:\n")
		for _, o := range sc.MountOptions {
			w.write(level1, "%s\n", o)
		}
	}
	if sc.ReclaimPolicy != nil {
		w.write(level0, "ReclaimPolicy:\t%s\n", *sc.ReclaimPolicy)
	}
	if sc.VolumeBindingMode != nil {
		w.write(level0, "VolumeBindingMode:\t%s\n", *sc.VolumeBindingMode)
	}
}
