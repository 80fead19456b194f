package main

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// describePod follows kubectl's pod description: where and since when it
// runs, its status, each container's state, last state, restarts,
// resources, probes, environment and mounts, the conditions, the volumes
// and the scheduling constraints.
func describePod(w *describeWriter, obj api.Object, dc *describeContext) {
	p := obj.(*api.Pod)
	w.write(level0, "Name:\t%s\n", p.Name)
	w.write(level0, "Namespace:\t%s\n", p.Namespace)
	if p.Spec.ServiceAccountName != "" {
		w.write(level0, "Service Account:\t%s\n", p.Spec.ServiceAccountName)
	}
	if p.Spec.NodeName == "" {
		w.write(level0, "Node:\t%s\n", table.None)
	} else {
		w.write(level0, "Node:\t%s/%s\n", p.Spec.NodeName, p.Status.HostIP)
	}
	if p.Status.StartTime != nil {
		w.write(level0, "Start Time:\t%s\n", formatTime(*p.Status.StartTime))
	}
	describeLabels(w, level0, "Labels", p.Labels)
	describeAnnotations(w, p.Annotations)
	if p.DeletionTimestamp != nil && p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed {
		w.write(level0, "Status:\tTerminating (lasts %s)\n", duration.HumanDuration(p.DeletionTimestamp.Sub(dc.now)))
		if p.DeletionGracePeriodSeconds != nil {
			w.write(level0, "Termination Grace Period:\t%ds\n", *p.DeletionGracePeriodSeconds)
		}
	} else {
		w.write(level0, "Status:\t%s\n", p.Status.Phase)
	}
	if p.Status.Reason != "" {
		w.write(level0, "Reason:\t%s\n", p.Status.Reason)
	}
	if p.Status.Message != "" {
		w.write(level0, "Message:\t%s\n", p.Status.Message)
	}
	w.write(level0, "IP:\t%s\n", p.Status.PodIP)
	ips := p.Status.PodIPs
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = []api.PodIP{{IP: p.Status.PodIP}}
	}
	if len(ips) == 0 {
		w.write(level0, "IPs:\t%s\n", table.None)
	} else {
		w.write(level0, "IPs:\n")
		for _, ip := range ips {
			w.write(level1, "IP:\t%s\n", ip.IP)
		}
	}
	describeControlledBy(w, p)
	if len(p.Spec.InitContainers) > 0 {
		describeContainers(w, "Init Containers", p.Spec.InitContainers, p.Status.InitContainerStatuses, p, "")
	}
	describeContainers(w, "Containers", p.Spec.Containers, p.Status.ContainerStatuses, p, "")
	if len(p.Status.Conditions) > 0 {
		w.write(level0, "Conditions:\n")
		w.write(level1, "Type\tStatus\n")
		for _, c := range p.Status.Conditions {
			w.write(level1, "%s \t%s \n", c.Type, c.Status)
		}
	}
	describeVolumes(w, p.Spec.Volumes, "")
	w.write(level0, "QoS Class:\t%s\n", qosClass(p))
	describeLabels(w, level0, "Node-Selectors", p.Spec.NodeSelector)
	describeTolerations(w, "", p.Spec.Tolerations)
}

// describePodTemplate describes the pod a workload creates, indented
// under `Pod Template:` as kubectl does.
func describePodTemplate(w *describeWriter, t *api.PodTemplateSpec) {
	w.write(level0, "Pod Template:\n")
	if t == nil {
		w.write(level1, "<unset>\n")
		return
	}
	describeLabels(w, level1, "Labels", t.Labels)
	if len(t.Annotations) > 0 {
		w.write(level1, "Annotations:\t")
		for i, k := range sortedKeys(t.Annotations) {
			if i > 0 {
				w.write(level1, "\t")
			}
			w.write(level0, "%s: %s\n", k, t.Annotations[k])
		}
	}
	if t.Spec.ServiceAccountName != "" {
		w.write(level1, "Service Account:\t%s\n", t.Spec.ServiceAccountName)
	}
	if len(t.Spec.InitContainers) > 0 {
		describeContainers(w, "Init Containers", t.Spec.InitContainers, nil, nil, "  ")
	}
	describeContainers(w, "Containers", t.Spec.Containers, nil, nil, "  ")
	describeVolumes(w, t.Spec.Volumes, "  ")
	describeLabels(w, level1, "Node-Selectors", t.Spec.NodeSelector)
	describeTolerations(w, "  ", t.Spec.Tolerations)
}

// describeContainers prints containers with their observed statuses (nil
// for a template). pod resolves downward-API variables; space indents a
// template's containers one more step, as kubectl does.
func describeContainers(w *describeWriter, title string, cs []api.Container, statuses []api.ContainerStatus, pod *api.Pod, space string) {
	if len(cs) == 0 {
		w.write(level0, "%s%s: %s\n", space, title, table.None)
		return
	}
	w.write(level0, "%s%s:\n", space, title)
	byName := map[string]api.ContainerStatus{}
	for _, s := range statuses {
		byName[s.Name] = s
	}
	nameIndent := ""
	if space != "" {
		nameIndent = " "
	}
	for _, c := range cs {
		status, ok := byName[c.Name]
		w.write(level1, "%s%s:\n", nameIndent, c.Name)
		if ok {
			w.write(level2, "Container ID:\t%s\n", status.ContainerID)
		}
		w.write(level2, "Image:\t%s\n", c.Image)
		if ok {
			w.write(level2, "Image ID:\t%s\n", status.ImageID)
		}
		ports, hostPorts := containerPorts(c.Ports)
		if len(c.Ports) > 1 {
			w.write(level2, "Ports:\t%s\n", ports)
			w.write(level2, "Host Ports:\t%s\n", hostPorts)
		} else {
			w.write(level2, "Port:\t%s\n", orNone(ports))
			w.write(level2, "Host Port:\t%s\n", orNone(hostPorts))
		}
		describeCommand(w, "Command", c.Command)
		describeCommand(w, "Args", c.Args)
		if ok {
			describeContainerState(w, "State", status.State)
			if status.LastState.Terminated != nil {
				describeContainerState(w, "Last State", status.LastState)
			}
			w.write(level2, "Ready:\t%s\n", boolWord(status.Ready))
			w.write(level2, "Restart Count:\t%d\n", status.RestartCount)
		}
		describeResources(w, "Limits", c.Resources.Limits)
		describeResources(w, "Requests", c.Resources.Requests)
		describeProbe(w, "Liveness", c.LivenessProbe)
		describeProbe(w, "Readiness", c.ReadinessProbe)
		describeProbe(w, "Startup", c.StartupProbe)
		if len(c.EnvFrom) > 0 {
			describeEnvFrom(w, c.EnvFrom)
		}
		describeEnv(w, c.Env, pod)
		describeMounts(w, c.VolumeMounts)
	}
}

func containerPorts(ports []api.ContainerPort) (container, host string) {
	var cs, hs []string
	for _, p := range ports {
		cs = append(cs, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
		hs = append(hs, fmt.Sprintf("%d/%s", p.HostPort, p.Protocol))
	}
	return strings.Join(cs, ", "), strings.Join(hs, ", ")
}

func describeCommand(w *describeWriter, title string, args []string) {
	if len(args) == 0 {
		return
	}
	w.write(level2, "%s:\n", title)
	for _, a := range args {
		for _, line := range strings.Split(a, "\n") {
			w.write(level3, "%s\n", line)
		}
	}
}

// describeContainerState prints one container state: Running since,
// Waiting with its reason, or Terminated with reason, exit code and times.
func describeContainerState(w *describeWriter, title string, s api.ContainerState) {
	switch {
	case s.Running != nil:
		w.write(level2, "%s:\tRunning\n", title)
		w.write(level3, "Started:\t%s\n", formatTime(s.Running.StartedAt))
	case s.Terminated != nil:
		t := s.Terminated
		w.write(level2, "%s:\tTerminated\n", title)
		if t.Reason != "" {
			w.write(level3, "Reason:\t%s\n", t.Reason)
		}
		if t.Message != "" {
			w.write(level3, "Message:\t%s\n", t.Message)
		}
		w.write(level3, "Exit Code:\t%d\n", t.ExitCode)
		if t.Signal > 0 {
			w.write(level3, "Signal:\t%d\n", t.Signal)
		}
		w.write(level3, "Started:\t%s\n", formatTime(t.StartedAt))
		w.write(level3, "Finished:\t%s\n", formatTime(t.FinishedAt))
	default:
		w.write(level2, "%s:\tWaiting\n", title)
		if s.Waiting != nil && s.Waiting.Reason != "" {
			w.write(level3, "Reason:\t%s\n", s.Waiting.Reason)
		}
	}
}

func describeResources(w *describeWriter, title string, rl api.ResourceList) {
	if len(rl) == 0 {
		return
	}
	w.write(level2, "%s:\n", title)
	for _, name := range sortedResourceNames(rl) {
		q := rl[name]
		w.write(level3, "%s:\t%s\n", name, q.String())
	}
}

func sortedResourceNames(rl api.ResourceList) []api.ResourceName {
	names := make([]api.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// describeProbe prints a probe on one line, as kubectl does:
// `http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3`.
func describeProbe(w *describeWriter, title string, p *api.Probe) {
	if p == nil {
		return
	}
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	var action string
	switch {
	case p.Exec != nil:
		action = fmt.Sprintf("exec %v", p.Exec.Command)
	case p.HTTPGet != nil:
		u := url.URL{Scheme: strings.ToLower(string(p.HTTPGet.Scheme)), Path: p.HTTPGet.Path, Host: p.HTTPGet.Host}
		if port := p.HTTPGet.Port.String(); port != "" {
			u.Host = net.JoinHostPort(p.HTTPGet.Host, port)
		}
		action = "http-get " + u.String()
	case p.TCPSocket != nil:
		action = fmt.Sprintf("tcp-socket %s:%s", p.TCPSocket.Host, p.TCPSocket.Port.String())
	default:
		action = "unknown"
	}
	w.write(level2, "%s:\t%s %s\n", title, action, attrs)
}

func describeEnvFrom(w *describeWriter, from []api.EnvFromSource) {
	w.write(level2, "Environment Variables from:\n")
	for _, e := range from {
		var kind, name string
		optional := false
		switch {
		case e.ConfigMapRef != nil:
			kind, name = "ConfigMap", e.ConfigMapRef.Name
			optional = e.ConfigMapRef.Optional != nil && *e.ConfigMapRef.Optional
		case e.SecretRef != nil:
			kind, name = "Secret", e.SecretRef.Name
			optional = e.SecretRef.Optional != nil && *e.SecretRef.Optional
		}
		if e.Prefix == "" {
			w.write(level3, "%s\t%s\tOptional: %t\n", name, kind, optional)
		} else {
			w.write(level3, "%s\t%s with prefix '%s'\tOptional: %t\n", name, kind, e.Prefix, optional)
		}
	}
}

// describeEnv prints a container's variables; a downward-API variable
// shows its value where the pod's metadata gives it, and where it comes
// from, and a ConfigMap or Secret key says which, never the secret itself.
func describeEnv(w *describeWriter, env []api.EnvVar, pod *api.Pod) {
	if len(env) == 0 {
		w.write(level2, "Environment:\t%s\n", table.None)
		return
	}
	w.write(level2, "Environment:\n")
	for _, e := range env {
		switch {
		case e.ValueFrom == nil:
			for i, line := range strings.Split(e.Value, "\n") {
				if i == 0 {
					w.write(level3, "%s:\t%s\n", e.Name, line)
				} else {
					w.write(level3, "\t%s\n", line)
				}
			}
		case e.ValueFrom.FieldRef != nil:
			ref := e.ValueFrom.FieldRef
			version := ref.APIVersion
			if version == "" {
				version = "v1"
			}
			w.write(level3, "%s:\t%s (%s:%s)\n", e.Name, downwardValue(pod, ref.FieldPath), version, ref.FieldPath)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			w.write(level3, "%s:\t<set to the key '%s' in secret '%s'>\tOptional: %t\n", e.Name, ref.Key, ref.Name, ref.Optional != nil && *ref.Optional)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			w.write(level3, "%s:\t<set to the key '%s' of config map '%s'>\tOptional: %t\n", e.Name, ref.Key, ref.Name, ref.Optional != nil && *ref.Optional)
		}
	}
}

// downwardValue resolves the metadata fields kubectl resolves; the rest
// are known only to the agent that starts the container.
func downwardValue(pod *api.Pod, path string) string {
	if pod == nil {
		return ""
	}
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	}
	return ""
}

func describeMounts(w *describeWriter, mounts []api.VolumeMount) {
	if len(mounts) == 0 {
		w.write(level2, "Mounts:\t%s\n", table.None)
		return
	}
	w.write(level2, "Mounts:\n")
	sorted := slices.Clone(mounts)
	slices.SortStableFunc(sorted, func(a, b api.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	for _, m := range sorted {
		flags := []string{"rw"}
		if m.ReadOnly {
			flags[0] = "ro"
		}
		if m.SubPath != "" {
			flags = append(flags, fmt.Sprintf("path=%q", m.SubPath))
		}
		w.write(level3, "%s from %s (%s)\n", m.MountPath, m.Name, strings.Join(flags, ","))
	}
}

// describeVolumes prints each volume with its type, as kubectl names them.
func describeVolumes(w *describeWriter, volumes []api.Volume, space string) {
	if len(volumes) == 0 {
		w.write(level0, "%sVolumes:\t%s\n", space, table.None)
		return
	}
	w.write(level0, "%sVolumes:\n", space)
	nameIndent := ""
	if space != "" {
		nameIndent = " "
	}
	for _, v := range volumes {
		w.write(level1, "%s%s:\n", nameIndent, v.Name)
		switch {
		case v.HostPath != nil:
			hostPathType := table.None
			if v.HostPath.Type != nil {
				hostPathType = string(*v.HostPath.Type)
			}
			w.write(level2, "Type:\tHostPath (bare host directory volume)\n")
			w.write(level2, "Path:\t%s\n", v.HostPath.Path)
			w.write(level2, "HostPathType:\t%s\n", hostPathType)
		case v.EmptyDir != nil:
			limit := "<unset>"
			if v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Cmp(resource.Quantity{}) > 0 {
				limit = v.EmptyDir.SizeLimit.String()
			}
			w.write(level2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n")
			w.write(level2, "Medium:\t%s\n", v.EmptyDir.Medium)
			w.write(level2, "SizeLimit:\t%s\n", limit)
		case v.PersistentVolumeClaim != nil:
			w.write(level2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)\n")
			w.write(level2, "ClaimName:\t%s\n", v.PersistentVolumeClaim.ClaimName)
			w.write(level2, "ReadOnly:\t%t\n", v.PersistentVolumeClaim.ReadOnly)
		case v.ConfigMap != nil:
			w.write(level2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n")
			w.write(level2, "Name:\t%s\n", v.ConfigMap.Name)
			w.write(level2, "Optional:\t%t\n", v.ConfigMap.Optional != nil && *v.ConfigMap.Optional)
		case v.Secret != nil:
			w.write(level2, "Type:\tSecret (a volume populated by a Secret)\n")
			w.write(level2, "SecretName:\t%s\n", v.Secret.SecretName)
			w.write(level2, "Optional:\t%t\n", v.Secret.Optional != nil && *v.Secret.Optional)
		default:
			w.write(level2, "<unknown>\n")
		}
	}
}

// describeTolerations prints tolerations as kubectl does:
// `node.kubernetes.io/unreachable:NoExecute op=Exists for 300s`.
func describeTolerations(w *describeWriter, indent string, ts []api.Toleration) {
	w.write(level0, "%sTolerations:\t", indent)
	if len(ts) == 0 {
		w.write(level0, "%s\n", table.None)
		return
	}
	for i, t := range ts {
		if i > 0 {
			w.write(level0, "%s\t", indent)
		}
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		if t.Operator == api.TolerationOpExists && t.Value == "" {
			if s != "" {
				s += " "
			}
			s += "op=Exists"
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		w.write(level0, "%s\n", s)
	}
}

// qosClass is the pod's QoS class as reported, else as Kubernetes
// computes it: Guaranteed when every container's cpu and memory limits
// equal its requests, BestEffort when none sets any, else Burstable.
func qosClass(p *api.Pod) api.QOSClass {
	if p.Status.QOSClass != "" {
		return p.Status.QOSClass
	}
	return api.PodQOSClass(p)
}
