package api

import (
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Restart policies a bare pod may have, and the one pods of workloads must
// have (their controller replaces pods that end).
var (
	podRestartPolicies      = []RestartPolicy{RestartPolicyAlways, RestartPolicyOnFailure, RestartPolicyNever}
	workloadRestartPolicies = []RestartPolicy{RestartPolicyAlways}
)

// containerResources are the resources a container may request (SPEC §4).
var containerResources = []ResourceName{ResourceCPU, ResourceEphemeralStorage, ResourceMemory}

// DownwardAPIFieldPaths are the pod fields a container's environment may
// read through valueFrom.fieldRef (SPEC §4); the agent fills in each.
var DownwardAPIFieldPaths = []string{
	"metadata.name",
	"metadata.namespace",
	"metadata.uid",
	"spec.nodeName",
	"spec.serviceAccountName",
	"status.hostIP",
	"status.podIP",
}

// validatePodSpec checks a pod spec, of a pod or of a workload's template.
func validatePodSpec(spec *PodSpec, p *field.Path, restartPolicies []RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	volumes, volErrs := validateVolumes(spec.Volumes, p.Child("volumes"))
	errs = append(errs, volErrs...)

	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), "a pod needs at least one container"))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(spec.InitContainers, true, volumes, names, p.Child("initContainers"))...)
	errs = append(errs, validateContainers(spec.Containers, false, volumes, names, p.Child("containers"))...)

	errs = append(errs, validateOneOf(spec.RestartPolicy, restartPolicies, p.Child("restartPolicy"))...)
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, validateNonNegative(*g, p.Child("terminationGracePeriodSeconds"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, validateDNSSubdomain(spec.NodeName, p.Child("nodeName"))...)
	}
	errs = append(errs, validateLabels(spec.NodeSelector, p.Child("nodeSelector"))...)
	if spec.Affinity != nil {
		errs = append(errs, validateAffinity(spec.Affinity, p.Child("affinity"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, p.Child("tolerations"))...)
	if spec.ServiceAccountName != "" {
		errs = append(errs, validateDNSSubdomain(spec.ServiceAccountName, p.Child("serviceAccountName"))...)
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNSLabel(spec.Hostname, p.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNSLabel(spec.Subdomain, p.Child("subdomain"))...)
	}
	if spec.SchedulerName != "" && spec.SchedulerName != DefaultSchedulerName {
		errs = append(errs, field.NotSupported(p.Child("schedulerName"), spec.SchedulerName, []string{DefaultSchedulerName}))
	}
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, volumes, names, p.Child("ephemeralContainers"))...)
	errs = append(errs, validatePodSpecFields(spec, p)...)
	return errs
}

// validateContainers checks init or regular containers; names collects the
// container names of the pod, which must be unique across both lists.
func validateContainers(containers []Container, init bool, volumes sets.Set[string], names sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		cp := p.Index(i)
		np := cp.Child("name")
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(np, ""))
		case names.Has(c.Name):
			errs = append(errs, field.Duplicate(np, c.Name))
		default:
			errs = append(errs, validateDNSLabel(c.Name, np)...)
		}
		names.Insert(c.Name)
		if c.Image == "" && len(c.Command) == 0 && len(c.Args) == 0 {
			errs = append(errs, field.Required(cp.Child("image"), "a container needs an image or a command"))
		}
		errs = append(errs, validateContainerPorts(c.Ports, cp.Child("ports"))...)
		errs = append(errs, validateEnv(c.Env, cp.Child("env"))...)
		errs = append(errs, validateEnvFrom(c.EnvFrom, cp.Child("envFrom"))...)
		errs = append(errs, validateResources(&c.Resources, cp.Child("resources"))...)
		errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, cp.Child("volumeMounts"))...)
		probes := []struct {
			name  string
			probe *Probe
		}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}}
		for _, pr := range probes {
			if pr.probe == nil {
				continue
			}
			if init && !isSidecar(c) {
				errs = append(errs, field.Forbidden(cp.Child(pr.name), "may not be set for init containers without restartPolicy=Always"))
				continue
			}
			errs = append(errs, validateProbe(pr.probe, pr.name != "readinessProbe", cp.Child(pr.name))...)
		}
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, cp.Child("lifecycle"))...)
		}
		if sc := c.SecurityContext; sc != nil {
			errs = append(errs, validateSecurityContext(sc, cp.Child("securityContext"))...)
		}
		errs = append(errs, validateContainerFields(c, init, cp)...)
	}
	return errs
}

func validateContainerPorts(ports []ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		if port.Name != "" {
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			} else {
				errs = append(errs, validatePortName(port.Name, pp.Child("name"))...)
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePortNumber(port.ContainerPort, pp.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, validatePortNumber(port.HostPort, pp.Child("hostPort"))...)
		}
		errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
	}
	return errs
}

func validateEnv(env []EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		ep := p.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), ""))
		} else {
			for _, msg := range validation.IsEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(ep.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom == nil {
			continue
		}
		vp := ep.Child("valueFrom")
		if ev.Value != "" {
			errs = append(errs, field.Invalid(vp, "", "may not be specified when `value` is not empty"))
		}
		vf := ev.ValueFrom
		set := 0
		if vf.FieldRef != nil {
			set++
			errs = append(errs, validateFieldRef(vf.FieldRef, vp.Child("fieldRef"))...)
		}
		if vf.ConfigMapKeyRef != nil {
			set++
			errs = append(errs, validateObjectName(vf.ConfigMapKeyRef.Name, vp.Child("configMapKeyRef", "name"))...)
			errs = append(errs, validateConfigKey(vf.ConfigMapKeyRef.Key, vp.Child("configMapKeyRef", "key"))...)
		}
		if vf.SecretKeyRef != nil {
			set++
			errs = append(errs, validateObjectName(vf.SecretKeyRef.Name, vp.Child("secretKeyRef", "name"))...)
			errs = append(errs, validateConfigKey(vf.SecretKeyRef.Key, vp.Child("secretKeyRef", "key"))...)
		}
		if rf := vf.ResourceFieldRef; rf != nil {
			set++
			errs = append(errs, validateResourceFieldSelector(rf, vp.Child("resourceFieldRef"), false)...)
		}
		if fk := vf.FileKeyRef; fk != nil {
			set++
			fp := vp.Child("fileKeyRef")
			if fk.VolumeName == "" {
				errs = append(errs, field.Required(fp.Child("volumeName"), ""))
			}
			if fk.Path == "" {
				errs = append(errs, field.Required(fp.Child("path"), ""))
			}
			if fk.Key == "" {
				errs = append(errs, field.Required(fp.Child("key"), ""))
			}
		}
		errs = append(errs, exactlyOne(set, "fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef", vp)...)
	}
	return errs
}

// exactlyOne reports a union with none or several members set.
func exactlyOne(set int, what string, p *field.Path) field.ErrorList {
	switch {
	case set == 0:
		return field.ErrorList{field.Required(p, "must specify one of "+what)}
	case set > 1:
		return field.ErrorList{field.Forbidden(p, "may not specify more than one of "+what)}
	}
	return nil
}

func validateFieldRef(ref *ObjectFieldSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		errs = append(errs, field.NotSupported(p.Child("apiVersion"), ref.APIVersion, []string{"v1"}))
	}
	errs = append(errs, validateOneOf(ref.FieldPath, DownwardAPIFieldPaths, p.Child("fieldPath"))...)
	return errs
}

func validateEnvFrom(envFrom []EnvFromSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range envFrom {
		ep := p.Index(i)
		if ef.Prefix != "" {
			for _, msg := range validation.IsEnvVarName(ef.Prefix) {
				errs = append(errs, field.Invalid(ep.Child("prefix"), ef.Prefix, msg))
			}
		}
		set := 0
		if ef.ConfigMapRef != nil {
			set++
			errs = append(errs, validateObjectName(ef.ConfigMapRef.Name, ep.Child("configMapRef", "name"))...)
		}
		if ef.SecretRef != nil {
			set++
			errs = append(errs, validateObjectName(ef.SecretRef.Name, ep.Child("secretRef", "name"))...)
		}
		errs = append(errs, exactlyOne(set, "configMapRef or secretRef", ep)...)
	}
	return errs
}

// validateResources checks requests and limits: known resources, not
// negative, and no request above its limit.
func validateResources(r *ResourceRequirements, p *field.Path) field.ErrorList {
	errs := validateResourceList(r.Limits, containerResources, p.Child("limits"))
	errs = append(errs, validateResourceList(r.Requests, containerResources, p.Child("requests"))...)
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		limit, ok := r.Limits[name]
		if ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func validateVolumeMounts(mounts []VolumeMount, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		mp := p.Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(mp.Child("name"), ""))
		case !volumes.Has(m.Name):
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		case paths.Has(m.MountPath):
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateRelativePath(m.SubPath, mp.Child("subPath"))...)
		}
		errs = append(errs, validateMountOptions(&m, mp)...)
	}
	return errs
}

// validateProbe checks a probe; liveness and startup probes must succeed
// once to count.
func validateProbe(probe *Probe, singleSuccess bool, p *field.Path) field.ErrorList {
	errs := validateHandler(&probe.ProbeHandler, p)
	errs = append(errs, validateNonNegative(probe.InitialDelaySeconds, p.Child("initialDelaySeconds"))...)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"timeoutSeconds", probe.TimeoutSeconds},
		{"periodSeconds", probe.PeriodSeconds},
		{"successThreshold", probe.SuccessThreshold},
		{"failureThreshold", probe.FailureThreshold},
	} {
		if f.value < 1 {
			errs = append(errs, field.Invalid(p.Child(f.name), f.value, "must be greater than or equal to 1"))
		}
	}
	if singleSuccess && probe.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(p.Child("successThreshold"), probe.SuccessThreshold, "must be 1"))
	}
	if g := probe.TerminationGracePeriodSeconds; g != nil && *g < 1 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateHandler checks that exactly one probe action is set, and it.
func validateHandler(h *ProbeHandler, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if h.Exec != nil {
		set++
		errs = append(errs, validateExec(h.Exec, p.Child("exec"))...)
	}
	if h.HTTPGet != nil {
		set++
		hp := p.Child("httpGet")
		errs = append(errs, validatePortNumOrName(h.HTTPGet.Port, hp.Child("port"))...)
		if s := h.HTTPGet.Scheme; s != "" && s != URISchemeHTTP && s != URISchemeHTTPS {
			errs = append(errs, field.NotSupported(hp.Child("scheme"), s, []URIScheme{URISchemeHTTP, URISchemeHTTPS}))
		}
		for i, hdr := range h.HTTPGet.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
				errs = append(errs, field.Invalid(hp.Child("httpHeaders").Index(i).Child("name"), hdr.Name, msg))
			}
		}
	}
	if h.TCPSocket != nil {
		set++
		errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, p.Child("tcpSocket", "port"))...)
	}
	if g := h.GRPC; g != nil {
		set++
		for _, msg := range validation.IsValidPortNum(int(g.Port)) {
			errs = append(errs, field.Invalid(p.Child("grpc", "port"), g.Port, msg))
		}
	}
	return append(errs, exactlyOne(set, "exec, httpGet, tcpSocket or grpc", p)...)
}

func validateExec(e *ExecAction, p *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(p.Child("command"), "")}
	}
	return nil
}

func validateLifecycle(l *Lifecycle, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, h := range []struct {
		name string
		h    *LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if h.h != nil {
			errs = append(errs, validateLifecycleHandler(h.h, p.Child(h.name))...)
		}
	}
	if l.StopSignal != nil && *l.StopSignal == "" {
		errs = append(errs, field.Required(p.Child("stopSignal"), ""))
	}
	return errs
}

// validateLifecycleHandler checks that a hook has exactly one action, as
// Kubernetes says it.
func validateLifecycleHandler(h *LifecycleHandler, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if h.Exec != nil {
		set++
		errs = append(errs, validateExec(h.Exec, p.Child("exec"))...)
	}
	if g := h.HTTPGet; g != nil {
		set++
		hp := p.Child("httpGet")
		errs = append(errs, validatePortNumOrName(g.Port, hp.Child("port"))...)
		if s := g.Scheme; s != "" && s != URISchemeHTTP && s != URISchemeHTTPS {
			errs = append(errs, field.NotSupported(hp.Child("scheme"), s, []URIScheme{URISchemeHTTP, URISchemeHTTPS}))
		}
	}
	if t := h.TCPSocket; t != nil {
		set++
		errs = append(errs, validatePortNumOrName(t.Port, p.Child("tcpSocket", "port"))...)
	}
	if sl := h.Sleep; sl != nil {
		set++
		if sl.Seconds < 0 {
			errs = append(errs, field.Invalid(p.Child("sleep", "seconds"), sl.Seconds, "must be non-negative"))
		}
	}
	switch {
	case set == 0:
		errs = append(errs, field.Required(p, "must specify a handler type"))
	case set > 1:
		errs = append(errs, field.Forbidden(p, "may not specify more than 1 handler type"))
	}
	return errs
}

// validateVolumes checks a pod's volumes and returns their names for the
// mounts to refer to.
func validateVolumes(volumes []Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		vp := p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		default:
			errs = append(errs, validateDNSLabel(v.Name, vp.Child("name"))...)
		}
		names.Insert(v.Name)
		errs = append(errs, validateVolumeSource(&v.VolumeSource, vp)...)
	}
	return names, errs
}

var hostPathTypes = []HostPathType{HostPathUnset, HostPathDirectoryOrCreate, HostPathDirectory, HostPathFileOrCreate, HostPathFile, HostPathSocket, HostPathCharDev, HostPathBlockDev}

func validateVolumeSource(s *VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if e := s.EmptyDir; e != nil {
		set++
		ep := p.Child("emptyDir")
		if e.Medium != StorageMediumDefault && e.Medium != StorageMediumMemory {
			errs = append(errs, field.NotSupported(ep.Child("medium"), e.Medium, []StorageMedium{StorageMediumDefault, StorageMediumMemory}))
		}
		if e.SizeLimit != nil {
			errs = append(errs, validateQuantity(*e.SizeLimit, ep.Child("sizeLimit"))...)
		}
	}
	if h := s.HostPath; h != nil {
		set++
		errs = append(errs, validateHostPath(h, p.Child("hostPath"))...)
	}
	if c := s.PersistentVolumeClaim; c != nil {
		set++
		errs = append(errs, validateObjectName(c.ClaimName, p.Child("persistentVolumeClaim", "claimName"))...)
	}
	if c := s.ConfigMap; c != nil {
		set++
		cp := p.Child("configMap")
		errs = append(errs, validateObjectName(c.Name, cp.Child("name"))...)
		errs = append(errs, validateKeyToPaths(c.Items, cp.Child("items"))...)
		errs = append(errs, validateFileMode(c.DefaultMode, cp.Child("defaultMode"))...)
	}
	if sec := s.Secret; sec != nil {
		set++
		sp := p.Child("secret")
		errs = append(errs, validateObjectName(sec.SecretName, sp.Child("secretName"))...)
		errs = append(errs, validateKeyToPaths(sec.Items, sp.Child("items"))...)
		errs = append(errs, validateFileMode(sec.DefaultMode, sp.Child("defaultMode"))...)
	}
	n, stored := validateStoredVolumeSources(s, p)
	errs = append(errs, stored...)
	switch set += n; {
	case set == 0:
		errs = append(errs, field.Required(p, "must specify a volume type"))
	case set > 1:
		errs = append(errs, field.Forbidden(p, "may not specify more than 1 volume type"))
	}
	return errs
}

func validateHostPath(h *HostPathVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		errs = append(errs, validateNoBacksteps(h.Path, p.Child("path"))...)
	}
	if h.Type != nil && !slices.Contains(hostPathTypes, *h.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), *h.Type, hostPathTypes))
	}
	return errs
}

func validateKeyToPaths(items []KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		errs = append(errs, validateConfigKey(it.Key, ip.Child("key"))...)
		if it.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		} else {
			errs = append(errs, validateRelativePath(it.Path, ip.Child("path"))...)
		}
		errs = append(errs, validateFileMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

func validateAffinity(a *Affinity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, np.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			for _, msg := range validation.IsInRange(int(pref.Weight), 1, 100) {
				errs = append(errs, field.Invalid(pp.Child("weight"), pref.Weight, msg))
			}
			errs = append(errs, validateNodeSelectorTerm(&pref.Preference, pp.Child("preference"))...)
		}
	}
	if paa := a.PodAntiAffinity; paa != nil {
		pp := p.Child("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
		for i, term := range paa.RequiredDuringSchedulingIgnoredDuringExecution {
			tp := pp.Index(i)
			if term.TopologyKey == "" {
				errs = append(errs, field.Required(tp.Child("topologyKey"), "can not be empty"))
			} else {
				for _, msg := range validation.IsQualifiedName(term.TopologyKey) {
					errs = append(errs, field.Invalid(tp.Child("topologyKey"), term.TopologyKey, msg))
				}
			}
			errs = append(errs, validateLabelSelector(term.LabelSelector, false, tp.Child("labelSelector"))...)
			for j, ns := range term.Namespaces {
				errs = append(errs, validateDNSLabel(ns, tp.Child("namespaces").Index(j))...)
			}
			errs = append(errs, validateLabelSelector(term.NamespaceSelector, false, tp.Child("namespaceSelector"))...)
		}
		errs = append(errs, validateWeightedTerms(paa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinity(pa, p.Child("podAffinity"))...)
	}
	return errs
}

// validateNodeSelector checks node affinity (of a pod or a volume).
func validateNodeSelector(s *NodeSelector, p *field.Path) field.ErrorList {
	tp := p.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(tp, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(&s.NodeSelectorTerms[i], tp.Index(i))...)
	}
	return errs
}

var nodeSelectorOperators = []NodeSelectorOperator{NodeSelectorOpIn, NodeSelectorOpNotIn, NodeSelectorOpExists, NodeSelectorOpDoesNotExist, NodeSelectorOpGt, NodeSelectorOpLt}

func validateNodeSelectorTerm(t *NodeSelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, req := range t.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(req.Key, rp.Child("key"))...)
		errs = append(errs, validateNodeSelectorOperator(req, rp)...)
	}
	for i, req := range t.MatchFields {
		rp := p.Child("matchFields").Index(i)
		if req.Key != "metadata.name" {
			errs = append(errs, field.NotSupported(rp.Child("key"), req.Key, []string{"metadata.name"}))
		}
		if req.Operator != NodeSelectorOpIn && req.Operator != NodeSelectorOpNotIn {
			errs = append(errs, field.NotSupported(rp.Child("operator"), req.Operator, []NodeSelectorOperator{NodeSelectorOpIn, NodeSelectorOpNotIn}))
			continue
		}
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(rp.Child("values"), "must have exactly one node name"))
			continue
		}
		errs = append(errs, validateDNSSubdomain(req.Values[0], rp.Child("values").Index(0))...)
	}
	return errs
}

func validateNodeSelectorOperator(req NodeSelectorRequirement, p *field.Path) field.ErrorList {
	vp := p.Child("values")
	switch req.Operator {
	case NodeSelectorOpIn, NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			return field.ErrorList{field.Required(vp, "must be specified when `operator` is 'In' or 'NotIn'")}
		}
	case NodeSelectorOpExists, NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			return field.ErrorList{field.Forbidden(vp, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")}
		}
	case NodeSelectorOpGt, NodeSelectorOpLt:
		if len(req.Values) != 1 {
			return field.ErrorList{field.Required(vp, "must be specified single value when `operator` is 'Lt' or 'Gt'")}
		}
		if _, err := strconv.ParseInt(req.Values[0], 10, 64); err != nil {
			return field.ErrorList{field.Invalid(vp.Index(0), req.Values[0], "must be an integer when `operator` is 'Lt' or 'Gt'")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("operator"), req.Operator, nodeSelectorOperators)}
	}
	return nil
}

var taintEffects = []TaintEffect{TaintEffectNoSchedule, TaintEffectPreferNoSchedule, TaintEffectNoExecute}

func validateTolerations(tolerations []Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		tp := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
		} else if t.Operator != TolerationOpExists {
			errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case TolerationOpEqual, "":
			for _, msg := range content.IsLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
			}
		case TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator, []TolerationOperator{TolerationOpEqual, TolerationOpExists}))
		}
		if t.Effect != "" && !slices.Contains(taintEffects, t.Effect) {
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, taintEffects))
		}
	}
	return errs
}

func validateTaints(taints []Taint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range taints {
		tp := p.Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(tp.Child("key"), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
		}
		for _, msg := range content.IsLabelValue(t.Value) {
			errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
		}
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(tp.Child("effect"), ""))
		case !slices.Contains(taintEffects, t.Effect):
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, taintEffects))
		}
		id := t.Key + ":" + string(t.Effect)
		if seen.Has(id) {
			errs = append(errs, field.Duplicate(tp, id))
		}
		seen.Insert(id)
	}
	return errs
}
