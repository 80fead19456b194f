package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/agent/runtime"
)

// Start implements runtime.Runtime: it runs the pod's sandbox if it has
// none ready, then creates and starts the container in it. The image must
// be present (PullImage).
func (r *Runtime) Start(ctx context.Context, c *runtime.Container) (runtime.Status, error) {
	fail := runtime.Status{ID: c.ID}
	if c.Image == nil || c.Pod == nil {
		return fail, fmt.Errorf("cri: container %s: no image or pod", c.ID)
	}
	if err := r.verifyNonRoot(ctx, c); err != nil {
		return fail, err
	}
	sb, err := r.sandbox(ctx, c.Pod)
	if err != nil {
		return fail, err
	}
	cfg := containerConfig(c)
	if err := addHosts(cfg, c.Pod, sb.ips); err != nil {
		return fail, fmt.Errorf("cri: container %s: %w", c.ID, err)
	}
	criID, err := r.rs.CreateContainer(ctx, sb.id, cfg, sb.config)
	if err != nil {
		return fail, fmt.Errorf("cri: create container %s: %w", c.ID, err)
	}
	if err := r.rs.StartContainer(ctx, criID); err != nil {
		rn, rerr := r.read(ctx, c.ID, criID)
		if rerr == nil && rn.status.State == runtime.StateExited {
			rn.status.Reason, rn.status.ExitCode = "StartError", 128
			rn.status.Message = err.Error()
			return rn.status, fmt.Errorf("cri: start container %s: %w", c.ID, err)
		}
		return fail, fmt.Errorf("cri: start container %s: %w", c.ID, err)
	}
	rn, err := r.read(ctx, c.ID, criID)
	if err != nil {
		return fail, err
	}
	return rn.status, nil
}

// containerConfig is the CRI container of c, as the kubelet makes it.
func containerConfig(c *runtime.Container) *runtimeapi.ContainerConfig {
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.ID.Name, Attempt: uint32(c.ID.Attempt)},
		Image:       &runtimeapi.ImageSpec{Image: c.Image.Ref, UserSpecifiedImage: c.Image.Ref},
		Command:     c.Image.Command,
		Args:        c.Image.Args,
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(c),
		Annotations: map[string]string{annotationAttempt: strconv.Itoa(c.ID.Attempt)},
		LogPath:     filepath.Join(c.ID.Name, strconv.Itoa(c.ID.Attempt)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{OomScoreAdj: int64(c.OOMScoreAdj)},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: namespaces(c.Pod),
			},
		},
	}
	if c.TerminationMessagePath != "" {
		cfg.Annotations[annotationTerminationMessagePath] = c.TerminationMessagePath
		if c.TerminationMessageFallbackToLogs {
			cfg.Annotations[annotationTerminationMessagePolicy] = policyFallbackToLogsOnError
		}
	}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	for _, m := range c.Mounts {
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, Readonly: m.ReadOnly})
	}
	res := cfg.Linux.Resources
	if l := c.Limits.MilliCPU; l > 0 {
		// The kubelet's quota: the limit over a 100ms period.
		res.CpuPeriod = 100000
		res.CpuQuota = l * 100000 / 1000
		res.CpuShares = max(2, l*1024/1000)
	}
	if c.Limits.MemoryBytes > 0 {
		res.MemoryLimitInBytes = c.Limits.MemoryBytes
	}
	sc := cfg.Linux.SecurityContext
	if c.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *c.RunAsUser}
	}
	if c.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *c.RunAsGroup}
	}
	if s := c.Security; s != nil {
		sc.SupplementalGroups = s.SupplementalGroups
		sc.ReadonlyRootfs = s.ReadOnlyRootfs
		sc.Privileged = s.Privileged
		// The kubelet's: a privileged container may always escalate.
		sc.NoNewPrivs = s.NoNewPrivs && !s.Privileged
		if len(s.CapAdd) > 0 || len(s.CapDrop) > 0 {
			sc.Capabilities = &runtimeapi.Capability{AddCapabilities: s.CapAdd, DropCapabilities: s.CapDrop}
		}
		sc.Seccomp = seccompProfile(s.Seccomp, s.Privileged)
	} else {
		sc.Seccomp = seccompProfile("", false)
	}
	return cfg
}

// seccompProfile is the CRI's profile of a seccompProfile type, as the
// kubelet sends it: unconfined unless RuntimeDefault, and always for a
// privileged container.
func seccompProfile(typ string, privileged bool) *runtimeapi.SecurityProfile {
	if typ == seccompRuntimeDefault && !privileged {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// seccompRuntimeDefault is the seccompProfile type of the runtime's own
// filter.
const seccompRuntimeDefault = "RuntimeDefault"

// verifyNonRoot refuses, with the kubelet's messages, to start a
// container with runAsNonRoot as root: its runAsUser 0, or an image whose
// user is root (or unset) or a name that cannot be checked.
func (r *Runtime) verifyNonRoot(ctx context.Context, c *runtime.Container) error {
	if c.Security == nil || !c.Security.RunAsNonRoot {
		return nil
	}
	pod := fmt.Sprintf("%s_%s(%s)", c.Pod.Name, c.Pod.Namespace, c.Pod.UID)
	if c.RunAsUser != nil {
		if *c.RunAsUser == 0 {
			return &runtime.ConfigError{Err: fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod, c.ID.Name)}
		}
		return nil
	}
	st, err := r.is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image.Ref}, false)
	if err != nil {
		return fmt.Errorf("cri: image status %q: %w", c.Image.Ref, err)
	}
	im := st.GetImage()
	switch {
	case im != nil && im.Uid != nil && im.Uid.Value != 0:
		return nil
	case im != nil && im.Uid == nil && im.Username != "":
		return &runtime.ConfigError{Err: fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", im.Username, pod, c.ID.Name)}
	}
	return &runtime.ConfigError{Err: fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod, c.ID.Name)}
}

// namespaces are the namespaces of p's sandbox and its containers: the
// pod's own network, or the node's with hostNetwork; IPC shared in the
// pod; a process namespace of each container's own.
func namespaces(p *runtime.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if p != nil && p.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

// sandboxConfig is the CRI sandbox of p, as the kubelet makes it.
func sandboxConfig(p *runtime.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: p.Name, Uid: p.UID, Namespace: p.Namespace, Attempt: attempt},
		LogDirectory: p.LogDir,
		Labels:       podLabels(p),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaces(p),
			},
		},
	}
	if !p.HostNetwork {
		// The kubelet's: a pod of the node's network has the node's name.
		cfg.Hostname = p.Hostname
	}
	sc := cfg.Linux.SecurityContext
	sc.Privileged = p.Privileged
	sc.Seccomp = seccompProfile(p.Seccomp, false)
	if len(p.Sysctls) > 0 {
		cfg.Linux.Sysctls = p.Sysctls
	}
	if p.DNS != nil {
		cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: p.DNS.Servers, Searches: p.DNS.Searches, Options: p.DNS.Options}
	}
	for _, pt := range p.Ports {
		if pt.HostPort == 0 || p.HostNetwork {
			continue
		}
		proto := runtimeapi.Protocol_TCP
		switch strings.ToUpper(pt.Protocol) {
		case "UDP":
			proto = runtimeapi.Protocol_UDP
		case "SCTP":
			proto = runtimeapi.Protocol_SCTP
		}
		cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: pt.ContainerPort, HostPort: pt.HostPort, HostIp: pt.HostIP})
	}
	return cfg
}

func (r *Runtime) podLock(uid string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.podLocks[uid]
	if l == nil {
		l = &sync.Mutex{}
		r.podLocks[uid] = l
	}
	return l
}

// sandbox is the pod's ready sandbox: the one it has (found again by
// ListPodSandbox after a restart), or a new one.
func (r *Runtime) sandbox(ctx context.Context, p *runtime.Pod) (*sandbox, error) {
	l := r.podLock(p.UID)
	l.Lock()
	defer l.Unlock()
	r.mu.Lock()
	sb := r.pods[p.UID]
	r.mu.Unlock()
	if sb != nil {
		st, err := r.rs.PodSandboxStatus(ctx, sb.id, false)
		if err == nil && st.GetStatus().GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			return sb, nil
		}
	}
	all, err := r.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManaged: "true", labelPodUID: p.UID}})
	if err != nil {
		return nil, fmt.Errorf("cri: list sandboxes of pod %s: %w", p.UID, err)
	}
	var attempt uint32
	for _, s := range all {
		if s.GetMetadata().GetAttempt() >= attempt {
			attempt = s.GetMetadata().GetAttempt() + 1
		}
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			sb = &sandbox{id: s.Id, config: sandboxConfig(p, s.GetMetadata().GetAttempt())}
			sb.ips = r.sandboxIPs(ctx, s.Id)
			r.mu.Lock()
			r.pods[p.UID] = sb
			r.mu.Unlock()
			return sb, nil
		}
	}
	cfg := sandboxConfig(p, attempt)
	id, err := r.rs.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		return nil, fmt.Errorf("cri: run sandbox of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	sb = &sandbox{id: id, config: cfg, ips: r.sandboxIPs(ctx, id)}
	r.mu.Lock()
	r.pods[p.UID] = sb
	r.mu.Unlock()
	return sb, nil
}

func (r *Runtime) sandboxIPs(ctx context.Context, id string) []string {
	st, err := r.rs.PodSandboxStatus(ctx, id, false)
	if err != nil {
		return nil
	}
	n := st.GetStatus().GetNetwork()
	if n == nil || n.Ip == "" {
		return nil
	}
	ips := []string{n.Ip}
	for _, ip := range n.AdditionalIps {
		ips = append(ips, ip.Ip)
	}
	return ips
}

// PodIPs implements runtime.PodRuntime. After an agent restart the pod's
// sandbox is looked up once.
func (r *Runtime) PodIPs(podUID string) []string {
	r.mu.Lock()
	sb := r.pods[podUID]
	r.mu.Unlock()
	if sb != nil {
		return sb.ips
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
	defer cancel()
	all, err := r.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{labelManaged: "true", labelPodUID: podUID},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil || len(all) == 0 {
		return nil
	}
	s := all[len(all)-1]
	sb = &sandbox{id: s.Id, ips: r.sandboxIPs(ctx, s.Id)}
	r.mu.Lock()
	if r.pods[podUID] == nil {
		r.pods[podUID] = sb
	}
	r.mu.Unlock()
	return sb.ips
}

// StopPod implements runtime.PodRuntime.
func (r *Runtime) StopPod(ctx context.Context, podUID string) error {
	return r.eachSandbox(ctx, podUID, false)
}

// RemovePod implements runtime.PodRuntime.
func (r *Runtime) RemovePod(ctx context.Context, podUID string) error {
	return r.eachSandbox(ctx, podUID, true)
}

func (r *Runtime) eachSandbox(ctx context.Context, podUID string, remove bool) error {
	l := r.podLock(podUID)
	l.Lock()
	defer l.Unlock()
	all, err := r.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManaged: "true", labelPodUID: podUID}})
	if err != nil {
		return fmt.Errorf("cri: list sandboxes of pod %s: %w", podUID, err)
	}
	var errs []error
	for _, s := range all {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			if err := r.rs.StopPodSandbox(ctx, s.Id); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("cri: stop sandbox of pod %s: %w", podUID, err))
				continue
			}
		}
		if remove {
			if err := r.rs.RemovePodSandbox(ctx, s.Id); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("cri: remove sandbox of pod %s: %w", podUID, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.pods, podUID)
	if remove {
		delete(r.podLocks, podUID)
	}
	r.mu.Unlock()
	return nil
}

// RemoveAll stops and removes every sandbox berth made, and so their
// containers.
func (r *Runtime) RemoveAll(ctx context.Context) error {
	all, err := r.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManaged: "true"}})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range all {
		errs = append(errs, r.rs.StopPodSandbox(ctx, s.Id), r.rs.RemovePodSandbox(ctx, s.Id))
	}
	return errors.Join(errs...)
}

// addHosts writes the pod's managed /etc/hosts, now that its sandbox has
// its addresses, and mounts it into the container, as the kubelet does
// for a pod with an address (its own, or the node's); a container that
// mounts a volume at /etc/hosts keeps it. The file is rewritten only when
// its content changes (a new sandbox's address), so the containers that
// mount it already see the same file.
func addHosts(cfg *runtimeapi.ContainerConfig, p *runtime.Pod, ips []string) error {
	if p.Hosts == nil || (!p.HostNetwork && len(ips) == 0) {
		return nil
	}
	for _, m := range cfg.Mounts {
		if filepath.Clean(m.ContainerPath) == etcHosts {
			return nil
		}
	}
	b := p.Hosts.Content(p.HostNetwork, p.Hostname, ips)
	if old, err := os.ReadFile(p.Hosts.Path); err != nil || !bytes.Equal(old, b) {
		tmp := p.Hosts.Path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, p.Hosts.Path); err != nil {
			return err
		}
	}
	cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{HostPath: p.Hosts.Path, ContainerPath: etcHosts})
	return nil
}

// etcHosts is where containers read their hosts file.
const etcHosts = "/etc/hosts"
