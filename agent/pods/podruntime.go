package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// Image pull policies and the waiting reasons of a container whose image
// is not there, as the kubelet names them.
const (
	pullAlways       = "Always"
	pullIfNotPresent = "IfNotPresent"
	pullNever        = "Never"

	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"

	// Events of image pulls.
	ReasonPulling = "Pulling"
	ReasonPulled  = "Pulled"
)

// Back-off of image pulls: the kubelet's, 10s doubling to 5m, per
// container.
const (
	pullBackOffInitial = 10 * time.Second
	pullBackOffMax     = 5 * time.Minute
)

// serviceAccountMountPath is where a pod's containers find its token,
// namespace and ca.crt, as in Kubernetes.
const serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// Where a container writes its termination message unless it says, and
// the policy that takes the log's tail when it writes none, as in
// Kubernetes.
const (
	defaultTerminationMessagePath           = "/dev/termination-log"
	terminationMessageFallbackToLogsOnError = "FallbackToLogsOnError"
)

// clusterDomain is the cluster's DNS zone.
const clusterDomain = "cluster.local"

// podRuntime is the runtime as a PodRuntime; nil for the exec runtime.
func (m *Manager) podRuntime() runtime.PodRuntime {
	pr, _ := m.o.Runtime.(runtime.PodRuntime)
	return pr
}

// pullPolicy is the container's imagePullPolicy, defaulted from the tag as
// Kubernetes defaults it: Always for :latest or no tag, else IfNotPresent.
func pullPolicy(c *api.Container) string {
	if c.ImagePullPolicy != "" {
		return string(c.ImagePullPolicy)
	}
	return string(api.DefaultPullPolicy(c.Image))
}

// imageContainer completes rc with what a PodRuntime runs: the image, the
// command and args apart (the image's entrypoint fills what is missing),
// the volumes as mounts and the pod's sandbox.
func (w *podWorker) imageContainer(pod *api.Pod, c *api.Container, vars map[string]string, rc *runtime.Container) error {
	if c.Image == "" {
		return configErrorf("container %s has no image: this node runs images (--runtime %s)", c.Name, w.m.o.RuntimeName)
	}
	expand := func(in []string) []string {
		if len(in) == 0 {
			return nil
		}
		out := make([]string, len(in))
		for i, a := range in {
			out[i] = expandVars(a, vars)
		}
		return out
	}
	rc.Argv = nil
	rc.Image = &runtime.Image{Ref: c.Image, PullPolicy: pullPolicy(c), Command: expand(c.Command), Args: expand(c.Args)}
	mounts, err := w.mounts(pod, c)
	if err != nil {
		return err
	}
	rc.Mounts = mounts
	if rc.Pod, err = w.sandboxSpec(pod); err != nil {
		return err
	}
	rc.Security = containerSecurity(pod, c)
	return w.terminationMessageFile(pod, c, rc)
}

// terminationMessageFile gives rc, as the kubelet does, an empty file of
// the host at the container's terminationMessagePath (Kubernetes'
// default /dev/termination-log), writable by whatever user it runs as;
// the runtime reads it back into the status once the run has exited.
func (w *podWorker) terminationMessageFile(pod *api.Pod, c *api.Container, rc *runtime.Container) error {
	path := c.TerminationMessagePath
	if path == "" {
		path = defaultTerminationMessagePath
	}
	dir := filepath.Join(podDir(w.m.o.DataDir, string(pod.UID)), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("container %s: termination message: %w", c.Name, err)
	}
	host := filepath.Join(dir, strconv.Itoa(rc.ID.Attempt))
	if err := os.WriteFile(host, nil, 0o666); err != nil {
		return fmt.Errorf("container %s: termination message: %w", c.Name, err)
	}
	if err := os.Chmod(host, 0o666); err != nil {
		return fmt.Errorf("container %s: termination message: %w", c.Name, err)
	}
	rc.Mounts = append(rc.Mounts, runtime.Mount{HostPath: host, ContainerPath: path})
	rc.TerminationMessagePath = path
	rc.TerminationMessageFallbackToLogs = c.TerminationMessagePolicy == terminationMessageFallbackToLogsOnError
	return nil
}

// mounts are c's volume mounts on the host paths the agent set up, with
// subPath and readOnly, and the service-account directory when the pod
// has a token.
func (w *podWorker) mounts(pod *api.Pod, c *api.Container) ([]runtime.Mount, error) {
	var out []runtime.Mount
	saMounted := false
	for _, vm := range c.VolumeMounts {
		host, ok := w.volumes[vm.Name]
		if !ok {
			return nil, configErrorf("container %s: volumeMounts: volume %q is not a volume of the pod", c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			sub := filepath.Clean(vm.SubPath)
			if filepath.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") {
				return nil, configErrorf("container %s: volumeMounts %s: subPath %q leaves the volume", c.Name, vm.MountPath, vm.SubPath)
			}
			host = filepath.Join(host, sub)
			if _, err := os.Lstat(host); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(host, 0o755); err != nil {
					return nil, fmt.Errorf("container %s: subPath %q: %w", c.Name, vm.SubPath, err)
				}
			}
		}
		if filepath.Clean(vm.MountPath) == serviceAccountMountPath {
			saMounted = true
		}
		out = append(out, runtime.Mount{HostPath: host, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	if !saMounted && serviceAccountTokenFile(w.m.o.DataDir, pod) != "" {
		out = append(out, runtime.Mount{HostPath: serviceAccountDir(w.m.o.DataDir, string(pod.UID)), ContainerPath: serviceAccountMountPath, ReadOnly: true})
	}
	return out, nil
}

// sandboxSpec is the pod's sandbox: its host name, its resolv.conf and the
// host ports of its containers.
func (w *podWorker) sandboxSpec(pod *api.Pod) (*runtime.Pod, error) {
	server := w.m.nameServer()
	if server == "" && wantsClusterDNS(pod) && !w.dnsWarned {
		// The kubelet's: the pod gets the node's resolv.conf, and says so.
		w.dnsWarned = true
		w.podEvent(pod, api.EventTypeWarning, ReasonMissingClusterDNS, missingClusterDNS(pod))
	}
	dns, err := podDNS(pod, server, func() (*runtime.DNS, error) { return readResolvConf(cmp.Or(w.m.o.ResolvConf, DefaultResolvConf)) })
	if err != nil {
		return nil, err
	}
	p := &runtime.Pod{
		UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name,
		Hostname: pod.Name,
		LogDir:   filepath.Join(podDir(w.m.o.DataDir, string(pod.UID)), "logs"),
		DNS:      dns,
		// The sandbox must allow what its containers do.
		Privileged:  podPrivileged(pod),
		Seccomp:     podSeccomp(pod),
		HostNetwork: pod.Spec.HostNetwork,
		Sysctls:     podSysctls(pod),
		Hosts:       &runtime.Hosts{Path: filepath.Join(podDir(w.m.o.DataDir, string(pod.UID)), "etc-hosts")},
	}
	if pod.Spec.Hostname != "" {
		p.Hostname = pod.Spec.Hostname
	}
	if pod.Spec.Subdomain != "" {
		p.Hosts.Domain = pod.Spec.Subdomain + "." + pod.Namespace + ".svc." + clusterDomain
	}
	for _, a := range pod.Spec.HostAliases {
		p.Hosts.Aliases = append(p.Hosts.Aliases, runtime.HostAlias{IP: a.IP, Hostnames: a.Hostnames})
	}
	if pod.Spec.HostNetwork {
		// The kubelet's: a pod of the node's network sees the node's file.
		b, err := os.ReadFile(cmp.Or(w.m.o.HostsFile, DefaultHostsFile))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("hosts file: %w", err)
		}
		p.Hosts.NodeHosts = b
	}
	for _, c := range append(append([]api.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, pt := range c.Ports {
			p.Ports = append(p.Ports, runtime.Port{Protocol: string(pt.Protocol), ContainerPort: pt.ContainerPort, HostPort: pt.HostPort})
		}
	}
	return p, nil
}

// pullImage makes rc's image present by its pull policy, with the
// kubelet's events, and its back-off after a failure, during which the
// container waits with reason ImagePullBackOff. It returns false, and
// when to look again, while the image is not there.
func (w *podWorker) pullImage(ctx context.Context, pod *api.Pod, c *api.Container, cs *containerRuntimeState, rc *runtime.Container) (time.Time, bool) {
	pr := w.m.podRuntime()
	now := w.m.o.Clock.Now()
	ref := rc.Image.Ref
	if !cs.pullRetryAt.IsZero() && now.Before(cs.pullRetryAt) {
		if cs.waitReason != reasonImagePullBackOff {
			w.podEvent(pod, api.EventTypeNormal, ReasonBackOff, fmt.Sprintf("Back-off pulling image %q", ref))
			w.podEvent(pod, api.EventTypeWarning, ReasonFailed, "Error: "+reasonImagePullBackOff)
		}
		cs.waitReason = reasonImagePullBackOff
		cs.waitMessage = fmt.Sprintf("Back-off pulling image %q: %s", ref, cs.pullErr)
		return cs.pullRetryAt, false
	}
	present := false
	if rc.Image.PullPolicy != pullAlways {
		var err error
		present, err = pr.HasImage(ctx, ref)
		if err != nil {
			return w.pullFailed(pod, cs, ref, &runtime.ImagePullError{Reason: reasonErrImagePull, Err: err}), false
		}
	}
	if present {
		if cs.pullBackOff > 0 || !cs.pullSeen {
			w.podEvent(pod, api.EventTypeNormal, ReasonPulled, fmt.Sprintf("Container image %q already present on machine", ref))
		}
		cs.pullBackOff, cs.pullRetryAt, cs.pullSeen = 0, time.Time{}, true
		return time.Time{}, true
	}
	if rc.Image.PullPolicy != pullNever {
		w.podEvent(pod, api.EventTypeNormal, ReasonPulling, fmt.Sprintf("Pulling image %q", ref))
	}
	start := w.m.o.Clock.Now()
	auths, warning := pullAuths(ctx, w.m.o.Refs, pod, ref)
	if warning != "" {
		w.podEvent(pod, api.EventTypeWarning, ReasonFailedPullSecret, warning)
	}
	rc.Image.Auths = auths
	if _, err := pr.PullImage(ctx, rc); err != nil {
		return w.pullFailed(pod, cs, ref, err), false
	}
	w.podEvent(pod, api.EventTypeNormal, ReasonPulled, fmt.Sprintf("Successfully pulled image %q in %s", ref, w.m.o.Clock.Since(start).Round(time.Millisecond)))
	cs.pullBackOff, cs.pullRetryAt, cs.pullSeen = 0, time.Time{}, true
	return time.Time{}, true
}

// pullFailed records a failed pull: the container waits with the reason
// (ErrImagePull) until the back-off has passed.
func (w *podWorker) pullFailed(pod *api.Pod, cs *containerRuntimeState, ref string, err error) time.Time {
	now := w.m.o.Clock.Now()
	reason := reasonErrImagePull
	var pe *runtime.ImagePullError
	if errors.As(err, &pe) && pe.Reason != "" {
		reason = pe.Reason
	}
	if cs.pullBackOff == 0 {
		cs.pullBackOff = pullBackOffInitial
	} else {
		cs.pullBackOff = min(2*cs.pullBackOff, pullBackOffMax)
	}
	cs.pullRetryAt = now.Add(cs.pullBackOff)
	cs.pullErr = err.Error()
	cs.waitReason, cs.waitMessage = reason, err.Error()
	w.podEvent(pod, api.EventTypeWarning, ReasonFailed, err.Error())
	w.podEvent(pod, api.EventTypeWarning, ReasonFailed, "Error: "+reason)
	// Look again at once: the next sync reports ImagePullBackOff.
	return now
}

// podIPs are the pod's own addresses under a PodRuntime, remembered once
// seen so that a stopped sandbox's pod keeps reporting them; nil under the
// exec runtime, where the pod has the node's.
func (w *podWorker) podIPs() []string {
	pr := w.m.podRuntime()
	if pr == nil {
		return nil
	}
	if ips := pr.PodIPs(string(w.uid)); len(ips) > 0 {
		w.mu.Lock()
		w.ips = ips
		w.mu.Unlock()
		return ips
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ips
}

// knownIPs are the pod addresses the worker last saw.
func (w *podWorker) knownIPs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ips
}
