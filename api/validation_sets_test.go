package api

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func setTemplate() PodTemplateSpec {
	return PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: PodSpec{Containers: []Container{{Name: "a", Image: "x", VolumeMounts: []VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
}

func TestValidateStatefulSet(t *testing.T) {
	runValidation(t, func() *StatefulSet {
		return &StatefulSet{ObjectMeta: meta("db"), Spec: StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, ServiceName: "db", Template: setTemplate(),
			VolumeClaimTemplates: []PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: PersistentVolumeClaimSpec{
				AccessModes: []PersistentVolumeAccessMode{ReadWriteOnce},
				Resources:   VolumeResourceRequirements{Requests: ResourceList{ResourceStorage: resource.MustParse("1Gi")}},
			}}},
		}}
	}, []validationCase[*StatefulSet]{
		{"no selector", func(o *StatefulSet) { o.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"empty selector", func(o *StatefulSet) { o.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for statefulset"}},
		{"mismatch", func(o *StatefulSet) { o.Spec.Template.Labels = map[string]string{"app": "x"} },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"}},
		{"mount of no volume", func(o *StatefulSet) { o.Spec.VolumeClaimTemplates = nil }, []string{"spec.template.spec.containers[0].volumeMounts[0].name: Not found"}},
		{"restart policy", func(o *StatefulSet) { o.Spec.Template.Spec.RestartPolicy = RestartPolicyOnFailure },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure"`}},
		{"pod management", func(o *StatefulSet) { o.Spec.PodManagementPolicy = "Random" },
			[]string{`spec.podManagementPolicy: Unsupported value: "Random": supported values: "OrderedReady", "Parallel"`}},
		{"strategy", func(o *StatefulSet) { o.Spec.UpdateStrategy.Type = "Recreate" },
			[]string{`spec.updateStrategy: Unsupported value: "Recreate"`}},
		{"on delete with rolling update", func(o *StatefulSet) { o.Spec.UpdateStrategy.Type = OnDeleteStatefulSetStrategyType },
			[]string{"spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":0,\"maxUnavailable\":1}: only allowed for updateStrategy 'RollingUpdate'"}},
		{"partition", func(o *StatefulSet) { o.Spec.UpdateStrategy.RollingUpdate.Partition = ptr(int32(-1)) },
			[]string{"spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"}},
		{"max unavailable 0", func(o *StatefulSet) { o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromInt32(0)) },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"0\": must be greater than 0"}},
		{"max unavailable 150%", func(o *StatefulSet) {
			o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("150%"))
		},
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"}},
		{"retention", func(o *StatefulSet) { o.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" },
			[]string{`spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep": supported values: "Retain", "Delete"`}},
		{"ordinals", func(o *StatefulSet) { o.Spec.Ordinals = &StatefulSetOrdinals{Start: -2} }, []string{"spec.ordinals.start: Invalid value: -2"}},
		{"service name", func(o *StatefulSet) { o.Spec.ServiceName = "Not_A_Label" }, []string{`spec.serviceName: Invalid value: "Not_A_Label"`}},
		{"claim without storage", func(o *StatefulSet) { o.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil },
			[]string{"spec.volumeClaimTemplates[0].spec.resources.requests[storage]: Required value"}},
		{"claim without a name", func(o *StatefulSet) { o.Spec.VolumeClaimTemplates[0].Name = "" },
			[]string{"spec.volumeClaimTemplates[0].metadata.name: Required value", "spec.template.spec.containers[0].volumeMounts[0].name: Not found"}},
		{"negative replicas", func(o *StatefulSet) { o.Spec.Replicas = ptr(int32(-1)) }, []string{"spec.replicas: Invalid value"}},
	})
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	old := &StatefulSet{ObjectMeta: meta("db"), Spec: StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: setTemplate()}}
	Default(old)
	n := old.DeepCopy()
	n.Spec.Replicas = ptr(int32(5))
	n.Spec.Template.Spec.Containers[0].Image = "y"
	n.Spec.UpdateStrategy.RollingUpdate.Partition = ptr(int32(2))
	if errs := ValidateUpdate(old, n); len(errs) > 0 {
		t.Errorf("allowed update refused: %v", errs)
	}
	n.Spec.ServiceName = "other"
	checkErrors(t, ValidateUpdate(old, n), []string{"spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template'"})
}

func TestValidateDaemonSet(t *testing.T) {
	runValidation(t, func() *DaemonSet {
		tpl := setTemplate()
		tpl.Spec.Containers[0].VolumeMounts = nil
		return &DaemonSet{ObjectMeta: meta("logs"), Spec: DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: tpl}}
	}, []validationCase[*DaemonSet]{
		{"no selector", func(o *DaemonSet) { o.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"empty selector", func(o *DaemonSet) { o.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for daemonset"}},
		{"restart policy", func(o *DaemonSet) { o.Spec.Template.Spec.RestartPolicy = RestartPolicyNever },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never"`}},
		{"both 0", func(o *DaemonSet) { o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("0%")) },
			[]string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "0%": cannot be 0 when maxSurge is 0`}},
		{"surge instead", func(o *DaemonSet) {
			o.Spec.UpdateStrategy.RollingUpdate = &RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromString("10%"))}
		}, nil},
		{"too much", func(o *DaemonSet) { o.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr(intstr.FromString("101%")) },
			[]string{`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "101%": must not be greater than 100%`}},
		{"strategy", func(o *DaemonSet) { o.Spec.UpdateStrategy.Type = "Sometimes" },
			[]string{`spec.updateStrategy.type: Unsupported value: "Sometimes": supported values: "RollingUpdate", "OnDelete"`}},
		{"min ready", func(o *DaemonSet) { o.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
	})
}

func TestValidateControllerRevision(t *testing.T) {
	runValidation(t, func() *ControllerRevision {
		return &ControllerRevision{ObjectMeta: meta("db-1"), Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: 1}
	}, []validationCase[*ControllerRevision]{
		{"no data", func(o *ControllerRevision) { o.Data.Raw = nil }, []string{"data: Required value: data is mandatory"}},
		{"negative", func(o *ControllerRevision) { o.Revision = -1 }, []string{"revision: Invalid value"}},
	})
	old := &ControllerRevision{ObjectMeta: meta("db-1"), Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: 1}
	n := old.DeepCopy()
	n.Data.Raw = []byte(`{"spec":{"x":1}}`)
	checkErrors(t, ValidateUpdate(old, n), []string{"data: Invalid value"})
}
