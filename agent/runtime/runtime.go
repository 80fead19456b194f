// Package runtime is the agent's view of a container runtime: start a
// container, stop it, ask how it is, run a command in it, and find its log.
// The agent's pod workers decide what should run; a Runtime only does it.
// The exec runtime (agent/runtime/exec) runs each container as a host
// process; the cri runtime (agent/runtime/cri) runs images in pod
// sandboxes through the Container Runtime Interface, and also implements
// PodRuntime.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound is returned for a container the runtime does not know.
var ErrNotFound = errors.New("container not found")

// ErrNoTimes is returned by Logs when timestamps or a since time are
// asked of a log whose write times were not kept (a run started by an
// older agent).
var ErrNoTimes = errors.New("the log's write times were not kept (the container was started by an older agent)")

// ID names one run of one container: the pod's UID, the container's name
// and the attempt (0 for the first start, then 1, 2, … for each restart).
// Two runs of a container never share an ID, so the logs and the exit of
// the previous run stay readable after a restart.
type ID struct {
	PodUID  string
	Name    string
	Attempt int
}

// String is the form the runtime records and reports: "uid/name/attempt".
func (id ID) String() string {
	return id.PodUID + "/" + id.Name + "/" + strconv.Itoa(id.Attempt)
}

// ParseID reads what ID.String wrote.
func ParseID(s string) (ID, error) {
	i := strings.IndexByte(s, '/')
	j := strings.LastIndexByte(s, '/')
	if i <= 0 || j <= i+1 || j == len(s)-1 {
		return ID{}, fmt.Errorf("container id %q: want uid/name/attempt", s)
	}
	n, err := strconv.Atoi(s[j+1:])
	if err != nil || n < 0 {
		return ID{}, fmt.Errorf("container id %q: bad attempt", s)
	}
	return ID{PodUID: s[:i], Name: s[i+1 : j], Attempt: n}, nil
}

// Container is everything a runtime needs to start one run of a container.
// The agent resolves it from the pod: the command line after $(VAR)
// expansion, the environment after the downward API and references, the
// volumes' host paths.
type Container struct {
	ID ID
	// PodNamespace and PodName are recorded for people reading the
	// runtime's state and for the labels of its cgroups.
	PodNamespace string
	PodName      string
	// Argv is the command line: the container's command then its args.
	Argv []string
	// Env holds KEY=VALUE pairs, the whole environment of the process.
	Env []string
	// WorkingDir is where the process starts; empty is the root directory.
	WorkingDir string
	// RunAsUser and RunAsGroup, when set, are the process's credentials.
	RunAsUser  *int64
	RunAsGroup *int64
	// Limits are enforced where the runtime can (cgroups); zero is none.
	Limits Limits
	// OOMScoreAdj is written to the process's oom_score_adj.
	OOMScoreAdj int
	// Stdin gives the process an input that attach sessions write to;
	// without it the process reads /dev/null. StdinOnce closes that input
	// when the first session that wrote to it ends.
	Stdin, StdinOnce bool
	// TTY runs the process on a terminal of its own, whose output is the
	// run's one stream.
	TTY bool
	// Image is what a PodRuntime runs: the image and the command and args
	// the pod gives, which it merges with the image's entrypoint. The
	// exec runtime runs Argv and ignores it.
	Image *Image
	// Mounts are the volumes a PodRuntime mounts into the container.
	Mounts []Mount
	// Pod is the pod's sandbox, for a PodRuntime.
	Pod *Pod
	// TerminationMessagePath is where a PodRuntime's container finds the
	// file (one of Mounts) whose content becomes the run's Message once it
	// has exited; with TerminationMessageFallbackToLogs
	// (FallbackToLogsOnError) a run that failed and wrote nothing there
	// gets its log's tail instead.
	TerminationMessagePath           string
	TerminationMessageFallbackToLogs bool
	// Security is the rest of the container's securityContext, the pod's
	// merged in, for a PodRuntime; nil is the runtime's defaults. The
	// exec runtime honours RunAsUser and RunAsGroup alone.
	Security *Security
}

// Security is a container's effective securityContext beyond its user
// and group, as the kubelet gives it to a CRI runtime.
type Security struct {
	// RunAsNonRoot refuses to start the container as user 0: its
	// RunAsUser, or else its image's user.
	RunAsNonRoot bool
	// SupplementalGroups are the pod's fsGroup and supplementalGroups.
	SupplementalGroups []int64
	ReadOnlyRootfs     bool
	Privileged         bool
	// NoNewPrivs sets no_new_privs (allowPrivilegeEscalation: false).
	NoNewPrivs bool
	// CapAdd and CapDrop are capability names as Kubernetes writes them
	// (NET_ADMIN, ALL).
	CapAdd, CapDrop []string
	// Seccomp is RuntimeDefault or Unconfined; empty is Unconfined, the
	// kubelet's default.
	Seccomp string
}

// ConfigError is a Start refused for what the pod asks, not for a fault
// of the runtime (a root image with runAsNonRoot): the container waits
// with reason CreateContainerConfigError and the start is tried again,
// as the kubelet does.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Image is a container's image and its command line before the image's
// entrypoint is merged in, as Kubernetes gives them to a CRI runtime.
type Image struct {
	// Ref is the image reference as the pod names it.
	Ref string
	// PullPolicy is Always, IfNotPresent or Never, already defaulted.
	PullPolicy string
	// Command and Args are the container's, $(VAR) expanded: an empty
	// Command runs the image's entrypoint, and an empty Command with empty
	// Args its cmd too.
	Command, Args []string
	// Auths are the registry credentials of the pod's imagePullSecrets
	// that match Ref, tried in turn; none, the image is pulled without.
	Auths []Auth
}

// Auth is a registry credential, as the CRI's AuthConfig.
type Auth struct {
	Username, Password           string
	ServerAddress                string
	IdentityToken, RegistryToken string
}

// Mount is a host path bound into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// Pod is what a PodRuntime's sandbox is made from: the pod's identity,
// its host name, its DNS and the ports it maps on the node.
type Pod struct {
	UID, Namespace, Name string
	Hostname             string
	// DNS is the pod's resolv.conf; nil keeps the runtime's default.
	DNS *DNS
	// Ports are the containers' ports; those with a HostPort are mapped
	// on the node.
	Ports []Port
	// LogDir is where the runtime writes the containers' logs.
	LogDir string
	// Privileged: a container of the pod is privileged, which the
	// sandbox must allow.
	Privileged bool
	// Seccomp is the pod's seccompProfile type, the sandbox's.
	Seccomp string
	// HostNetwork runs the sandbox in the node's network namespace: no
	// address of its own, the node's host name, no ports mapped.
	HostNetwork bool
	// Hosts, when set, is the pod's managed /etc/hosts.
	Hosts *Hosts
	// Sysctls are the pod's namespaced sysctls, set in its sandbox.
	Sysctls map[string]string
}

// DNS is a pod's resolv.conf.
type DNS struct {
	Servers, Searches, Options []string
}

// Port is a container port, and the node's port mapped to it (0: none).
type Port struct {
	Protocol      string
	ContainerPort int32
	HostPort      int32
	HostIP        string
}

// Limits are the resource limits of a container.
type Limits struct {
	// MilliCPU is the CPU limit in thousandths of a core.
	MilliCPU int64
	// MemoryBytes is the memory limit.
	MemoryBytes int64
}

// State is where a run of a container is in its life.
type State string

// States of a container run.
const (
	// StateRunning: the process is alive.
	StateRunning State = "Running"
	// StateExited: the process ended; ExitCode and FinishedAt say how.
	StateExited State = "Exited"
	// StateUnknown: the runtime lost track of the process (its record
	// survived an agent restart but the process did not report its end).
	StateUnknown State = "Unknown"
)

// Status is what the runtime knows of one run of a container.
type Status struct {
	ID         ID
	State      State
	PID        int
	StartedAt  time.Time
	FinishedAt time.Time
	// ExitCode is the exit status; a process killed by a signal reports
	// 128+signal, as a shell would, and Signal says which.
	ExitCode int
	Signal   int
	// Reason is "Completed" (exit 0), "Error", "OOMKilled",
	// "ContainerStatusUnknown" or "StartError" (the process could not be
	// started), as the kubelet reports them.
	Reason  string
	Message string
	// RuntimeID is the run's name in a PodRuntime, with the runtime's
	// scheme (containerd://ID), as Kubernetes reports a containerID;
	// empty under the exec runtime.
	RuntimeID string
}

// Stats is what a run uses.
type Stats struct {
	// MemoryBytes is the working set: the cgroup's usage less inactive
	// file pages, or the resident set of the process group without one.
	MemoryBytes int64
	// CPUNanos is the CPU time used since the run started.
	CPUNanos int64
}

// Capabilities say what a runtime can enforce on this machine; the agent
// reports them on its Node.
type Capabilities struct {
	// Version is the runtime as a Node reports it, <name>://<version>
	// ("containerd://1.6.20"); empty is the exec runtime's.
	Version string
	// Cgroup is "v2", "v1" or "" when the runtime cannot write cgroups.
	Cgroup      string
	MemoryLimit bool
	CPULimit    bool
}

// ImagePullError is a Start that failed because the image could not be
// pulled (or may not be, with PullPolicy Never): the container waits with
// reason ErrImagePull, then ImagePullBackOff, as the kubelet reports it.
type ImagePullError struct {
	// Reason is ErrImagePull, or ErrImageNeverPull for an image absent
	// with PullPolicy Never.
	Reason string
	Err    error
}

func (e *ImagePullError) Error() string { return e.Err.Error() }
func (e *ImagePullError) Unwrap() error { return e.Err }

// LogOptions select what Logs writes.
type LogOptions struct {
	// Follow keeps writing as the run writes, until ctx ends or the run
	// exits and its output has been written.
	Follow bool
	// TailLines, when positive, starts that many lines before the end.
	TailLines int64
	// Timestamps puts each line's time (RFC 3339, nanoseconds, UTC) and
	// a space in front of it, as the kubelet does.
	Timestamps bool
	// Since, when set, leaves out the lines written before it.
	Since time.Time
}

// ExecOptions are a streamed exec's command and streams. A nil stream is
// not connected: the command reads nothing, and what it writes there is
// dropped.
type ExecOptions struct {
	Argv   []string
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr is not used with TTY: a terminal has one output.
	Stderr io.Writer
	// TTY runs the command on a terminal of its own, sized from Resize.
	TTY    bool
	Resize <-chan TerminalSize
}

// AttachOptions are an attach session's streams. A nil stream is not
// carried: what the process writes there is not sent, and the session
// writes nothing to its input.
type AttachOptions struct {
	// Stdin is written to the process's input, when it has one
	// (Container.Stdin).
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr is used only for a process with stdin and no terminal: the
	// others have one output, which goes to Stdout.
	Stderr io.Writer
	// Resize sizes the process's terminal, when it has one.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width, Height uint16
}

// Runtime runs containers. Every method is safe for concurrent use.
type Runtime interface {
	// Start starts a run. Its ID must be new to the runtime. A process
	// that could not be started at all (its executable missing, say) is
	// still a run, ended before it began: Start returns its status,
	// StateExited (reason StartError, exit code 128, as the kubelet
	// reports it), with the error.
	Start(ctx context.Context, c *Container) (Status, error)
	// Stop sends SIGTERM to the run's processes, then SIGKILL once grace
	// has passed, and returns when they are gone. Stopping a run that has
	// exited does nothing.
	Stop(ctx context.Context, id ID, grace time.Duration) error
	// Status reports one run; ErrNotFound when the runtime has no record.
	Status(ctx context.Context, id ID) (Status, error)
	// List reports every run the runtime has a record of, running or not,
	// including the runs it found again after the agent restarted.
	List(ctx context.Context) ([]Status, error)
	// Remove forgets an exited run and deletes its files, its log with them.
	Remove(ctx context.Context, id ID) error
	// Exec runs argv in the run's environment (its env, working dir and
	// credentials) for a probe or a hook, and returns the combined output
	// (capped) and the exit code. ctx bounds it.
	Exec(ctx context.Context, id ID, argv []string) (output []byte, exitCode int, err error)
	// ExecStream runs opts.Argv as Exec does, with its standard streams
	// connected to the caller's, or to a terminal, until it exits or ctx
	// ends: `kubectl exec`. It returns the command's exit code.
	ExecStream(ctx context.Context, id ID, opts ExecOptions) (exitCode int, err error)
	// Attach connects the caller to a running run's process, as kubectl
	// attach does: what it writes from now on (stdout and stderr apart
	// with Container.Stdin, else as one stream on Stdout, as a
	// terminal's output is), its input and its terminal's size. It
	// returns nil when the process's output has ended, or when opts.Stdin
	// ends and the container is not StdinOnce (with StdinOnce the
	// process's input is closed, and its output still comes); an error
	// when ctx ends or the session cannot go on. The caller ends
	// opts.Stdin once Attach has returned. Several sessions may be
	// attached at once; each gets all the output.
	Attach(ctx context.Context, id ID, opts AttachOptions) error
	// Logs writes the run's output (stdout and stderr, as written) to w.
	Logs(ctx context.Context, id ID, opts LogOptions, w io.Writer) error
	// Stats reports what a running run uses now, for eviction.
	Stats(ctx context.Context, id ID) (Stats, error)
	// DiskUsage is the disk space the run's own files take, running or
	// ended: its log and the runtime's records of it, what counts against
	// its container's ephemeral-storage limit.
	DiskUsage(ctx context.Context, id ID) (int64, error)
	// Exited delivers the ID of each run as it exits, so a pod worker
	// wakes at once instead of polling. It is never closed.
	Exited() <-chan ID
	// Capabilities says what the runtime enforces here.
	Capabilities() Capabilities
}

// PodRuntime is a Runtime that runs images in a sandbox per pod (the cri
// runtime): the pod has an address of its own and its sandbox outlives
// each run, until RemovePod.
type PodRuntime interface {
	Runtime
	// HasImage says whether the image is present.
	HasImage(ctx context.Context, ref string) (bool, error)
	// PullImage makes c's image present as its PullPolicy says, and says
	// whether it pulled it now. A failure is an *ImagePullError.
	PullImage(ctx context.Context, c *Container) (pulled bool, err error)
	// PodIPs are the addresses of the pod's sandbox, none before it runs.
	PodIPs(podUID string) []string
	// StopPod stops the pod's sandbox once its containers are stopped,
	// releasing its address.
	StopPod(ctx context.Context, podUID string) error
	// RemovePod stops and deletes the pod's sandbox once its runs are
	// removed.
	RemovePod(ctx context.Context, podUID string) error
}

// PortForwarder is a PodRuntime that reaches a pod's ports itself, inside
// the pod's network namespace (the CRI's PortForward), as the kubelet
// forwards `kubectl port-forward`.
type PortForwarder interface {
	// PortForward opens a session of forwarded connections to the pod's
	// ports; ErrNotFound when the pod has no running sandbox.
	PortForward(ctx context.Context, podUID string) (PortForwardSession, error)
}

// PortForwardSession is one user's port-forward: each Open is one
// connection to a port of the pod.
type PortForwardSession interface {
	Open(port uint16) (PortStream, error)
	Close() error
}

// PortStream is one forwarded connection: its bytes are read and written;
// CloseWrite says nothing more is sent (the pod may still answer); Errors
// carries what the runtime says went wrong (reaching the port), read to
// its end.
type PortStream interface {
	io.ReadWriter
	CloseWrite() error
	Close() error
	Errors() io.Reader
}
