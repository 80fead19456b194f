package apiserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/api"
)

// proxyTarget is what the name segment of a pods/proxy or services/proxy
// path names: [scheme:]name[:port], as Kubernetes' SplitSchemeNamePort
// reads it.
type proxyTarget struct {
	// scheme is "", "http" or "https"; "" is http.
	scheme string
	name   string
	// port is a number, a port name, or "" for the default.
	port string
}

// parseProxyTarget reads "name", "name:port" or "scheme:name:port"; false
// when id has more parts, an empty name or a scheme other than http and
// https.
func parseProxyTarget(id string) (proxyTarget, bool) {
	var t proxyTarget
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 1:
		t.name = parts[0]
	case 2:
		t.name, t.port = parts[0], parts[1]
	case 3:
		t.scheme, t.name, t.port = parts[0], parts[1], parts[2]
	default:
		return proxyTarget{}, false
	}
	if t.name == "" || (t.scheme != "" && t.scheme != "http" && t.scheme != "https") {
		return proxyTarget{}, false
	}
	return t, true
}

// String is the name form again, as parseProxyTarget read it.
func (t proxyTarget) String() string {
	switch {
	case t.scheme != "":
		return t.scheme + ":" + t.name + ":" + t.port
	case t.port != "":
		return t.name + ":" + t.port
	}
	return t.name
}

// portNumber reads a port given by number: ok false when p is not a
// number, an error when it is one outside 1–65535.
func portNumber(p string) (int, bool, error) {
	n, err := strconv.ParseInt(p, 10, 64)
	if err != nil {
		return 0, false, nil
	}
	if n < 1 || n > 65535 {
		return 0, true, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q: a port number is 1 to 65535", p))
	}
	return int(n), true, nil
}

// podProxyHost is where pods/proxy reaches a pod, as Kubernetes' pod
// ResourceLocation finds it: the pod's IP and the port named (by number,
// or by the name of one of its containers' ports, which Kubernetes leaves
// to a TODO), else the first port of the first container that declares
// one, else none (the scheme's own port).
func podProxyHost(pod *api.Pod, t proxyTarget) (string, error) {
	ip := pod.Status.PodIP
	if ip == "" && len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	if ip == "" {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("pod %q has no IP address yet", pod.Name))
	}
	if err := proxyableIP(ip); err != nil {
		return "", err
	}
	port := t.port
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	} else if _, isNumber, err := portNumber(port); err != nil {
		return "", err
	} else if !isNumber {
		port = containerPortByName(pod, port)
		if port == "" {
			return "", apierrors.NewBadRequest(fmt.Sprintf("pod %q has no container port named %q", pod.Name, t.port))
		}
	}
	if port == "" {
		if strings.Contains(ip, ":") {
			return "[" + ip + "]", nil
		}
		return ip, nil
	}
	return net.JoinHostPort(ip, port), nil
}

// containerPortByName is the number of the pod's container port named
// name, "" when none is.
func containerPortByName(pod *api.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return strconv.Itoa(int(p.ContainerPort))
			}
		}
	}
	return ""
}

// servicePortName is the name under which a service's endpoints list the
// port t names: a number is looked up among the service's ports (503 when
// none has it, as in Kubernetes), a name is the name.
func servicePortName(svc *api.Service, t proxyTarget) (string, error) {
	n, isNumber, err := portNumber(t.port)
	switch {
	case err != nil:
		return "", err
	case !isNumber:
		return t.port, nil
	}
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == n {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, svc.Name))
}

// serviceProxyHost is where services/proxy reaches a service, as
// Kubernetes' service ResourceLocation finds it: a ready address of its
// endpoints that serves the port (by its resolved targetPort), picked at
// random, whose pod still holds the address (valid). id is the name form
// the request gave, which the last refusal names as Kubernetes' does.
func serviceProxyHost(svc *api.Service, eps *api.Endpoints, t proxyTarget, id string, valid func(api.EndpointAddress) bool) (string, error) {
	portName, err := servicePortName(svc, t)
	if err != nil {
		return "", err
	}
	if eps == nil || len(eps.Subsets) == 0 {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", svc.Name))
	}
	first := rand.IntN(len(eps.Subsets))
	for i := range eps.Subsets {
		ss := &eps.Subsets[(first+i)%len(eps.Subsets)]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name != portName {
				continue
			}
			start := rand.IntN(len(ss.Addresses))
			for j := range ss.Addresses {
				addr := ss.Addresses[(start+j)%len(ss.Addresses)]
				if !valid(addr) || proxyableIP(addr.IP) != nil {
					continue
				}
				return net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port))), nil
			}
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
}

// proxyableIP refuses addresses the API server must not be sent to on a
// pod's behalf: unspecified, multicast, broadcast and link-local ones
// (cloud metadata services live there). Kubernetes refuses loopback too;
// berth cannot, since a pod under the exec runtime has its node's IP and
// a node may well be on loopback (one machine, tests), and the proxy is
// open only to the admin, who may reach the node anyway.
func proxyableIP(s string) error {
	ip := net.ParseIP(s)
	switch {
	case ip == nil:
		return apierrors.NewBadRequest(fmt.Sprintf("address not allowed: %q is not an IP address", s))
	case ip.IsUnspecified(), ip.IsMulticast(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.Equal(net.IPv4bcast):
		return apierrors.NewBadRequest(fmt.Sprintf("address not allowed: %s", s))
	}
	return nil
}
