package api

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefault(t *testing.T) {
	tests := []struct {
		name  string
		obj   Object
		check func(t *testing.T, obj Object)
	}{
		{
			name: "namespaced kinds get the default namespace",
			obj:  &ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
			check: func(t *testing.T, obj Object) {
				if obj.GetNamespace() != "default" {
					t.Errorf("namespace = %q", obj.GetNamespace())
				}
			},
		},
		{
			name: "a namespace given is kept",
			obj:  &ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "shop"}},
			check: func(t *testing.T, obj Object) {
				if obj.GetNamespace() != "shop" {
					t.Errorf("namespace = %q", obj.GetNamespace())
				}
			},
		},
		{
			name: "cluster-scoped kinds get no namespace",
			obj:  &PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
			check: func(t *testing.T, obj Object) {
				pv := obj.(*PersistentVolume)
				if pv.Namespace != "" {
					t.Errorf("namespace = %q", pv.Namespace)
				}
				if pv.Spec.PersistentVolumeReclaimPolicy != PersistentVolumeReclaimRetain {
					t.Errorf("reclaim policy = %q", pv.Spec.PersistentVolumeReclaimPolicy)
				}
				if pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != PersistentVolumeFilesystem {
					t.Errorf("volume mode = %v", pv.Spec.VolumeMode)
				}
				if pv.Status.Phase != VolumePending {
					t.Errorf("phase = %q", pv.Status.Phase)
				}
			},
		},
		{
			name: "pod",
			obj: &Pod{Spec: PodSpec{
				InitContainers: []Container{{Name: "init", Ports: []ContainerPort{{ContainerPort: 1}}}},
				Containers: []Container{{
					Name:  "a",
					Ports: []ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: ProtocolUDP}},
					Env:   []EnvVar{{Name: "IP", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{FieldPath: "status.podIP"}}}},
					Resources: ResourceRequirements{
						Limits:   ResourceList{ResourceCPU: resource.MustParse("1"), ResourceMemory: resource.MustParse("1Gi")},
						Requests: ResourceList{ResourceCPU: resource.MustParse("100m")},
					},
					LivenessProbe:  &Probe{ProbeHandler: ProbeHandler{HTTPGet: &HTTPGetAction{Port: intstr.FromInt32(80)}}},
					ReadinessProbe: &Probe{ProbeHandler: ProbeHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 2},
				}},
				Volumes: []Volume{{Name: "c", VolumeSource: VolumeSource{ConfigMap: &ConfigMapVolumeSource{}}}, {Name: "s", VolumeSource: VolumeSource{Secret: &SecretVolumeSource{}}}},
			}},
			check: func(t *testing.T, obj Object) {
				s := obj.(*Pod).Spec
				if s.RestartPolicy != RestartPolicyAlways || *s.TerminationGracePeriodSeconds != 30 || s.SchedulerName != "default-scheduler" || s.ServiceAccountName != "default" {
					t.Errorf("spec = %+v", s)
				}
				c := s.Containers[0]
				if c.Ports[0].Protocol != ProtocolTCP || c.Ports[1].Protocol != ProtocolUDP || s.InitContainers[0].Ports[0].Protocol != ProtocolTCP {
					t.Errorf("ports = %+v", c.Ports)
				}
				if c.Env[0].ValueFrom.FieldRef.APIVersion != "v1" {
					t.Errorf("fieldRef = %+v", c.Env[0].ValueFrom.FieldRef)
				}
				lp := c.LivenessProbe
				if lp.TimeoutSeconds != 1 || lp.PeriodSeconds != 10 || lp.SuccessThreshold != 1 || lp.FailureThreshold != 3 || lp.HTTPGet.Path != "/" || lp.HTTPGet.Scheme != URISchemeHTTP {
					t.Errorf("liveness probe = %+v %+v", lp, lp.HTTPGet)
				}
				if c.ReadinessProbe.PeriodSeconds != 2 {
					t.Errorf("readiness period = %d", c.ReadinessProbe.PeriodSeconds)
				}
				if q := c.Resources.Requests[ResourceMemory]; q.String() != "1Gi" {
					t.Errorf("memory request = %s, want the limit", q.String())
				}
				if q := c.Resources.Requests[ResourceCPU]; q.String() != "100m" {
					t.Errorf("cpu request = %s, want kept", q.String())
				}
				if *s.Volumes[0].ConfigMap.DefaultMode != 0o644 || *s.Volumes[1].Secret.DefaultMode != 0o644 {
					t.Errorf("volume modes not defaulted")
				}
			},
		},
		{
			name: "service",
			obj: &Service{Spec: ServiceSpec{Ports: []ServicePort{
				{Port: 80},
				{Port: 443, TargetPort: intstr.FromString("https")},
				{Port: 53, Protocol: ProtocolUDP, TargetPort: intstr.FromInt32(5353)},
			}}},
			check: func(t *testing.T, obj Object) {
				s := obj.(*Service).Spec
				if s.Type != ServiceTypeClusterIP {
					t.Errorf("type = %q", s.Type)
				}
				want := []ServicePort{
					{Port: 80, Protocol: ProtocolTCP, TargetPort: intstr.FromInt32(80)},
					{Port: 443, Protocol: ProtocolTCP, TargetPort: intstr.FromString("https")},
					{Port: 53, Protocol: ProtocolUDP, TargetPort: intstr.FromInt32(5353)},
				}
				if !equality.Semantic.DeepEqual(s.Ports, want) {
					t.Errorf("ports = %+v", s.Ports)
				}
			},
		},
		{
			name: "deployment",
			obj:  &Deployment{Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{Containers: []Container{{Name: "a"}}}}}},
			check: func(t *testing.T, obj Object) {
				s := obj.(*Deployment).Spec
				if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
					t.Errorf("spec = %+v", s)
				}
				ru := s.Strategy.RollingUpdate
				if s.Strategy.Type != RollingUpdateDeploymentStrategyType || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" {
					t.Errorf("strategy = %+v", s.Strategy)
				}
				if s.Template.Spec.RestartPolicy != RestartPolicyAlways {
					t.Errorf("template not defaulted")
				}
			},
		},
		{
			name: "deployment with a partial rolling update and recreate",
			obj: &Deployment{Spec: DeploymentSpec{Strategy: DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{
				MaxSurge: ptr(intstr.FromInt32(0)),
			}}}},
			check: func(t *testing.T, obj Object) {
				ru := obj.(*Deployment).Spec.Strategy.RollingUpdate
				if ru.MaxSurge.String() != "0" || ru.MaxUnavailable.String() != "25%" {
					t.Errorf("rolling update = %v %v", ru.MaxSurge, ru.MaxUnavailable)
				}
			},
		},
		{
			name: "recreate gets no rolling update",
			obj:  &Deployment{Spec: DeploymentSpec{Strategy: DeploymentStrategy{Type: RecreateDeploymentStrategyType}}},
			check: func(t *testing.T, obj Object) {
				if ru := obj.(*Deployment).Spec.Strategy.RollingUpdate; ru != nil {
					t.Errorf("rolling update = %+v", ru)
				}
			},
		},
		{
			name: "replica set",
			obj:  &ReplicaSet{},
			check: func(t *testing.T, obj Object) {
				if r := obj.(*ReplicaSet).Spec.Replicas; r == nil || *r != 1 {
					t.Errorf("replicas = %v", r)
				}
			},
		},
		{
			name: "replication controller takes its selector and labels from the template",
			obj: &ReplicationController{Spec: ReplicationControllerSpec{Template: &PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
			}}},
			check: func(t *testing.T, obj Object) {
				rc := obj.(*ReplicationController)
				if *rc.Spec.Replicas != 1 || rc.Spec.Selector["app"] != "a" || rc.Labels["app"] != "a" {
					t.Errorf("rc = %+v", rc)
				}
				rc.Spec.Selector["x"] = "y"
				if rc.Spec.Template.Labels["x"] != "" {
					t.Errorf("selector shares the template's map")
				}
			},
		},
		{
			name: "replication controller keeps its selector",
			obj: &ReplicationController{Spec: ReplicationControllerSpec{Selector: map[string]string{"app": "b"}, Template: &PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
			}}},
			check: func(t *testing.T, obj Object) {
				if s := obj.(*ReplicationController).Spec.Selector; s["app"] != "b" {
					t.Errorf("selector = %v", s)
				}
			},
		},
		{
			name: "claim",
			obj:  &PersistentVolumeClaim{},
			check: func(t *testing.T, obj Object) {
				c := obj.(*PersistentVolumeClaim)
				if c.Spec.VolumeMode == nil || *c.Spec.VolumeMode != PersistentVolumeFilesystem || c.Status.Phase != ClaimPending {
					t.Errorf("claim = %+v", c)
				}
			},
		},
		{
			name: "storage class",
			obj:  &StorageClass{},
			check: func(t *testing.T, obj Object) {
				sc := obj.(*StorageClass)
				if *sc.ReclaimPolicy != PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != VolumeBindingImmediate {
					t.Errorf("class = %+v", sc)
				}
			},
		},
		{
			name: "secret",
			obj:  &Secret{},
			check: func(t *testing.T, obj Object) {
				if typ := obj.(*Secret).Type; typ != SecretTypeOpaque {
					t.Errorf("type = %q", typ)
				}
			},
		},
		{
			name: "namespace",
			obj:  &Namespace{},
			check: func(t *testing.T, obj Object) {
				ns := obj.(*Namespace)
				if len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != FinalizerKubernetes || ns.Status.Phase != NamespaceActive || ns.Namespace != "" {
					t.Errorf("namespace = %+v", ns)
				}
			},
		},
		{
			name: "endpoints",
			obj:  &Endpoints{Subsets: []EndpointSubset{{Ports: []EndpointPort{{Port: 80}}}}},
			check: func(t *testing.T, obj Object) {
				if p := obj.(*Endpoints).Subsets[0].Ports[0].Protocol; p != ProtocolTCP {
					t.Errorf("protocol = %q", p)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Default(tt.obj)
			tt.check(t, tt.obj)
			once := tt.obj.DeepCopyObject()
			Default(tt.obj)
			if !equality.Semantic.DeepEqual(once, tt.obj) {
				t.Errorf("Default is not idempotent:\nonce  %+v\ntwice %+v", once, tt.obj)
			}
		})
	}
}

// TestDefaultIdempotentOnManifests defaults every good manifest twice.
func TestDefaultIdempotentOnManifests(t *testing.T) {
	for _, f := range manifestFiles(t, "good") {
		objs, errs := DecodeStream(f.name, f.data, DecodeOptions{DropStatus: true})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f.name, errs)
		}
		for _, d := range objs {
			Default(d.Object)
			once := d.Object.DeepCopyObject()
			Default(d.Object)
			if !equality.Semantic.DeepEqual(once, d.Object) {
				t.Errorf("%s: Default is not idempotent", d.Location())
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestDefaultPodStatus(t *testing.T) {
	p := &Pod{}
	p.Spec.Containers = []Container{{Name: "c", Image: "x"}}
	Default(p)
	if p.Status.Phase != PodPending || p.Status.QOSClass != QOSBestEffort {
		t.Errorf("new pod status %+v, want Pending and BestEffort", p.Status)
	}
	p = &Pod{Status: PodStatus{Phase: PodRunning, QOSClass: QOSBurstable}}
	Default(p)
	if p.Status.Phase != PodRunning || p.Status.QOSClass != QOSBurstable {
		t.Errorf("defaulting changed a reported status: %+v", p.Status)
	}
}

func TestMergeStringData(t *testing.T) {
	s := &Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}, StringData: map[string]string{"b": "two", "c": "3"}}
	MergeStringData(s)
	if string(s.Data["a"]) != "1" || string(s.Data["b"]) != "two" || string(s.Data["c"]) != "3" || len(s.Data) != 3 || s.StringData != nil {
		t.Errorf("data %q, stringData %q", s.Data, s.StringData)
	}
	empty := &Secret{StringData: map[string]string{}}
	MergeStringData(empty)
	if empty.StringData != nil || empty.Data != nil {
		t.Errorf("empty: data %q, stringData %q", empty.Data, empty.StringData)
	}
	cm := &ConfigMap{Data: map[string]string{"a": "1"}}
	MergeStringData(cm)
	if cm.Data["a"] != "1" {
		t.Errorf("a ConfigMap changed: %v", cm.Data)
	}
}
