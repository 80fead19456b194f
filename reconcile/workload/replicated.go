package workload

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// replicaStatus is the status ReplicaSets and ReplicationControllers share.
type replicaStatus struct {
	Replicas             int32
	FullyLabeledReplicas int32
	ReadyReplicas        int32
	AvailableReplicas    int32
	// TerminatingReplicas is kept for ReplicaSets only: Kubernetes'
	// ReplicationController has no such field.
	TerminatingReplicas int32
	ObservedGeneration  int64
}

// replicated is the view of a ReplicaSet or a ReplicationController that
// the replica controller works on, so that one loop serves both kinds.
type replicated struct {
	obj             api.Object
	selector        labels.Selector
	template        *api.PodTemplateSpec
	replicas        int32
	minReadySeconds int32
	status          replicaStatus
	conditions      []api.WorkloadCondition
}

// replicatedKind adapts one of the two kinds to the view.
type replicatedKind struct {
	kind *api.Kind
	// view reads an object of the kind; an error means its spec cannot be
	// served (retrying will not help).
	view func(api.Object) (*replicated, error)
	// countsTerminating says whether the status counts the pods being
	// deleted.
	countsTerminating bool
	// withStatus returns a copy of obj carrying st and conditions. The
	// copy is shallow: it shares the stored object's metadata and spec,
	// template included, which nothing changes in place (stored objects
	// are never changed; every writer copies what it changes), so that a
	// status write costs a struct, not a copy of the template.
	withStatus func(obj api.Object, st replicaStatus, conditions []api.WorkloadCondition) api.Object
}

var (
	podKind        = api.MustLookupResource("pods")
	replicaSetKind = api.MustLookupResource("replicasets")
	rcKind         = api.MustLookupResource("replicationcontrollers")
	deploymentKind = api.MustLookupResource("deployments")
	namespaceKind  = api.MustLookupResource("namespaces")
)

func replicasOf(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

var replicaSets = &replicatedKind{
	kind:              replicaSetKind,
	countsTerminating: true,
	view: func(obj api.Object) (*replicated, error) {
		rs := obj.(*api.ReplicaSet)
		if rs.Spec.Selector == nil {
			return nil, fmt.Errorf("replicaset %s/%s: spec.selector is required", rs.Namespace, rs.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("replicaset %s/%s: spec.selector: %w", rs.Namespace, rs.Name, err)
		}
		if sel.Empty() {
			return nil, fmt.Errorf("replicaset %s/%s: spec.selector is empty and would select every pod", rs.Namespace, rs.Name)
		}
		s := rs.Status
		return &replicated{
			obj: rs, selector: sel, template: &rs.Spec.Template,
			replicas: replicasOf(rs.Spec.Replicas), minReadySeconds: rs.Spec.MinReadySeconds,
			status:     replicaStatus{s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.TerminatingReplicas, s.ObservedGeneration},
			conditions: s.Conditions,
		}, nil
	},
	withStatus: func(obj api.Object, st replicaStatus, conditions []api.WorkloadCondition) api.Object {
		rs := new(api.ReplicaSet)
		*rs = *obj.(*api.ReplicaSet)
		rs.Status.TerminatingReplicas = st.TerminatingReplicas
		rs.Status.Conditions = conditions
		rs.Status.Replicas, rs.Status.FullyLabeledReplicas = st.Replicas, st.FullyLabeledReplicas
		rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = st.ReadyReplicas, st.AvailableReplicas
		rs.Status.ObservedGeneration = st.ObservedGeneration
		return rs
	},
}

var replicationControllers = &replicatedKind{
	kind: rcKind,
	view: func(obj api.Object) (*replicated, error) {
		rc := obj.(*api.ReplicationController)
		if rc.Spec.Template == nil {
			return nil, fmt.Errorf("replicationcontroller %s/%s: spec.template is required", rc.Namespace, rc.Name)
		}
		selector := rc.Spec.Selector
		if len(selector) == 0 {
			selector = rc.Spec.Template.Labels
		}
		if len(selector) == 0 {
			return nil, fmt.Errorf("replicationcontroller %s/%s: spec.selector is empty and would select every pod", rc.Namespace, rc.Name)
		}
		s := rc.Status
		return &replicated{
			obj: rc, selector: labels.SelectorFromSet(selector), template: rc.Spec.Template,
			replicas: replicasOf(rc.Spec.Replicas), minReadySeconds: rc.Spec.MinReadySeconds,
			status:     replicaStatus{s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, 0, s.ObservedGeneration},
			conditions: s.Conditions,
		}, nil
	},
	withStatus: func(obj api.Object, st replicaStatus, conditions []api.WorkloadCondition) api.Object {
		rc := new(api.ReplicationController)
		*rc = *obj.(*api.ReplicationController)
		rc.Status.Conditions = conditions
		rc.Status.Replicas, rc.Status.FullyLabeledReplicas = st.Replicas, st.FullyLabeledReplicas
		rc.Status.ReadyReplicas, rc.Status.AvailableReplicas = st.ReadyReplicas, st.AvailableReplicas
		rc.Status.ObservedGeneration = st.ObservedGeneration
		return rc
	},
}
