package api

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks an object against Kubernetes' rules for its kind and
// berth's narrower subset of them (SPEC §4), so that nothing a controller,
// the scheduler or an agent cannot act on is ever stored. It returns every
// error with its field path. Run it after Default: it expects defaulted
// fields (a namespace, a restart policy) to be set.
func Validate(obj Object) field.ErrorList { return validateAs(obj, KindOf(obj)) }

// validateAs is Validate of an object of kind k, which the registry may
// not hold: a custom resource checked with its CRD from the same tree.
func validateAs(obj Object, k *Kind) field.ErrorList {
	if k == nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("%T is not a registered kind", obj))}
	}
	nameFn := apivalidation.NameIsDNSSubdomain
	switch obj.(type) {
	case *Namespace:
		nameFn = apivalidation.ValidateNamespaceName
	case *Service:
		nameFn = apivalidation.NameIsDNS1035Label
	case *ServiceAccount:
		nameFn = apivalidation.ValidateServiceAccountName
	case *Role, *ClusterRole, *RoleBinding, *ClusterRoleBinding:
		// Kubernetes' ValidateRBACName: "system:discovery" is a name.
		nameFn = path.ValidatePathSegmentName
	}
	errs := validateObjectMeta(obj, k.Namespaced, nameFn)
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *Namespace:
		errs = append(errs, validateNamespace(o)...)
	case *Node:
		errs = append(errs, validateTaints(o.Spec.Taints, spec.Child("taints"))...)
	case *Pod:
		errs = append(errs, validatePodSpec(&o.Spec, spec, podRestartPolicies)...)
	case *Service:
		errs = append(errs, validateServiceSpec(&o.Spec, spec)...)
		errs = append(errs, validateSourceRangesAnnotation(o)...)
	case *Endpoints:
		errs = append(errs, validateEndpoints(o)...)
	case *EndpointSlice:
		errs = append(errs, validateEndpointSlice(o)...)
	case *ReplicationController:
		errs = append(errs, validateReplicationControllerSpec(&o.Spec, spec)...)
	case *ReplicaSet:
		errs = append(errs, validateReplicaSetSpec(&o.Spec, spec)...)
	case *Deployment:
		errs = append(errs, validateDeploymentSpec(&o.Spec, spec)...)
	case *StatefulSet:
		errs = append(errs, validateStatefulSetSpec(&o.Spec, spec)...)
	case *DaemonSet:
		errs = append(errs, validateDaemonSetSpec(&o.Spec, spec)...)
	case *ControllerRevision:
		errs = append(errs, validateControllerRevision(o)...)
	case *PersistentVolume:
		errs = append(errs, validatePersistentVolumeSpec(&o.Spec, spec)...)
	case *PersistentVolumeClaim:
		errs = append(errs, validatePersistentVolumeClaimSpec(&o.Spec, spec)...)
	case *StorageClass:
		errs = append(errs, validateStorageClass(o)...)
	case *ServiceAccount:
		errs = append(errs, validateServiceAccount(o)...)
	case *Secret:
		errs = append(errs, validateSecret(o)...)
	case *ConfigMap:
		errs = append(errs, validateConfigMap(o)...)
	case *LimitRange:
		errs = append(errs, validateLimitRange(o)...)
	case *NetworkPolicy:
		errs = append(errs, validateNetworkPolicy(o)...)
	case *PriorityClass:
		errs = append(errs, validatePriorityClass(o)...)
	case *Ingress:
		errs = append(errs, validateIngress(o)...)
	case *IngressClass:
		errs = append(errs, validateIngressClass(o)...)
	case *HorizontalPodAutoscaler:
		errs = append(errs, validateHPASpec(&o.Spec, spec)...)
	case *ResourceQuota:
		errs = append(errs, validateResourceQuotaSpec(&o.Spec, spec)...)
	case *Event:
		errs = append(errs, validateEvent(o)...)
	case *Lease:
		errs = append(errs, validateLeaseSpec(&o.Spec, spec)...)
	case *PodDisruptionBudget:
		errs = append(errs, validatePodDisruptionBudgetSpec(&o.Spec, spec)...)
	case *Job:
		errs = append(errs, validateJob(o, spec)...)
	case *CronJob:
		errs = append(errs, validateCronJob(o, spec)...)
	case *Source:
		errs = append(errs, validateSourceSpec(&o.Spec, spec)...)
		errs = append(errs, validateSourceOrder(o, spec)...)
	case *Alert:
		errs = append(errs, validateAlertSpec(&o.Spec, spec)...)
	case *Role:
		errs = append(errs, validatePolicyRules(o.Rules, true, field.NewPath("rules"))...)
	case *ClusterRole:
		errs = append(errs, validateClusterRole(o)...)
	case *RoleBinding:
		errs = append(errs, validateBinding(o.RoleRef, o.Subjects, true)...)
	case *ClusterRoleBinding:
		errs = append(errs, validateBinding(o.RoleRef, o.Subjects, false)...)
	case *CustomResourceDefinition:
		errs = append(errs, validateCRDSpec(o)...)
	case *ValidatingWebhookConfiguration:
		errs = append(errs, validateValidatingWebhookConfiguration(o)...)
	case *MutatingWebhookConfiguration:
		errs = append(errs, validateMutatingWebhookConfiguration(o)...)
	case *ValidatingAdmissionPolicy:
		errs = append(errs, validateValidatingAdmissionPolicy(o)...)
	case *ValidatingAdmissionPolicyBinding:
		errs = append(errs, validateValidatingAdmissionPolicyBinding(o)...)
	}
	return errs
}

// validateObjectMeta checks name, namespace, labels, annotations, owner
// references and finalizers with apimachinery's checks, reporting each
// label at its own key so that a user is pointed at the line.
func validateObjectMeta(obj Object, namespaced bool, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	p := field.NewPath("metadata")
	var errs field.ErrorList
	if name := obj.GetName(); name == "" {
		errs = append(errs, field.Required(p.Child("name"), "every object needs a name"))
	} else {
		for _, msg := range nameFn(name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), name, msg))
		}
	}
	ns := obj.GetNamespace()
	switch {
	case namespaced && ns == "":
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	case namespaced:
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), ns, msg))
		}
	case ns != "":
		errs = append(errs, field.Forbidden(p.Child("namespace"), "not allowed on this type: it is not namespaced"))
	}
	if obj.GetGeneration() < 0 {
		errs = append(errs, apivalidation.ValidateNonnegativeField(obj.GetGeneration(), p.Child("generation"))...)
	}
	errs = append(errs, validateLabels(obj.GetLabels(), p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(obj.GetAnnotations(), p.Child("annotations"))...)
	errs = append(errs, apivalidation.ValidateOwnerReferences(obj.GetOwnerReferences(), p.Child("ownerReferences"))...)
	errs = append(errs, apivalidation.ValidateFinalizers(obj.GetFinalizers(), p.Child("finalizers"))...)
	return errs
}

// validateTemplateMeta checks the metadata of a pod template: only labels
// and annotations matter there.
func validateTemplateMeta(meta *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	errs := validateLabels(meta.Labels, p.Child("labels"))
	return append(errs, apivalidation.ValidateAnnotations(meta.Annotations, p.Child("annotations"))...)
}

// validateLabels checks label keys and values (also node selectors and
// service selectors), in key order, each at its own key.
func validateLabels(m map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedStringKeys(m) {
		kp := p.Key(k)
		errs = append(errs, metav1validation.ValidateLabelName(k, kp)...)
		for _, msg := range content.IsLabelValue(m[k]) {
			errs = append(errs, field.Invalid(kp, m[k], msg))
		}
	}
	return errs
}

func sortedStringKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedResourceNames(rl ResourceList) []ResourceName {
	names := make([]ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// validateLabelSelector checks a label selector with apimachinery's rules;
// required says whether it must select something.
func validateLabelSelector(s *metav1.LabelSelector, required bool, p *field.Path) field.ErrorList {
	if s == nil {
		if required {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}
	var errs field.ErrorList
	if required && len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, s, "an empty selector selects everything: name at least one label"))
	}
	errs = append(errs, validateLabels(s.MatchLabels, p.Child("matchLabels"))...)
	for i, req := range s.MatchExpressions {
		errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(req, metav1validation.LabelSelectorValidationOptions{}, p.Child("matchExpressions").Index(i))...)
	}
	return errs
}

// validateQuantity checks that a quantity is not negative.
func validateQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg)}
	}
	return nil
}

// validateResourceList checks that only the named resources appear and that
// none is negative.
func validateResourceList(rl ResourceList, allowed []ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(rl) {
		np := p.Key(string(name))
		if !slices.Contains(allowed, name) {
			errs = append(errs, field.NotSupported(np, name, allowed))
			continue
		}
		errs = append(errs, validateQuantity(rl[name], np)...)
	}
	return errs
}

// validateNonNegative checks an integer field that may not be negative.
func validateNonNegative[T int32 | int64](v T, p *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(v), p)
}

// validatePortNumber checks a port in 1..65535.
func validatePortNumber(port int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(p, port, msg))
	}
	return errs
}

// validatePortName checks a port name against IANA_SVC_NAME.
func validatePortName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortName(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validatePortNumOrName checks a port given as a number or a name.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		if port.StrVal == "" {
			return field.ErrorList{field.Required(p, "a port number or name")}
		}
		return validatePortName(port.StrVal, p)
	}
	return validatePortNumber(port.IntVal, p)
}

var supportedProtocols = []Protocol{ProtocolTCP, ProtocolUDP, ProtocolSCTP}

func validateProtocol(proto Protocol, p *field.Path) field.ErrorList {
	return validateOneOf(proto, supportedProtocols, p)
}

// validateOneOf checks a required field that takes one of a few values.
func validateOneOf[T ~string](v T, allowed []T, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if !slices.Contains(allowed, v) {
		return field.ErrorList{field.NotSupported(p, v, allowed)}
	}
	return nil
}

// validateDNSLabel, validateDNSSubdomain: names of other objects and of
// things inside objects.
func validateDNSLabel(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateDNSSubdomain(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// validateObjectName checks a required reference to another object by name.
func validateObjectName(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return validateDNSSubdomain(v, p)
}

// validateRelativePath checks a path that must stay inside a directory.
func validateRelativePath(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(v, "/") {
		errs = append(errs, field.Invalid(p, v, "must be a relative path"))
	}
	return append(errs, validateNoBacksteps(v, p)...)
}

// validateNoBacksteps rejects ".." elements, which would escape a directory.
func validateNoBacksteps(v string, p *field.Path) field.ErrorList {
	for part := range strings.SplitSeq(v, "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(p, v, "must not contain '..'")}
		}
	}
	return nil
}

// validateFileMode checks a file mode in 0..0777.
func validateFileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(p, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

// validateConfigKey checks a key of a ConfigMap or Secret.
func validateConfigKey(key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p, key, msg))
	}
	return errs
}
