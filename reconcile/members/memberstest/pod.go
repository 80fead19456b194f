package memberstest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// PodOpt changes a Pod from the ready one Pod makes, so that a test case
// names only what sets its pod apart.
type PodOpt func(*api.Pod)

// Pod returns a running, ready pod name in namespace default with IP ip
// ("" for none yet), labelled app=web, on node-1, with one container that
// names port 8080 http; opts then change it in order.
func Pod(name, ip string, opts ...PodOpt) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{
			NodeName: "node-1",
			Containers: []api.Container{{
				Name:  "web",
				Ports: []api.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: api.ProtocolTCP}},
			}},
		},
		Status: api.PodStatus{
			Phase:      api.PodRunning,
			PodIP:      ip,
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// NotReady turns the pod's Ready condition false, so that it is listed
// among the not-ready addresses.
func NotReady(p *api.Pod) { p.Status.Conditions[0].Status = api.ConditionFalse }

// NoPorts drops the container's ports, so that a service port targeting
// the name http finds nothing on the pod.
func NoPorts(p *api.Pod) { p.Spec.Containers[0].Ports = nil }

// Labelled replaces the pod's labels with k=v, so that a selector other
// than app=web picks it, or app=web no longer does.
func Labelled(k, v string) PodOpt {
	return func(p *api.Pod) { p.Labels = map[string]string{k: v} }
}

// OnNode binds the pod to node n, for what an endpoint says of its node.
func OnNode(n string) PodOpt {
	return func(p *api.Pod) { p.Spec.NodeName = n }
}
