package api

import (
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks of the pod fields berth took in to hold every field of
// Kubernetes' pod, with Kubernetes' messages.

var (
	dnsPolicies               = []DNSPolicy{DNSClusterFirstWithHostNet, DNSClusterFirst, DNSDefault, DNSNone}
	pullPolicies              = []PullPolicy{PullAlways, PullIfNotPresent, PullNever}
	terminationMessagePolices = []TerminationMessagePolicy{TerminationMessageReadFile, TerminationMessageFallbackToLogsOnError}
	preemptionPolicies        = []PreemptionPolicy{PreemptLowerPriority, PreemptNever}
	containerRestartPolicies  = []ContainerRestartPolicy{ContainerRestartPolicyAlways, ContainerRestartPolicyOnFailure, ContainerRestartPolicyNever}
)

// Kubernetes' limits on a pod's DNS configuration.
const (
	maxDNSNameservers  = 3
	maxDNSSearchPaths  = 32
	maxDNSSearchLength = 2048
)

// isSidecar reports whether an init container is a sidecar: one that
// keeps running beside the containers (restartPolicy Always).
func isSidecar(c *Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == ContainerRestartPolicyAlways
}

// validatePodSpecFields checks the pod-level fields beyond berth's first
// subset.
func validatePodSpecFields(spec *PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.DNSPolicy != "" {
		errs = append(errs, validateOneOf(spec.DNSPolicy, dnsPolicies, p.Child("dnsPolicy"))...)
	}
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, p.Child("dnsConfig"))...)
	if spec.HostNetwork {
		for _, cs := range []struct {
			name string
			cs   []Container
		}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
			for i, c := range cs.cs {
				for j, port := range c.Ports {
					if port.HostPort != port.ContainerPort {
						errs = append(errs, field.Invalid(p.Child(cs.name).Index(i).Child("ports").Index(j).Child("hostPort"),
							port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
					}
				}
			}
		}
	}
	if a := spec.ActiveDeadlineSeconds; a != nil && (*a < 1 || *a > math.MaxInt32) {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *a, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.DeprecatedServiceAccount != "" {
		errs = append(errs, validateDNSSubdomain(spec.DeprecatedServiceAccount, p.Child("serviceAccount"))...)
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, validateDNSSubdomain(spec.PriorityClassName, p.Child("priorityClassName"))...)
	}
	if pp := spec.PreemptionPolicy; pp != nil {
		errs = append(errs, validateOneOf(*pp, preemptionPolicies, p.Child("preemptionPolicy"))...)
	}
	if spec.SecurityContext != nil {
		errs = append(errs, validatePodSecurityContext(spec.SecurityContext, p.Child("securityContext"))...)
	}
	if r := spec.Resources; r != nil {
		errs = append(errs, validateResources(r, p.Child("resources"))...)
	}
	errs = append(errs, validateResourceList(spec.Overhead, nil, p.Child("overhead"))...)
	for i, ha := range spec.HostAliases {
		hp := p.Child("hostAliases").Index(i)
		if _, err := netip.ParseAddr(ha.IP); err != nil {
			errs = append(errs, field.Invalid(hp.Child("ip"), ha.IP, "must be a valid IP address"))
		}
		for j, h := range ha.Hostnames {
			errs = append(errs, validateDNSSubdomain(h, hp.Child("hostnames").Index(j))...)
		}
	}
	for i, g := range spec.ReadinessGates {
		for _, msg := range validation.IsQualifiedName(string(g.ConditionType)) {
			errs = append(errs, field.Invalid(p.Child("readinessGates").Index(i).Child("conditionType"), g.ConditionType, msg))
		}
	}
	gates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		gp := p.Child("schedulingGates").Index(i).Child("name")
		for _, msg := range validation.IsQualifiedName(g.Name) {
			errs = append(errs, field.Invalid(gp, g.Name, msg))
		}
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(gp, g.Name))
		}
		gates.Insert(g.Name)
	}
	if len(spec.SchedulingGates) > 0 && spec.NodeName != "" {
		errs = append(errs, field.Forbidden(p.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	errs = append(errs, validateTopologySpread(spec.TopologySpreadConstraints, p.Child("topologySpreadConstraints"))...)
	if o := spec.OS; o != nil {
		errs = append(errs, validateOneOf(o.Name, []corev1.OSName{corev1.Linux, corev1.Windows}, p.Child("os", "name"))...)
	}
	if r := spec.RuntimeClassName; r != nil {
		errs = append(errs, validateDNSSubdomain(*r, p.Child("runtimeClassName"))...)
	}
	claims := sets.New[string]()
	for i, c := range spec.ResourceClaims {
		np := p.Child("resourceClaims").Index(i).Child("name")
		errs = append(errs, validateDNSLabel(c.Name, np)...)
		if claims.Has(c.Name) {
			errs = append(errs, field.Duplicate(np, c.Name))
		}
		claims.Insert(c.Name)
	}
	return errs
}

func validateDNSConfig(c *PodDNSConfig, policy DNSPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(p, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(c.Nameservers) == 0 {
			errs = append(errs, field.Required(p.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
		}
	}
	if c == nil {
		return errs
	}
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(p.Child("nameservers"), c.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		if _, err := netip.ParseAddr(ns); err != nil {
			errs = append(errs, field.Invalid(p.Child("nameservers").Index(i), ns, "must be valid IP address"))
		}
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, "must not have more than 32 search paths"))
	}
	if n := len(strings.Join(c.Searches, " ")); n > maxDNSSearchLength {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, s := range c.Searches {
		if s == "." {
			continue
		}
		errs = append(errs, validateDNSSubdomain(strings.TrimSuffix(s, "."), p.Child("searches").Index(i))...)
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateIDs(sc struct{ user, group *int64 }, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc.user != nil {
		for _, msg := range validation.IsValidUserID(*sc.user) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *sc.user, msg))
		}
	}
	if sc.group != nil {
		for _, msg := range validation.IsValidGroupID(*sc.group) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *sc.group, msg))
		}
	}
	return errs
}

func validateSecurityContext(sc *SecurityContext, p *field.Path) field.ErrorList {
	errs := validateIDs(struct{ user, group *int64 }{sc.RunAsUser, sc.RunAsGroup}, p)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" || c == "SYS_ADMIN" {
					errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	if pm := sc.ProcMount; pm != nil {
		errs = append(errs, validateOneOf(*pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}, p.Child("procMount"))...)
	}
	errs = append(errs, validateSeccomp(sc.SeccompProfile, p.Child("seccompProfile"))...)
	return errs
}

func validatePodSecurityContext(sc *PodSecurityContext, p *field.Path) field.ErrorList {
	errs := validateIDs(struct{ user, group *int64 }{sc.RunAsUser, sc.RunAsGroup}, p)
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	for i, g := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(g) {
			errs = append(errs, field.Invalid(p.Child("supplementalGroups").Index(i), g, msg))
		}
	}
	if sp := sc.SupplementalGroupsPolicy; sp != nil {
		errs = append(errs, validateOneOf(*sp, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}, p.Child("supplementalGroupsPolicy"))...)
	}
	if fp := sc.FSGroupChangePolicy; fp != nil {
		errs = append(errs, validateOneOf(*fp, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways}, p.Child("fsGroupChangePolicy"))...)
	}
	names := sets.New[string]()
	for i, s := range sc.Sysctls {
		np := p.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(np, ""))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(np, s.Name))
		}
		names.Insert(s.Name)
	}
	errs = append(errs, validateSeccomp(sc.SeccompProfile, p.Child("seccompProfile"))...)
	return errs
}

func validateSeccomp(s *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	errs := validateOneOf(s.Type, []corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost}, p.Child("type"))
	switch {
	case s.Type == corev1.SeccompProfileTypeLocalhost && (s.LocalhostProfile == nil || *s.LocalhostProfile == ""):
		errs = append(errs, field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case s.Type != corev1.SeccompProfileTypeLocalhost && s.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), s.LocalhostProfile, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// validateContainerFields checks a container's fields beyond berth's
// first subset.
func validateContainerFields(c *Container, init bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.ImagePullPolicy != "" {
		errs = append(errs, validateOneOf(c.ImagePullPolicy, pullPolicies, p.Child("imagePullPolicy"))...)
	}
	if c.TerminationMessagePolicy != "" {
		errs = append(errs, validateOneOf(c.TerminationMessagePolicy, terminationMessagePolices, p.Child("terminationMessagePolicy"))...)
	}
	if rp := c.RestartPolicy; rp != nil {
		allowed := containerRestartPolicies
		if init {
			allowed = []ContainerRestartPolicy{ContainerRestartPolicyAlways}
		}
		errs = append(errs, validateOneOf(*rp, allowed, p.Child("restartPolicy"))...)
	}
	if init && !isSidecar(c) && c.Lifecycle != nil {
		errs = append(errs, field.Forbidden(p.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always"))
	}
	for i, port := range c.Ports {
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				errs = append(errs, field.Invalid(p.Child("ports").Index(i).Child("hostIP"), port.HostIP, "must be a valid IP address"))
			}
		}
	}
	devices := sets.New[string]()
	for i, d := range c.VolumeDevices {
		dp := p.Child("volumeDevices").Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(dp.Child("name"), ""))
		}
		switch {
		case d.DevicePath == "":
			errs = append(errs, field.Required(dp.Child("devicePath"), ""))
		case devices.Has(d.DevicePath):
			errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		devices.Insert(d.DevicePath)
	}
	return errs
}

// validateMountOptions checks a volume mount's propagation, sub path
// expression and recursive read-only mode.
func validateMountOptions(m *VolumeMount, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.SubPathExpr != "" {
		if m.SubPath != "" {
			errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		errs = append(errs, validateRelativePath(m.SubPathExpr, p.Child("subPathExpr"))...)
	}
	if mp := m.MountPropagation; mp != nil {
		errs = append(errs, validateOneOf(*mp, []corev1.MountPropagationMode{corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional}, p.Child("mountPropagation"))...)
	}
	if rro := m.RecursiveReadOnly; rro != nil {
		errs = append(errs, validateOneOf(*rro, []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled}, p.Child("recursiveReadOnly"))...)
		if *rro != corev1.RecursiveReadOnlyDisabled && !m.ReadOnly {
			errs = append(errs, field.Forbidden(p.Child("recursiveReadOnly"), "may only be specified when readOnly is true"))
		}
	}
	return errs
}

// validateEphemeralContainers checks ephemeral containers, which
// Kubernetes takes only through a pod's ephemeralcontainers subresource:
// a pod or template may not be made with them.
func validateEphemeralContainers(ecs []EphemeralContainer, volumes, names sets.Set[string], p *field.Path) field.ErrorList {
	if len(ecs) == 0 {
		return nil
	}
	errs := field.ErrorList{field.Forbidden(p, "cannot be set on create")}
	containers := make([]Container, len(ecs))
	for i := range ecs {
		ec := &ecs[i]
		ep := p.Index(i)
		c := ec.Container
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(c.Ports) > 0},
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
			{"lifecycle", c.Lifecycle != nil},
			{"resources", len(c.Resources.Limits)+len(c.Resources.Requests) > 0},
			{"resizePolicy", len(c.ResizePolicy) > 0},
			{"restartPolicy", c.RestartPolicy != nil},
		} {
			if f.set {
				errs = append(errs, field.Forbidden(ep.Child(f.name), "cannot be set for an Ephemeral Container"))
			}
		}
		if ec.TargetContainerName != "" && !names.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(ep.Child("targetContainerName"), ec.TargetContainerName))
		}
		c.Ports, c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle, c.RestartPolicy = nil, nil, nil, nil, nil, nil
		containers[i] = c
	}
	return append(errs, validateContainers(containers, false, volumes, names, p)...)
}

var (
	unsatisfiableActions = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
	inclusionPolicies    = []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor}
)

func validateTopologySpread(cs []corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	type key struct {
		topologyKey string
		action      corev1.UnsatisfiableConstraintAction
	}
	seen := sets.New[key]()
	for i, c := range cs {
		cp := p.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(cp.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(cp.Child("topologyKey"), "can not be empty"))
		} else {
			for _, msg := range validation.IsQualifiedName(c.TopologyKey) {
				errs = append(errs, field.Invalid(cp.Child("topologyKey"), c.TopologyKey, msg))
			}
		}
		errs = append(errs, validateOneOf(c.WhenUnsatisfiable, unsatisfiableActions, cp.Child("whenUnsatisfiable"))...)
		if m := c.MinDomains; m != nil {
			if *m <= 0 {
				errs = append(errs, field.Invalid(cp.Child("minDomains"), *m, "must be greater than 0"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(cp.Child("minDomains"), *m, "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"))
			}
		}
		if np := c.NodeAffinityPolicy; np != nil {
			errs = append(errs, validateOneOf(*np, inclusionPolicies, cp.Child("nodeAffinityPolicy"))...)
		}
		if np := c.NodeTaintsPolicy; np != nil {
			errs = append(errs, validateOneOf(*np, inclusionPolicies, cp.Child("nodeTaintsPolicy"))...)
		}
		if c.LabelSelector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, cp.Child("labelSelector"))...)
		}
		k := key{c.TopologyKey, c.WhenUnsatisfiable}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(cp, "{"+c.TopologyKey+", "+string(c.WhenUnsatisfiable)+"}"))
		}
		seen.Insert(k)
	}
	return errs
}

// validatePodAffinity checks pod affinity, held as Kubernetes' type.
func validatePodAffinity(a *corev1.PodAffinity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range a.RequiredDuringSchedulingIgnoredDuringExecution {
		errs = append(errs, validateCoreAffinityTerm(&a.RequiredDuringSchedulingIgnoredDuringExecution[i], p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	return append(errs, validateWeightedTerms(a.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
}

// validateWeightedTerms checks preferred pod (anti-)affinity terms, held
// as Kubernetes' types.
func validateWeightedTerms(terms []corev1.WeightedPodAffinityTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		tp := p.Index(i)
		if t.Weight < 1 || t.Weight > 100 {
			errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validateCoreAffinityTerm(&t.PodAffinityTerm, tp.Child("podAffinityTerm"))...)
	}
	return errs
}

func validateCoreAffinityTerm(t *corev1.PodAffinityTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	} else {
		for _, msg := range validation.IsQualifiedName(t.TopologyKey) {
			errs = append(errs, field.Invalid(p.Child("topologyKey"), t.TopologyKey, msg))
		}
	}
	if t.LabelSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(t.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	if t.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	return errs
}

// validateStoredVolumeSources checks the volume sources held as
// Kubernetes' types and returns how many are set.
func validateStoredVolumeSources(s *VolumeSource, p *field.Path) (int, field.ErrorList) {
	var errs field.ErrorList
	set := 0
	for _, src := range []any{s.Projected, s.DownwardAPI, s.Ephemeral, s.CSI, s.NFS, s.Image, s.ISCSI, s.FC, s.GitRepo,
		s.GCEPersistentDisk, s.AWSElasticBlockStore, s.Glusterfs, s.RBD, s.FlexVolume, s.Cinder, s.CephFS, s.Flocker,
		s.AzureFile, s.VsphereVolume, s.Quobyte, s.AzureDisk, s.PhotonPersistentDisk, s.PortworxVolume, s.ScaleIO, s.StorageOS} {
		if !isNilPointer(src) {
			set++
		}
	}
	if d := s.DownwardAPI; d != nil {
		dp := p.Child("downwardAPI")
		errs = append(errs, validateFileMode(d.DefaultMode, dp.Child("defaultMode"))...)
		for i, f := range d.Items {
			errs = append(errs, validateDownwardAPIFile(&f, dp.Child("items").Index(i))...)
		}
	}
	if pr := s.Projected; pr != nil {
		pp := p.Child("projected")
		errs = append(errs, validateFileMode(pr.DefaultMode, pp.Child("defaultMode"))...)
		for i, src := range pr.Sources {
			sp := pp.Child("sources").Index(i)
			n := 0
			if src.Secret != nil {
				n++
			}
			if src.ConfigMap != nil {
				n++
			}
			if src.DownwardAPI != nil {
				n++
				for j, f := range src.DownwardAPI.Items {
					errs = append(errs, validateDownwardAPIFile(&f, sp.Child("downwardAPI", "items").Index(j))...)
				}
			}
			if t := src.ServiceAccountToken; t != nil {
				n++
				tp := sp.Child("serviceAccountToken")
				if t.Path == "" {
					errs = append(errs, field.Required(tp.Child("path"), ""))
				}
				if e := t.ExpirationSeconds; e != nil && *e < 600 {
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
				}
			}
			if src.ClusterTrustBundle != nil {
				n++
			}
			if src.PodCertificate != nil {
				n++
			}
			if n != 1 {
				errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
			}
		}
	}
	if e := s.Ephemeral; e != nil && e.VolumeClaimTemplate == nil {
		errs = append(errs, field.Required(p.Child("ephemeral", "volumeClaimTemplate"), ""))
	}
	if c := s.CSI; c != nil && c.Driver == "" {
		errs = append(errs, field.Required(p.Child("csi", "driver"), ""))
	}
	if n := s.NFS; n != nil {
		if n.Server == "" {
			errs = append(errs, field.Required(p.Child("nfs", "server"), ""))
		}
		if n.Path == "" {
			errs = append(errs, field.Required(p.Child("nfs", "path"), ""))
		} else if !strings.HasPrefix(n.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("nfs", "path"), n.Path, "must be an absolute path"))
		}
	}
	if im := s.Image; im != nil && im.Reference == "" {
		errs = append(errs, field.Required(p.Child("image", "reference"), ""))
	}
	return set, errs
}

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		errs = append(errs, validateRelativePath(f.Path, p.Child("path"))...)
	}
	switch {
	case f.FieldRef != nil && f.ResourceFieldRef != nil:
		errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
	case f.FieldRef == nil && f.ResourceFieldRef == nil:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, p.Child("resourceFieldRef"), true)...)
	}
	return append(errs, validateFileMode(f.Mode, p.Child("mode"))...)
}

// downwardResources are what a resourceFieldRef may read, besides huge
// pages (requests.hugepages-<size>, limits.hugepages-<size>).
var downwardResources = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}

// byteDivisors are the divisors of memory, ephemeral storage and huge
// pages, Kubernetes'.
var byteDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")

// validateResourceFieldSelector checks a resourceFieldRef as Kubernetes
// does: a resource of the downward API, a divisor of its unit, and in a
// volume the container it reads (an env var's defaults to its own).
func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, p *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	if volume && fs.ContainerName == "" {
		errs = append(errs, field.Required(p.Child("containerName"), ""))
	}
	_, name, _ := strings.Cut(fs.Resource, ".")
	hugePages := (strings.HasPrefix(fs.Resource, "limits.") || strings.HasPrefix(fs.Resource, "requests.")) && strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
	switch {
	case fs.Resource == "":
		errs = append(errs, field.Required(p.Child("resource"), ""))
	case !slices.Contains(downwardResources, fs.Resource) && !hugePages:
		errs = append(errs, field.NotSupported(p.Child("resource"), fs.Resource, downwardResources))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	switch d := fs.Divisor.String(); {
	case name == "cpu" && d != "1m" && d != "1":
		errs = append(errs, field.Invalid(p.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
	case name == "memory" && !byteDivisors.Has(d):
		errs = append(errs, field.Invalid(p.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
	case name == "ephemeral-storage" && !byteDivisors.Has(d):
		errs = append(errs, field.Invalid(p.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
	case hugePages && !byteDivisors.Has(d):
		errs = append(errs, field.Invalid(p.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
	}
	return errs
}

// isNilPointer reports whether v holds a nil pointer.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
