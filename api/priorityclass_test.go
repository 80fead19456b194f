package api

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidatePriorityClass: Kubernetes' rules and messages for a class.
func TestValidatePriorityClass(t *testing.T) {
	never, maybe := PreemptNever, PreemptionPolicy("Maybe")
	tests := []struct {
		name string
		pc   PriorityClass
		want []string
	}{
		{"user class", PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, nil},
		{"negative value", PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: -5, PreemptionPolicy: &never}, nil},
		{"above the user maximum", PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Value: HighestUserDefinablePriority + 1},
			[]string{"value: Forbidden: maximum allowed value of a user defined priority is 1000000000"}},
		{"system class as made", *SystemPriorityClasses()[0], nil},
		{"system class with another value", PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: SystemClusterCritical}, Value: 5},
			[]string{"metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-cluster-critical PriorityClass must be 2000000000"}},
		{"unknown system name", PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 5},
			[]string{"metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"}},
		{"bad policy", PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, PreemptionPolicy: &maybe},
			[]string{`preemptionPolicy: Unsupported value: "Maybe"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := tt.pc
			Default(&pc)
			checkErrors(t, Validate(&pc), tt.want)
		})
	}
	old := &PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	Default(old)
	changed := old.DeepCopy()
	changed.Value, changed.PreemptionPolicy, changed.Description = 2000, &never, "fine to change"
	checkErrors(t, ValidateUpdate(old, changed), []string{
		"value: Forbidden: may not be changed in an update.",
		`preemptionPolicy: Invalid value: "Never": field is immutable`,
	})
	if pc := (&PriorityClass{}); func() bool { Default(pc); return *pc.PreemptionPolicy != PreemptLowerPriority }() {
		t.Error("preemptionPolicy not defaulted to PreemptLowerPriority")
	}
}
