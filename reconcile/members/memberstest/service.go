package memberstest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// Service returns the service name in namespace default, labelled team=a so
// that tests see the labels the controllers copy, selecting pods by selector
// (none when nil) on ports.
func Service(name string, selector map[string]string, ports ...api.ServicePort) *api.Service {
	return &api.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"team": "a"}},
		Spec:       api.ServiceSpec{Selector: selector, Ports: ports},
	}
}

// HTTPPort is port 80 targeting the port a Pod names http, so that it
// resolves to 8080 on a Pod and to nothing on one without ports.
func HTTPPort() api.ServicePort {
	return api.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: api.ProtocolTCP}
}

// MetricsPort is port 9090 targeting 9100 by number, so that it resolves on
// every Pod, with container ports or without.
func MetricsPort() api.ServicePort {
	return api.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9100), Protocol: api.ProtocolTCP}
}
