package main

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// describePriorityClass writes a PriorityClass as kubectl describe
// priorityclass does.
func describePriorityClass(w *describeWriter, obj api.Object, _ *describeContext) {
	pc := obj.(*api.PriorityClass)
	w.write(level0, "Name:\t%s\n", pc.Name)
	w.write(level0, "Value:\t%d\n", pc.Value)
	w.write(level0, "GlobalDefault:\t%t\n", pc.GlobalDefault)
	policy := api.PreemptLowerPriority
	if pc.PreemptionPolicy != nil {
		policy = *pc.PreemptionPolicy
	}
	w.write(level0, "PreemptionPolicy:\t%s\n", policy)
	w.write(level0, "Description:\t%s\n", pc.Description)
	w.write(level0, "Annotations:\t%s\n", labels.FormatLabels(pc.Annotations))
}
