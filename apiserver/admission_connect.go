package apiserver

import (
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/apiserver/admission"
)

// A connect (pods/exec, pods/attach, pods/portforward) goes through
// admission as kube-apiserver sends it: operation CONNECT, the request's
// options as the object (a v1 PodExecOptions, PodAttachOptions or
// PodPortForwardOptions), to the mutating webhooks, the validating
// admission policies and the validating webhooks whose rules name
// CONNECT, after authorization and before the node is reached. A
// refusal ends the request with the webhook's or policy's status; a
// mutating webhook's patch has nothing to change.

// connectOptions reads the options of a connect request from its query,
// as Kubernetes decodes them before admission.
func connectOptions(subresource string, q url.Values) (runtime.Object, error) {
	flag := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, badRequest("%s=%q: not a boolean", name, v)
		}
		return b, nil
	}
	streams := func(stdin, stdout, stderr, tty *bool) error {
		for name, p := range map[string]*bool{"stdin": stdin, "stdout": stdout, "stderr": stderr, "tty": tty} {
			b, err := flag(name)
			if err != nil {
				return err
			}
			*p = b
		}
		return nil
	}
	switch subresource {
	case "exec":
		o := &corev1.PodExecOptions{Container: q.Get("container"), Command: q["command"]}
		o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodExecOptions"))
		return o, streams(&o.Stdin, &o.Stdout, &o.Stderr, &o.TTY)
	case "attach":
		o := &corev1.PodAttachOptions{Container: q.Get("container")}
		o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodAttachOptions"))
		return o, streams(&o.Stdin, &o.Stdout, &o.Stderr, &o.TTY)
	}
	o := &corev1.PodPortForwardOptions{}
	o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodPortForwardOptions"))
	for _, p := range q["ports"] {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return nil, badRequest("ports=%q: not a port number", p)
		}
		o.Ports = append(o.Ports, int32(n))
	}
	return o, nil
}

// admitConnect sends a connect request through admission.
func (s *Server) admitConnect(r *http.Request, req *resourceRequest) error {
	opts, err := connectOptions(req.subresource, r.URL.Query())
	if err != nil {
		return err
	}
	areq := &admission.Request{
		Operation: admission.Connect, Kind: req.kind,
		Namespace: req.namespace, Name: req.name, Subresource: req.subresource,
		Options: opts, User: req.id.UserInfo(),
	}
	_, warnings, err := s.webhooks.Mutate(r.Context(), areq, nil)
	req.warn(warnings)
	if err != nil {
		return err
	}
	warnings, err = s.policies.Validate(r.Context(), areq)
	req.warn(warnings)
	if err != nil {
		return err
	}
	warnings, err = s.webhooks.Validate(r.Context(), areq)
	req.warn(warnings)
	return err
}
