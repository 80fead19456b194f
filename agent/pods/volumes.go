package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

// defaultVolumeMode is the file mode of projected ConfigMap and Secret keys
// when the pod sets none, as in Kubernetes.
const defaultVolumeMode = 0o644

// podDir is where a pod's own files live.
func podDir(dataDir, uid string) string {
	return filepath.Join(dataDir, "pods", uid)
}

// podVolumeDir is where a volume the agent makes for a pod lives.
func podVolumeDir(dataDir, uid, name string) string {
	return filepath.Join(podDir(dataDir, uid), "volumes", name)
}

// volumeEnv is what a pod's volumes are made from, beyond the pod.
type volumeEnv struct {
	dataDir string
	refs    RefResolver
	// allocatable is the node's allocatable: what a resourceFieldRef
	// reads for a limit its container does not set.
	allocatable api.ResourceList
	// now is when the volumes are set up: a projected token is asked for
	// again once it has lived 80% of its life.
	now time.Time
}

// setUpVolumes makes every volume of pod ready on the host and returns its
// host path by volume name. It is idempotent: a worker calls it on each
// sync, so ConfigMap and Secret contents follow their objects.
func setUpVolumes(ctx context.Context, env volumeEnv, pod *api.Pod) (map[string]string, error) {
	if err := ensurePodDir(env.dataDir, pod); err != nil {
		return nil, err
	}
	paths := make(map[string]string, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		p, err := setUpVolume(ctx, env, pod, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, nil
}

func setUpVolume(ctx context.Context, env volumeEnv, pod *api.Pod, v api.Volume) (string, error) {
	dataDir, refs := env.dataDir, env.refs
	own := podVolumeDir(dataDir, string(pod.UID), v.Name)
	switch {
	case v.EmptyDir != nil:
		if err := MakeSharedDir(own); err != nil {
			return "", err
		}
		if v.EmptyDir.Medium == api.StorageMediumMemory {
			size := memoryVolumeSize(pod, v.EmptyDir.SizeLimit, env.allocatable)
			// Where the agent may not mount (no CAP_SYS_ADMIN), the volume
			// is a plain directory: the pod runs, on disk.
			if err := mountTmpfs(own, size); err != nil {
				slog.Warn("emptyDir medium Memory is a plain directory", "pod", pod.Namespace+"/"+pod.Name, "volume", v.Name, "err", err)
			}
		}
		if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
			if err := setGroupOwnership(own, *sc.FSGroup); err != nil {
				return "", fmt.Errorf("fsGroup: %w", err)
			}
		}
		return own, nil
	case v.HostPath != nil:
		return v.HostPath.Path, checkHostPath(v.HostPath)
	case v.PersistentVolumeClaim != nil:
		if refs == nil {
			return "", configErrorf("persistentVolumeClaim %s/%s: %v", pod.Namespace, v.PersistentVolumeClaim.ClaimName, errNoRefs)
		}
		p, err := refs.ClaimPath(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return "", configErrorf("persistentVolumeClaim %s/%s: %v", pod.Namespace, v.PersistentVolumeClaim.ClaimName, err)
		}
		return p, claimOwnership(dataDir, pod, v.Name, p, v.PersistentVolumeClaim.ReadOnly)
	case v.ConfigMap != nil:
		src := v.ConfigMap
		var data map[string][]byte
		cm, err := getConfigMap(ctx, refs, pod.Namespace, src.Name)
		switch {
		case err != nil && !isOptional(src.Optional):
			return "", err
		case err == nil:
			data = make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			for k, b := range cm.BinaryData {
				data[k] = b
			}
		}
		return own, projectOwned(pod, own, data, src.Items, src.DefaultMode, nil, "ConfigMap "+pod.Namespace+"/"+src.Name)
	case v.Secret != nil:
		src := v.Secret
		var data map[string][]byte
		s, err := getSecret(ctx, refs, pod.Namespace, src.SecretName)
		switch {
		case err != nil && !isOptional(src.Optional):
			return "", err
		case err == nil:
			merged := secretData(s)
			data = make(map[string][]byte, len(merged))
			for k, str := range merged {
				data[k] = []byte(str)
			}
		}
		return own, projectOwned(pod, own, data, src.Items, src.DefaultMode, nil, "Secret "+pod.Namespace+"/"+src.SecretName)
	case v.DownwardAPI != nil:
		f := &fileSet{}
		if err := downwardFiles(f, pod, v.DownwardAPI.Items, env.allocatable); err != nil {
			return "", err
		}
		return own, projectOwned(pod, own, f.data, f.items, v.DownwardAPI.DefaultMode, nil, "downwardAPI volume "+v.Name)
	case v.Projected != nil:
		f, err := projectedFiles(ctx, env, pod, own, v.Projected)
		if err != nil {
			return "", err
		}
		if f.data == nil {
			f.data = map[string][]byte{} // nothing to project, not absent
		}
		return own, projectOwned(pod, own, f.data, f.items, v.Projected.DefaultMode, f.users, "projected volume "+v.Name)
	}
	return "", errors.New("no volume source")
}

// memoryVolumeSize is the size of an emptyDir of medium Memory, as the
// kubelet sizes its tmpfs: the node's allocatable memory, less when every
// container of the pod has a memory limit and the pod's limit (their sum,
// plus the pod's overhead, as its cgroup is sized) is less, and less
// still when the volume's sizeLimit is; 0 (the kernel's default, half the
// machine's memory) when none is known. A pod cannot use more memory than
// that, so neither can its tmpfs.
func memoryVolumeSize(pod *api.Pod, sizeLimit *resource.Quantity, allocatable api.ResourceList) int64 {
	var size int64
	if m, ok := allocatable[api.ResourceMemory]; ok && m.Sign() > 0 {
		size = m.Value()
	}
	smaller := func(q resource.Quantity) {
		if q.Sign() > 0 && (size == 0 || q.Value() < size) {
			size = q.Value()
		}
	}
	limited := true
	for _, c := range allContainers(pod) {
		if l, ok := c.Resources.Limits[api.ResourceMemory]; !ok || l.IsZero() {
			limited = false
		}
	}
	if limited {
		// The kubelet's ResourceConfigForPod: PodLimits with the overhead
		// a RuntimeClass adds (spec.overhead), which the pod's cgroup
		// holds too.
		limit := api.PodLimits(&pod.Spec)[api.ResourceMemory]
		if o, ok := pod.Spec.Overhead[api.ResourceMemory]; ok {
			limit.Add(o)
		}
		smaller(limit)
	}
	if sizeLimit != nil {
		smaller(*sizeLimit)
	}
	return size
}

// checkHostPath creates or checks a hostPath by its type.
func checkHostPath(h *api.HostPathVolumeSource) error {
	t := api.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	fi, err := os.Stat(h.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	want := func(ok bool, what string) error {
		if !exists {
			return configErrorf("hostPath %s: %s does not exist", h.Path, what)
		}
		if !ok {
			return configErrorf("hostPath %s: not a %s", h.Path, what)
		}
		return nil
	}
	switch t {
	case api.HostPathUnset:
		return nil
	case api.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(h.Path, 0o755)
		}
		return want(fi.IsDir(), "directory")
	case api.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return want(fi.Mode().IsRegular(), "file")
	case api.HostPathDirectory:
		return want(exists && fi.IsDir(), "directory")
	case api.HostPathFile:
		return want(exists && fi.Mode().IsRegular(), "file")
	case api.HostPathSocket:
		return want(exists && fi.Mode()&fs.ModeSocket != 0, "socket")
	case api.HostPathCharDev:
		return want(exists && fi.Mode()&fs.ModeCharDevice != 0, "character device")
	case api.HostPathBlockDev:
		return want(exists && fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0, "block device")
	}
	return configErrorf("hostPath %s: unknown type %q", h.Path, t)
}

// project writes data's keys (or only items, at their paths) as files in
// dir, each given to owners before it takes its path, and removes files
// it wrote before that are no longer wanted.
func project(dir string, data map[string][]byte, items []api.KeyToPath, defaultMode *int32, owners projectOwners, what string) error {
	mode := fs.FileMode(defaultVolumeMode)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode) & fs.ModePerm
	}
	type file struct {
		content []byte
		mode    fs.FileMode
	}
	files := map[string]file{}
	if len(items) == 0 {
		for k, b := range data {
			files[k] = file{b, mode}
		}
	} else {
		for _, it := range items {
			b, ok := data[it.Key]
			if !ok {
				if data == nil {
					continue // optional and absent
				}
				return configErrorf("%s has no key %s", what, it.Key)
			}
			m := mode
			if it.Mode != nil {
				m = fs.FileMode(*it.Mode) & fs.ModePerm
			}
			files[it.Path] = file{b, m}
		}
	}
	if err := EnsureDir(dir, projectedDirMode); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if filepath.IsAbs(n) || strings.HasPrefix(filepath.Clean(n), "..") {
			return configErrorf("%s: path %q must be relative and stay inside the volume", what, n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := ensureDirsBelow(dir, filepath.Dir(p), projectedDirMode); err != nil {
			return err
		}
		owner := owners.of(n)
		if err := writeFileAtomicAs(p, files[n].content, owner.fsGroupMode(files[n].mode), owner); err != nil {
			return err
		}
	}
	// Remove what an older version of the object projected.
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := files[rel]; !ok {
			return os.Remove(p)
		}
		return nil
	})
}

// writeFileAtomic replaces path so a reader never sees half a file; a
// pod's files are made again from the API after a crash, so they are
// not synced.
func writeFileAtomic(path string, b []byte, mode fs.FileMode) error {
	return writeFileAtomicAs(path, b, mode, agentOwned)
}

// writeFileAtomicAs is writeFileAtomic of a file given to owner before it
// takes path's place: a reader who may read the old file may read the
// new one at every moment.
func writeFileAtomicAs(path string, b []byte, mode fs.FileMode, owner fileOwner) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode), owner.set(tmp.Name())); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
