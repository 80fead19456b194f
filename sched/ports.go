package sched

var statusNodePorts = NewStatus("NodePorts", ReasonNodePorts)

// nodePorts keeps two pods from taking the same host port on one node.
type nodePorts struct{}

func (nodePorts) Name() string { return "NodePorts" }

func (nodePorts) SkipFilter(_ *CycleState, pod *PodInfo) bool { return len(pod.Ports) == 0 }

func (nodePorts) gate(*CycleState, *PodInfo) nodeFlags { return flagPorts }

func (nodePorts) Filter(_ *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	for _, want := range pod.Ports {
		if want.ContainerOnly && node.podNetwork {
			continue
		}
		for _, used := range node.ports {
			if used.ContainerOnly && node.podNetwork {
				continue
			}
			if want.same(used) {
				return statusNodePorts
			}
		}
	}
	return nil
}
