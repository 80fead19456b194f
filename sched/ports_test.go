package sched

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestNodePorts(t *testing.T) {
	http := api.ContainerPort{ContainerPort: 8080, Protocol: api.ProtocolTCP}
	node := placed(makeNode("n"), makePod("a", ports(http)))
	tests := []struct {
		name string
		pod  *api.Pod
		want string
	}{
		{"same containerPort", makePod("p", ports(api.ContainerPort{ContainerPort: 8080})), "[node(s) didn't have free ports for the requested pod ports]"},
		{"other protocol", makePod("p", ports(api.ContainerPort{ContainerPort: 8080, Protocol: api.ProtocolUDP})), ""},
		{"other port", makePod("p", ports(api.ContainerPort{ContainerPort: 8081})), ""},
		// the hostPort is what the node sees
		{"hostPort clashes", makePod("p", ports(api.ContainerPort{ContainerPort: 80, HostPort: 8080})), "[node(s) didn't have free ports for the requested pod ports]"},
		{"hostPort differs", makePod("p", ports(api.ContainerPort{ContainerPort: 8080, HostPort: 9090})), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(nodePorts{}.Filter(NewPodInfo(tt.pod), node)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// Taking the pod off frees its port.
	n := placed(makeNode("n"))
	a := NewPodInfo(makePod("a", ports(http))).placed()
	n.addPod(a)
	n.removePod(a)
	if st := (nodePorts{}).Filter(NewPodInfo(makePod("p", ports(http))), n); st != nil {
		t.Errorf("port still taken after the pod left: %v", st)
	}
	if !(nodePorts{}).SkipFilter(NewPodInfo(makePod("p"))) {
		t.Error("a pod without ports should skip NodePorts")
	}
}
