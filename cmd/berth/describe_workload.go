package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeDeployment follows kubectl: replica counts, the strategy, the
// pod template, the conditions, and which ReplicaSets are old and new.
func describeDeployment(w *describeWriter, obj api.Object, dc *describeContext) {
	d := obj.(*api.Deployment)
	w.write(level0, "Name:\t%s\n", d.Name)
	w.write(level0, "Namespace:\t%s\n", d.Namespace)
	w.write(level0, "CreationTimestamp:\t%s\n", formatTime(d.CreationTimestamp))
	describeLabels(w, level0, "Labels", d.Labels)
	describeAnnotations(w, d.Annotations)
	w.write(level0, "Selector:\t%s\n", orNone(table.FormatSelector(d.Spec.Selector)))
	w.write(level0, "Replicas:\t%d desired | %d updated | %d total | %d available | %d unavailable\n",
		desiredReplicas(d.Spec.Replicas), d.Status.UpdatedReplicas, d.Status.Replicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas)
	w.write(level0, "StrategyType:\t%s\n", d.Spec.Strategy.Type)
	w.write(level0, "MinReadySeconds:\t%d\n", d.Spec.MinReadySeconds)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		w.write(level0, "RollingUpdateStrategy:\t%s max unavailable, %s max surge\n", intOrStringText(ru.MaxUnavailable), intOrStringText(ru.MaxSurge))
	}
	describePodTemplate(w, &d.Spec.Template)
	describeWorkloadConditions(w, d.Status.Conditions)
	oldRSs, newRS := deploymentReplicaSets(d, dc.replicaSets)
	if oldRSs != nil || newRS != nil {
		w.write(level0, "OldReplicaSets:\t%s\n", replicaSetList(oldRSs))
		var news []*api.ReplicaSet
		if newRS != nil {
			news = append(news, newRS)
		}
		w.write(level0, "NewReplicaSet:\t%s\n", replicaSetList(news))
	}
}

// describeReplicaSet follows kubectl: selector, owner, replica counts,
// the phases of its pods and the pod template.
func describeReplicaSet(w *describeWriter, obj api.Object, dc *describeContext) {
	rs := obj.(*api.ReplicaSet)
	describeReplicated(w, rs, table.FormatSelector(rs.Spec.Selector), rs.Status.Replicas, rs.Spec.Replicas, &rs.Spec.Template, dc)
	describeWorkloadConditions(w, rs.Status.Conditions)
}

// describeReplicationController is describeReplicaSet for the older kind.
func describeReplicationController(w *describeWriter, obj api.Object, dc *describeContext) {
	rc := obj.(*api.ReplicationController)
	describeReplicated(w, rc, labels.FormatLabels(rc.Spec.Selector), rc.Status.Replicas, rc.Spec.Replicas, rc.Spec.Template, dc)
	describeWorkloadConditions(w, rc.Status.Conditions)
}

func describeReplicated(w *describeWriter, obj api.Object, selector string, current int32, desired *int32, t *api.PodTemplateSpec, dc *describeContext) {
	w.write(level0, "Name:\t%s\n", obj.GetName())
	w.write(level0, "Namespace:\t%s\n", obj.GetNamespace())
	w.write(level0, "Selector:\t%s\n", orNone(selector))
	describeLabels(w, level0, "Labels", obj.GetLabels())
	describeAnnotations(w, obj.GetAnnotations())
	describeControlledBy(w, obj)
	w.write(level0, "Replicas:\t%d current / %d desired\n", current, desiredReplicas(desired))
	describePodsStatus(w, obj, dc)
	describePodTemplate(w, t)
}

func describeWorkloadConditions(w *describeWriter, conds []api.WorkloadCondition) {
	if len(conds) == 0 {
		return
	}
	w.write(level0, "Conditions:\n")
	w.write(level1, "Type\tStatus\tReason\n")
	w.write(level1, "----\t------\t------\n")
	for _, c := range conds {
		w.write(level1, "%s \t%s\t%s\n", c.Type, c.Status, c.Reason)
	}
}

func desiredReplicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func intOrStringText(v *intstr.IntOrString) string {
	if v == nil {
		return table.None
	}
	return v.String()
}

// deploymentReplicaSets splits the ReplicaSets a Deployment controls into
// the new one (its pod template is the Deployment's, apart from the
// pod-template-hash label) and the old ones that still have replicas, as
// kubectl shows them.
func deploymentReplicaSets(d *api.Deployment, all []*api.ReplicaSet) (old []*api.ReplicaSet, newRS *api.ReplicaSet) {
	want := templateKey(&d.Spec.Template)
	for _, rs := range all {
		if ref := api.ControllerOf(rs); ref == nil || ref.UID != d.UID {
			continue
		}
		if newRS == nil && templateKey(&rs.Spec.Template) == want {
			newRS = rs
			continue
		}
		if desiredReplicas(rs.Spec.Replicas) > 0 {
			old = append(old, rs)
		}
	}
	return old, newRS
}

// podTemplateHashLabel is the label the Deployment controller adds to the
// template of each ReplicaSet it creates.
const podTemplateHashLabel = "pod-template-hash"

func templateKey(t *api.PodTemplateSpec) string {
	c := t.DeepCopy()
	delete(c.Labels, podTemplateHashLabel)
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	data, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	return string(data)
}

func replicaSetList(rss []*api.ReplicaSet) string {
	if len(rss) == 0 {
		return table.None
	}
	parts := make([]string, len(rss))
	for i, rs := range rss {
		parts[i] = fmt.Sprintf("%s (%d/%d replicas created)", rs.Name, rs.Status.Replicas, desiredReplicas(rs.Spec.Replicas))
	}
	return strings.Join(parts, ", ")
}
