package pods

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/api"
)

// hostPath is the search path of a Linux host, the one container images
// default to, so that a bare `command: [sh, -c, …]` finds its shell.
const hostPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// defaultPath is the PATH of a container whose pod sets none when the
// agent has no bin directory of its own (see podPath): the host's, and
// last the directory of the berth binary running the agent, so that a
// shell's `berth` is found on a machine with no other. Last, not first:
// that directory may hold other programs, which must not shadow the
// host's.
var defaultPath = withOwnDir(hostPath)

// withOwnDir appends the running executable's directory to a search path
// that lacks it.
func withOwnDir(path string) string {
	if ownBinary == "" {
		return path
	}
	dir := filepath.Dir(ownBinary)
	if slices.Contains(filepath.SplitList(path), dir) {
		return path
	}
	return path + string(filepath.ListSeparator) + dir
}

// podPath makes the PATH of a container whose pod sets none: first a
// directory of the agent's data dir holding only a link named berth to
// the agent's own binary, then the host's. A pod's shell that runs
// `berth` (a toolbox server started by a script, say) so runs this
// agent's berth, not an older one earlier on the host's PATH, and nothing
// else is shadowed. Without the link (the binary unknown, the directory
// not writable) it is defaultPath. A container whose command is `berth`
// runs the agent's own binary whatever the PATH (see ownBinary).
func podPath(dataDir string) (string, error) {
	if ownBinary == "" {
		return defaultPath, nil
	}
	dir := filepath.Join(dataDir, "bin")
	// Searchable whatever the umask: containers that run as other users
	// have it on their PATH too.
	if err := EnsureDir(dir, 0o755); err != nil {
		return defaultPath, err
	}
	link := filepath.Join(dir, berthCommand)
	if target, err := os.Readlink(link); err != nil || target != ownBinary {
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return defaultPath, err
		}
		if err := os.Symlink(ownBinary, link); err != nil {
			return defaultPath, err
		}
	}
	return dir + string(filepath.ListSeparator) + hostPath, nil
}

// berthCommand is the command name that means the agent's own binary.
const berthCommand = "berth"

// ownBinary is the path of the berth binary running the agent, "" when it
// cannot be known. The toolbox images (`image: berth-toolbox`, `command:
// [berth, toolbox, …]`) are berth itself, as an image's command names the
// program the image carries: a search of the PATH could find another berth
// first (an older one in /usr/local/bin, say) and run a toolbox that is not
// this agent's.
var ownBinary = func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}()

// Waiting reasons of a container, as the kubelet reports them.
const (
	reasonContainerCreating          = "ContainerCreating"
	reasonPodInitializing            = "PodInitializing"
	reasonCrashLoopBackOff           = "CrashLoopBackOff"
	reasonCreateContainerConfigError = "CreateContainerConfigError"
	reasonCreateContainerError       = "CreateContainerError"
)

// configError is a container whose configuration cannot be resolved yet
// (a missing ConfigMap, Secret or key, no command): it waits with reason
// CreateContainerConfigError and the message, and is retried with back-off.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// errNoRefs is what a reference fails with when the agent runs without
// the API (standalone static pods).
var errNoRefs = errors.New("no API server to read references from (standalone agent)")

// envSource is what a container's environment is made from.
type envSource struct {
	pod    *api.Pod
	nodeIP string
	refs   RefResolver
	// volumes are the host paths of the pod's volumes by name.
	volumes map[string]string
	// tokenFile is the pod's service-account token, "" when it has none.
	tokenFile string
	// path is the PATH a container whose pod sets none gets (podPath);
	// "" is defaultPath.
	path string
	// images: the container runs an image (a PodRuntime), which has its
	// own PATH and finds its volumes and token where they are mounted, so
	// no PATH, BERTH_VOLUME_* or token file variable is added.
	images bool
	// podIP is the pod's own address, when it has one (status.podIP).
	podIP string
	// allocatable is the node's allocatable: what a resourceFieldRef
	// reads for a limit its container does not set.
	allocatable api.ResourceList
	// apiServer is where the API server is, as KEY=VALUE (apiServerEnv):
	// first in the environment, so that the container's own variables of
	// the same names win and $(VAR) can name them, as in Kubernetes.
	apiServer []string
}

// containerEnv is the whole environment of c's process as KEY=VALUE: the
// API server's address, then envFrom, then env (later wins), with $(VAR)
// expanded against earlier variables, plus BERTH_VOLUME_* and a PATH when
// the pod sets none. It also returns the
// variables for expanding the command line, the volumes' among them: with
// no mountPath under the exec runtime, `--data=$(BERTH_VOLUME_DATA)` is how
// an argument names a volume.
func containerEnv(ctx context.Context, src envSource, c *api.Container) ([]string, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range src.apiServer {
		set(splitEnv(kv))
	}
	ns := src.pod.Namespace
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := getConfigMap(ctx, src.refs, ns, from.ConfigMapRef.Name)
			if err != nil {
				if isOptional(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, nil, err
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := getSecret(ctx, src.refs, ns, from.SecretRef.Name)
			if err != nil {
				if isOptional(from.SecretRef.Optional) {
					continue
				}
				return nil, nil, err
			}
			data = secretData(s)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			name := from.Prefix + k
			if len(validation.IsEnvVarName(name)) > 0 {
				continue // Kubernetes skips keys that are not variable names.
			}
			set(name, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandVars(e.Value, vars))
			continue
		}
		v, ok, err := envValueFrom(ctx, src, c, e)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			set(e.Name, v)
		}
	}
	env := make([]string, 0, len(order)+len(src.volumes)+1)
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	if src.images {
		return env, vars, nil
	}
	for _, n := range slices.Sorted(maps.Keys(src.volumes)) {
		k := volumeEnvName(n)
		if _, ok := vars[k]; ok {
			continue // the pod set it itself
		}
		env = append(env, k+"="+src.volumes[n])
		vars[k] = src.volumes[n]
	}
	if _, ok := vars[EnvServiceAccountTokenFile]; !ok && src.tokenFile != "" {
		env = append(env, EnvServiceAccountTokenFile+"="+src.tokenFile)
		vars[EnvServiceAccountTokenFile] = src.tokenFile
	}
	if _, ok := vars["PATH"]; !ok {
		path := cmp.Or(src.path, defaultPath)
		env = append(env, "PATH="+path)
		vars["PATH"] = path
	}
	return env, vars, nil
}

// volumeEnvName is the variable naming a volume's host path (SPEC §4).
func volumeEnvName(volume string) string {
	return "BERTH_VOLUME_" + strings.ReplaceAll(strings.ToUpper(volume), "-", "_")
}

func envValueFrom(ctx context.Context, src envSource, c *api.Container, e api.EnvVar) (string, bool, error) {
	vf, p := e.ValueFrom, src.pod
	switch {
	case vf.ResourceFieldRef != nil:
		v, err := containerResourceValue(p, c, vf.ResourceFieldRef, src.allocatable)
		if err != nil {
			return "", false, configErrorf("env %s: %v", e.Name, err)
		}
		return v, true, nil
	case vf.FieldRef != nil:
		switch vf.FieldRef.FieldPath {
		case "metadata.name":
			return p.Name, true, nil
		case "metadata.namespace":
			return p.Namespace, true, nil
		case "metadata.uid":
			return string(p.UID), true, nil
		case "spec.nodeName":
			return p.Spec.NodeName, true, nil
		case "spec.serviceAccountName":
			return p.Spec.ServiceAccountName, true, nil
		case "status.podIP":
			return cmp.Or(src.podIP, src.nodeIP), true, nil
		case "status.hostIP":
			return src.nodeIP, true, nil
		}
		return "", false, configErrorf("env %s: fieldRef %q is not supported", e.Name, vf.FieldRef.FieldPath)
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		cm, err := getConfigMap(ctx, src.refs, p.Namespace, r.Name)
		if err != nil {
			if isOptional(r.Optional) {
				return "", false, nil
			}
			return "", false, err
		}
		if v, ok := cm.Data[r.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[r.Key]; ok {
			return string(v), true, nil
		}
		if isOptional(r.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", r.Key, p.Namespace, r.Name)
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		s, err := getSecret(ctx, src.refs, p.Namespace, r.Name)
		if err != nil {
			if isOptional(r.Optional) {
				return "", false, nil
			}
			return "", false, err
		}
		if v, ok := secretData(s)[r.Key]; ok {
			return v, true, nil
		}
		if isOptional(r.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in Secret %s/%s", r.Key, p.Namespace, r.Name)
	}
	return "", false, configErrorf("env %s: valueFrom has no source", e.Name)
}

func getConfigMap(ctx context.Context, refs RefResolver, ns, name string) (*api.ConfigMap, error) {
	if refs == nil {
		return nil, configErrorf("configmap %q not found: %v", ns+"/"+name, errNoRefs)
	}
	cm, err := refs.ConfigMap(ctx, ns, name)
	if err != nil {
		return nil, configErrorf("configmap %q not found: %v", ns+"/"+name, err)
	}
	return cm, nil
}

func getSecret(ctx context.Context, refs RefResolver, ns, name string) (*api.Secret, error) {
	if refs == nil {
		return nil, configErrorf("secret %q not found: %v", ns+"/"+name, errNoRefs)
	}
	s, err := refs.Secret(ctx, ns, name)
	if err != nil {
		return nil, configErrorf("secret %q not found: %v", ns+"/"+name, err)
	}
	return s, nil
}

// secretData is a Secret's data as strings, stringData merged over data as
// the API server would.
func secretData(s *api.Secret) map[string]string {
	out := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}

func isOptional(b *bool) bool { return b != nil && *b }

// commandLine is c's argv after $(VAR) expansion with its environment:
// command, then args, a bare `berth` made the agent's own binary. The exec
// runtime runs it itself and the image is not used, so there is no image
// entrypoint: args alone are the argv, as they are for an image without one
// (kubectl run NAME --image=… -- CMD puts CMD in args), and a container
// with neither has nothing to run.
func commandLine(c *api.Container, vars map[string]string) ([]string, error) {
	switch {
	case len(c.Command) == 0 && len(c.Args) == 0:
		return nil, configErrorf("container %s has no command: the exec runtime runs `command` (and `args`) on the node; the image %q is not used", c.Name, c.Image)
	case len(c.Command) == 0 && strings.HasPrefix(c.Args[0], "-"):
		// Flags for the image's entrypoint, which does not run.
		return nil, configErrorf("container %s has no command and its args begin with the flag %q: the exec runtime runs `command` (and `args`) on the node; the image %q and its entrypoint are not used", c.Name, c.Args[0], c.Image)
	}
	argv := make([]string, 0, len(c.Command)+len(c.Args))
	for _, a := range c.Command {
		argv = append(argv, expandVars(a, vars))
	}
	for _, a := range c.Args {
		argv = append(argv, expandVars(a, vars))
	}
	if argv[0] == berthCommand && ownBinary != "" {
		argv[0] = ownBinary
	}
	return argv, nil
}

// expandVars expands $(VAR) in s by Kubernetes' rules: a defined variable
// is replaced, an unknown reference is kept verbatim, $$ is a literal $, and
// any other $ is kept as it is.
func expandVars(s string, vars map[string]string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(s); cursor++ {
		if s[cursor] != '$' || cursor+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:cursor])
		read, isVar, advance := readVarName(s[cursor+1:])
		if isVar {
			if v, ok := vars[read]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + read + ")")
			}
		} else {
			b.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return b.String() + s[checkpoint:]
}

// readVarName reads what follows a $: the name of a $(NAME) reference, or
// the literal text to write; advance is how many bytes it consumed.
func readVarName(s string) (read string, isVar bool, advance int) {
	switch s[0] {
	case '$':
		return "$", false, 1
	case '(':
		for i := 1; i < len(s); i++ {
			if s[i] == ')' {
				return s[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	}
	return "$" + s[:1], false, 1
}
