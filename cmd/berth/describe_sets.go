package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describeStatefulSet follows kubectl: replicas, the update strategy, the
// phases of its pods, the pod template and the volume claim templates.
func describeStatefulSet(w *describeWriter, obj api.Object, dc *describeContext) {
	s := obj.(*api.StatefulSet)
	w.write(level0, "Name:\t%s\n", s.Name)
	w.write(level0, "Namespace:\t%s\n", s.Namespace)
	w.write(level0, "CreationTimestamp:\t%s\n", formatTime(s.CreationTimestamp))
	w.write(level0, "Selector:\t%s\n", orNone(table.FormatSelector(s.Spec.Selector)))
	describeLabels(w, level0, "Labels", s.Labels)
	describeAnnotations(w, s.Annotations)
	w.write(level0, "Replicas:\t%d desired | %d total\n", desiredReplicas(s.Spec.Replicas), s.Status.Replicas)
	w.write(level0, "Update Strategy:\t%s\n", s.Spec.UpdateStrategy.Type)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			w.write(level1, "Partition:\t%d\n", *ru.Partition)
		}
		if ru.MaxUnavailable != nil {
			w.write(level1, "MaxUnavailable:\t%s\n", ru.MaxUnavailable.String())
		}
	}
	describePodsStatus(w, obj, dc)
	describePodTemplate(w, &s.Spec.Template)
	w.write(level0, "Volume Claims:")
	if len(s.Spec.VolumeClaimTemplates) == 0 {
		w.write(level0, "\t<none>\n")
	} else {
		w.write(level0, "\n")
	}
	for _, c := range s.Spec.VolumeClaimTemplates {
		w.write(level1, "Name:\t%s\n", c.Name)
		class := ""
		if c.Spec.StorageClassName != nil {
			class = *c.Spec.StorageClassName
		}
		w.write(level1, "StorageClass:\t%s\n", class)
		describeLabels(w, level1, "Labels", c.Labels)
		w.write(level1, "Annotations:\t%s\n", orNone(labels.FormatLabels(c.Annotations)))
		q := c.Spec.Resources.Requests[api.ResourceStorage]
		w.write(level1, "Capacity:\t%s\n", q.String())
		w.write(level1, "Access Modes:\t%v\n", c.Spec.AccessModes)
	}
}

// describeDaemonSet follows kubectl: the node selector, the counts of
// nodes, the phases of its pods and the pod template.
func describeDaemonSet(w *describeWriter, obj api.Object, dc *describeContext) {
	d := obj.(*api.DaemonSet)
	w.write(level0, "Name:\t%s\n", d.Name)
	w.write(level0, "Namespace:\t%s\n", d.Namespace)
	w.write(level0, "Selector:\t%s\n", orNone(table.FormatSelector(d.Spec.Selector)))
	w.write(level0, "Node-Selector:\t%s\n", orNone(labels.FormatLabels(d.Spec.Template.Spec.NodeSelector)))
	describeLabels(w, level0, "Labels", d.Labels)
	describeAnnotations(w, d.Annotations)
	st := d.Status
	w.write(level0, "Desired Number of Nodes Scheduled: %d\n", st.DesiredNumberScheduled)
	w.write(level0, "Current Number of Nodes Scheduled: %d\n", st.CurrentNumberScheduled)
	w.write(level0, "Number of Nodes Scheduled with Up-to-date Pods: %d\n", st.UpdatedNumberScheduled)
	w.write(level0, "Number of Nodes Scheduled with Available Pods: %d\n", st.NumberAvailable)
	w.write(level0, "Number of Nodes Misscheduled: %d\n", st.NumberMisscheduled)
	describePodsStatus(w, obj, dc)
	describePodTemplate(w, &d.Spec.Template)
}

// describePodsStatus counts the phases of the pods obj controls.
func describePodsStatus(w *describeWriter, obj api.Object, dc *describeContext) {
	var running, waiting, succeeded, failed int
	for _, p := range dc.pods {
		if ref := api.ControllerOf(p); ref == nil || ref.UID != obj.GetUID() {
			continue
		}
		switch p.Status.Phase {
		case api.PodRunning:
			running++
		case api.PodPending:
			waiting++
		case api.PodSucceeded:
			succeeded++
		case api.PodFailed:
			failed++
		}
	}
	w.write(level0, "Pods Status:\t%s\n", fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed", running, waiting, succeeded, failed))
}
