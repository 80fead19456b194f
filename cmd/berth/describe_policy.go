package main

import (
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describePodDisruptionBudget prints a budget as kubectl does: its count,
// its selector, and what the disruption controller counted.
func describePodDisruptionBudget(w *describeWriter, obj api.Object, _ *describeContext) {
	b := obj.(*api.PodDisruptionBudget)
	w.write(level0, "Name:\t%s\n", b.Name)
	w.write(level0, "Namespace:\t%s\n", b.Namespace)
	switch {
	case b.Spec.MinAvailable != nil:
		w.write(level0, "Min available:\t%s\n", b.Spec.MinAvailable.String())
	case b.Spec.MaxUnavailable != nil:
		w.write(level0, "Max unavailable:\t%s\n", b.Spec.MaxUnavailable.String())
	}
	if b.Spec.Selector != nil {
		w.write(level0, "Selector:\t%s\n", table.FormatSelector(b.Spec.Selector))
	} else {
		w.write(level0, "Selector:\t<unset>\n")
	}
	w.write(level0, "Status:\n")
	w.write(level2, "Allowed disruptions:\t%d\n", b.Status.DisruptionsAllowed)
	w.write(level2, "Current:\t%d\n", b.Status.CurrentHealthy)
	w.write(level2, "Desired:\t%d\n", b.Status.DesiredHealthy)
	w.write(level2, "Total:\t%d\n", b.Status.ExpectedPods)
}
