package api

import (
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// +kubebuilder:object:root=true

// Ingress is a networking.k8s.io/v1 Ingress: HTTP and HTTPS routes, by
// host and path, from outside the cluster to Services. berth's
// built-in reverse proxy serves the Ingresses of its class (berth, the
// default class). The spec and status are Kubernetes' own types.
type Ingress struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the rules, the default backend and the TLS Secrets.
	Spec networkingv1.IngressSpec `json:"spec,omitempty"`
	// Status holds the addresses the Ingress is served on.
	Status networkingv1.IngressStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// IngressClass is a networking.k8s.io/v1 IngressClass: which controller
// serves the Ingresses that name it. The class marked with the
// is-default-class annotation is given to Ingresses that name none.
type IngressClass struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the controller and its parameters.
	Spec networkingv1.IngressClassSpec `json:"spec,omitempty"`
}

// The built-in Ingress controller's class, as the control plane makes it.
const (
	// IngressClassBerth is the class berth's own proxy serves.
	IngressClassBerth = "berth"
	// IngressControllerBerth is that class's spec.controller.
	IngressControllerBerth = "berth.dev/ingress"
	// AnnotationDefaultIngressClass marks the default class, Kubernetes'
	// annotation.
	AnnotationDefaultIngressClass = networkingv1.AnnotationIsDefaultIngressClass
)

// validateIngress checks an Ingress as Kubernetes' validation does: a
// backend is a Service (name and one of port number or name) or a
// resource, never both; paths start with a slash and name their
// pathType; hosts are DNS names, a wildcard only as the first label.
func validateIngress(ing *Ingress) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := &ing.Spec
	if s.IngressClassName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*s.IngressClassName) {
			errs = append(errs, field.Invalid(spec.Child("ingressClassName"), *s.IngressClassName, msg))
		}
	}
	if s.DefaultBackend == nil && len(s.Rules) == 0 {
		errs = append(errs, field.Invalid(spec, "", "either `defaultBackend` or `rules` must be specified"))
	}
	if s.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(s.DefaultBackend, spec.Child("defaultBackend"))...)
	}
	for i, r := range s.Rules {
		p := spec.Child("rules").Index(i)
		if r.Host != "" {
			errs = append(errs, validateIngressHost(r.Host, p.Child("host"))...)
		}
		if r.HTTP == nil {
			continue
		}
		hp := p.Child("http", "paths")
		if len(r.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp, ""))
		}
		for j, path := range r.HTTP.Paths {
			pp := hp.Index(j)
			errs = append(errs, validateIngressPath(&path, pp)...)
			errs = append(errs, validateIngressBackend(&path.Backend, pp.Child("backend"))...)
		}
	}
	for i, t := range s.TLS {
		p := spec.Child("tls").Index(i)
		for j, h := range t.Hosts {
			errs = append(errs, validateIngressHost(h, p.Child("hosts").Index(j))...)
		}
		if t.SecretName != "" {
			for _, msg := range validation.IsDNS1123Subdomain(t.SecretName) {
				errs = append(errs, field.Invalid(p.Child("secretName"), t.SecretName, msg))
			}
		}
	}
	return errs
}

func validateIngressHost(host string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.Contains(host, "*") {
		for _, msg := range validation.IsWildcardDNS1123Subdomain(host) {
			errs = append(errs, field.Invalid(p, host, msg))
		}
		return errs
	}
	for _, msg := range validation.IsDNS1123Subdomain(host) {
		errs = append(errs, field.Invalid(p, host, msg))
	}
	return errs
}

var ingressPathTypes = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypePrefix), string(networkingv1.PathTypeImplementationSpecific)}

func validateIngressPath(path *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.PathType == nil {
		return append(errs, field.Required(p.Child("pathType"), "pathType must be specified"))
	}
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must be an absolute path"))
		}
		for _, bad := range []string{"//", "/./", "/../", "%2f", "%2F"} {
			if strings.Contains(path.Path, bad) {
				errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must not contain '"+bad+"'"))
			}
		}
		for _, bad := range []string{"/..", "/."} {
			if strings.HasSuffix(path.Path, bad) {
				errs = append(errs, field.Invalid(p.Child("path"), path.Path, "cannot end with '"+bad+"'"))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType, ingressPathTypes))
	}
	return errs
}

func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Service != nil && b.Resource != nil:
		return append(errs, field.Invalid(p, "", "cannot set both resource and service backends"))
	case b.Service == nil && b.Resource == nil:
		return append(errs, field.Invalid(p, "", "resource or service must be specified"))
	case b.Resource != nil:
		if b.Resource.Kind == "" {
			errs = append(errs, field.Required(p.Child("resource", "kind"), ""))
		}
		if b.Resource.Name == "" {
			errs = append(errs, field.Required(p.Child("resource", "name"), ""))
		}
		return errs
	}
	sp := p.Child("service")
	if b.Service.Name == "" {
		errs = append(errs, field.Required(sp.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1035Label(b.Service.Name) {
			errs = append(errs, field.Invalid(sp.Child("name"), b.Service.Name, msg))
		}
	}
	port := b.Service.Port
	switch {
	case port.Name != "" && port.Number != 0:
		errs = append(errs, field.Invalid(sp.Child("port"), port, "cannot set both port name & port number"))
	case port.Name != "":
		for _, msg := range validation.IsValidPortName(port.Name) {
			errs = append(errs, field.Invalid(sp.Child("port", "name"), port.Name, msg))
		}
	case port.Number != 0:
		for _, msg := range validation.IsValidPortNum(int(port.Number)) {
			errs = append(errs, field.Invalid(sp.Child("port", "number"), port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(sp.Child("port"), "port name or number is required"))
	}
	return errs
}

// validateIngressClass checks the controller name, a domain-prefixed
// path as Kubernetes asks.
func validateIngressClass(ic *IngressClass) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "controller")
	c := ic.Spec.Controller
	switch {
	case c == "":
		errs = append(errs, field.Required(p, ""))
	case len(c) > 250:
		errs = append(errs, field.TooLong(p, "", 250))
	default:
		errs = append(errs, validation.IsDomainPrefixedPath(p, c)...)
	}
	return errs
}

// DefaultIngressClass returns the class the control plane makes at its
// first start: berth's, marked as the default.
func DefaultIngressClass() *IngressClass {
	return &IngressClass{
		TypeMeta: metav1.TypeMeta{APIVersion: NetworkingV1.String(), Kind: "IngressClass"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        IngressClassBerth,
			Annotations: map[string]string{AnnotationDefaultIngressClass: "true"},
		},
		Spec: networkingv1.IngressClassSpec{Controller: IngressControllerBerth},
	}
}

// DefaultIngressClassName is the name of the class marked as the
// default, the newest if several are; empty for none.
func DefaultIngressClassName(classes []*IngressClass) string {
	var best *IngressClass
	for _, c := range classes {
		if c.Annotations[AnnotationDefaultIngressClass] != "true" {
			continue
		}
		if best == nil || c.CreationTimestamp.After(best.CreationTimestamp.Time) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// AnnotationIngressClass is the class annotation older Ingresses carry
// in place of spec.ingressClassName.
const AnnotationIngressClass = "kubernetes.io/ingress.class"

// IngressServedBy tells whether a controller serves an Ingress: the
// class it names (spec.ingressClassName, else the legacy annotation,
// else the default class) is one of that controller's.
func IngressServedBy(ing *Ingress, controller string, classes []*IngressClass, defaultClass string) bool {
	name := defaultClass
	switch {
	case ing.Spec.IngressClassName != nil:
		name = *ing.Spec.IngressClassName
	case ing.Annotations[AnnotationIngressClass] != "":
		name = ing.Annotations[AnnotationIngressClass]
	}
	if name == "" {
		return false
	}
	for _, c := range classes {
		if c.Name == name {
			return c.Spec.Controller == controller
		}
	}
	return false
}
