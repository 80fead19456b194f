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
		// The hostPort is asked of the node; the containerPort is taken
		// too, as the process listens on it in the node's network.
		{"hostPort clashes", makePod("p", ports(api.ContainerPort{ContainerPort: 80, HostPort: 8080})), "[node(s) didn't have free ports for the requested pod ports]"},
		{"containerPort clashes beside a hostPort", makePod("p", ports(api.ContainerPort{ContainerPort: 8080, HostPort: 9090})), "[node(s) didn't have free ports for the requested pod ports]"},
		{"hostPort and containerPort free", makePod("p", ports(api.ContainerPort{ContainerPort: 8081, HostPort: 9090})), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(nodePorts{}.Filter(nil, NewPodInfo(tt.pod), node)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// A pod with a hostPort takes both ports; taking it off frees both.
	hp := NewPodInfo(makePod("h", ports(api.ContainerPort{ContainerPort: 7000, HostPort: 7001}))).placed()
	n2 := placed(makeNode("n2"))
	n2.addPod(hp)
	for _, p := range []int32{7000, 7001} {
		if st := (nodePorts{}).Filter(nil, NewPodInfo(makePod("p", ports(api.ContainerPort{ContainerPort: p}))), n2); st == nil {
			t.Errorf("port %d free beside a pod taking 7000 and 7001", p)
		}
	}
	n2.removePod(hp)
	if st := (nodePorts{}).Filter(nil, NewPodInfo(makePod("p", ports(api.ContainerPort{ContainerPort: 7000, HostPort: 7001}))), n2); st != nil {
		t.Errorf("ports still taken after the pod left: %v", st)
	}
	// Taking the pod off frees its port.
	n := placed(makeNode("n"))
	a := NewPodInfo(makePod("a", ports(http))).placed()
	n.addPod(a)
	n.removePod(a)
	if st := (nodePorts{}).Filter(nil, NewPodInfo(makePod("p", ports(http))), n); st != nil {
		t.Errorf("port still taken after the pod left: %v", st)
	}
	if !(nodePorts{}).SkipFilter(nil, NewPodInfo(makePod("p"))) {
		t.Error("a pod without ports should skip NodePorts")
	}
}

// On a node whose pods have addresses of their own (containerd), only
// hostPorts take the node's ports: two pods listening on 8080 share it.
func TestNodePortsOnAPodNetwork(t *testing.T) {
	cd := makeNode("n")
	cd.Status.NodeInfo.ContainerRuntimeVersion = "containerd://1.6.20"
	node := placed(cd, makePod("a", ports(api.ContainerPort{ContainerPort: 8080}, api.ContainerPort{ContainerPort: 80, HostPort: 9090})))
	full := "[node(s) didn't have free ports for the requested pod ports]"
	tests := []struct {
		name string
		port api.ContainerPort
		want string
	}{
		{"same containerPort", api.ContainerPort{ContainerPort: 8080}, ""},
		{"hostPort on another's containerPort", api.ContainerPort{ContainerPort: 80, HostPort: 8080}, ""},
		{"containerPort on another's hostPort", api.ContainerPort{ContainerPort: 9090}, ""},
		{"same hostPort", api.ContainerPort{ContainerPort: 81, HostPort: 9090}, full},
		{"hostPort equal to its containerPort", api.ContainerPort{ContainerPort: 9090, HostPort: 9090}, full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(nodePorts{}.Filter(nil, NewPodInfo(makePod("p", ports(tt.port))), node)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	exec := makeNode("e")
	exec.Status.NodeInfo.ContainerRuntimeVersion = "exec://berth"
	if st := (nodePorts{}).Filter(nil, NewPodInfo(makePod("p", ports(api.ContainerPort{ContainerPort: 8080}))), placed(exec, makePod("a", ports(api.ContainerPort{ContainerPort: 8080})))); st == nil {
		t.Error("the exec runtime's node shared a containerPort")
	}
}
