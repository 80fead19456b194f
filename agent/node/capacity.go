package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/api"
)

// DefaultMaxPods is the pods capacity a node reports, the kubelet's default.
const DefaultMaxPods = 110

// System reserve: what Allocatable keeps back for the operating system and
// the agent itself, in the spirit of the kubelet's --system-reserved. The
// kubelet reserves nothing by default and leaves it to operators; berth
// runs on small machines without tuning, so it keeps a little back.
var (
	// SystemReservedCPU is one tenth of a core.
	SystemReservedCPU = resource.MustParse("100m")
	// SystemReservedMemory is 100Mi, on top of the memory eviction threshold.
	SystemReservedMemory = resource.MustParse("100Mi")
)

// Paths read by DetectCapacity and ReadSignals; variables so that a test
// can point them at files of its own.
var (
	procMeminfo = "/proc/meminfo"
	cgroupRoot  = "/sys/fs/cgroup"
)

// DetectCapacity reads what this machine offers, for the Node's
// status.capacity when --capacity does not say: cpu (the processors, or
// the cgroup v2 cpu.max quota of the agent's cgroup when lower), memory
// (MemTotal), ephemeral-storage (the file system of dataDir) and pods.
func DetectCapacity(dataDir string) (api.ResourceList, error) {
	milli := int64(goruntime.NumCPU()) * 1000
	if q, ok := cgroupCPUQuota(); ok && q < milli {
		milli = q
	}
	mem, err := readMeminfo()
	if err != nil {
		return nil, fmt.Errorf("detect capacity: %w", err)
	}
	total, ok := mem["MemTotal"]
	if !ok {
		return nil, fmt.Errorf("detect capacity: %s has no MemTotal", procMeminfo)
	}
	size, _, err := statfs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("detect capacity: %w", err)
	}
	return api.ResourceList{
		api.ResourceCPU:              *resource.NewMilliQuantity(milli, resource.DecimalSI),
		api.ResourceMemory:           *resource.NewQuantity(total, resource.BinarySI),
		api.ResourceEphemeralStorage: *resource.NewQuantity(size, resource.BinarySI),
		api.ResourcePods:             *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI),
	}, nil
}

// cgroupCPUQuota reads the cpu.max of the agent's own cgroup (v2) in
// thousandths of a core; ok is false when there is no limit or no cgroup v2.
func cgroupCPUQuota() (milli int64, ok bool) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	var rel string
	for line := range strings.Lines(string(self)) {
		if p, found := strings.CutPrefix(strings.TrimSpace(line), "0::"); found {
			rel = p
		}
	}
	if rel == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(cgroupRoot, rel, "cpu.max"))
	if err != nil {
		return 0, false
	}
	return parseCPUMax(string(b))
}

// parseCPUMax reads a cgroup v2 cpu.max ("max 100000" or "150000 100000").
func parseCPUMax(s string) (milli int64, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	quota, err1 := strconv.ParseInt(f[0], 10, 64)
	period, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0, false
	}
	return max(quota*1000/period, 1), true
}

// readMeminfo reads /proc/meminfo into bytes per field.
func readMeminfo() (map[string]int64, error) {
	f, err := os.Open(procMeminfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		out[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", procMeminfo, err)
	}
	return out, nil
}

// statfs reports the size and the space available to unprivileged users
// of the file system holding path, or of its nearest existing parent when
// path does not exist yet (the agent makes its data dir later).
func statfs(path string) (size, avail int64, err error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	for {
		var st unix.Statfs_t
		err = unix.Statfs(p, &st)
		if err == nil {
			return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
		}
		p = parent
	}
}

// flagItems yields the comma-separated items of a list flag (--capacity,
// --node-labels, --node-taints, --eviction-hard), trimmed, empty ones
// skipped.
func flagItems(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" && !yield(item) {
				return
			}
		}
	}
}

// capacityNames are the resources --capacity may set.
var capacityNames = []api.ResourceName{api.ResourceCPU, api.ResourceMemory, api.ResourcePods, api.ResourceEphemeralStorage}

// ParseCapacity reads a --capacity value, "cpu=4,memory=8Gi,pods=110,
// ephemeral-storage=20Gi", so that simulations and tests can report a
// machine other than the one they run on. Errors name the bad item.
func ParseCapacity(s string) (api.ResourceList, error) {
	out := api.ResourceList{}
	for item := range flagItems(s) {
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("capacity %q: want name=quantity", item)
		}
		rn := api.ResourceName(strings.TrimSpace(name))
		if !slices.Contains(capacityNames, rn) {
			return nil, fmt.Errorf("capacity %q: unknown resource %q (want cpu, memory, pods or ephemeral-storage)", item, rn)
		}
		if _, dup := out[rn]; dup {
			return nil, fmt.Errorf("capacity %q: %s given twice", item, rn)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("capacity %q: %w", item, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("capacity %q: must not be negative", item)
		}
		if rn == api.ResourcePods && q.MilliValue()%1000 != 0 {
			return nil, fmt.Errorf("capacity %q: pods must be a whole number", item)
		}
		out[rn] = q
	}
	return out, nil
}

// MergeCapacity returns detected with every resource of override put over
// it: what a node reports when --capacity names only some resources.
func MergeCapacity(detected, override api.ResourceList) api.ResourceList {
	out := make(api.ResourceList, len(detected)+len(override))
	for k, v := range detected {
		out[k] = v.DeepCopy()
	}
	for k, v := range override {
		out[k] = v.DeepCopy()
	}
	return out
}

// Allocatable is what the scheduler may place on a node of this capacity:
// the capacity less the system reserve (SystemReservedCPU,
// SystemReservedMemory) and less the hard eviction thresholds (memory.
// available off memory, nodefs.available off ephemeral-storage), as the
// kubelet computes it, so that pods filling the node to its allocatable do
// not at once trigger eviction. Nothing goes below zero; pods is kept.
func Allocatable(capacity api.ResourceList, thresholds []eviction.Threshold) api.ResourceList {
	out := make(api.ResourceList, len(capacity))
	for k, v := range capacity {
		out[k] = v.DeepCopy()
	}
	sub := func(name api.ResourceName, q resource.Quantity) {
		v, ok := out[name]
		if !ok {
			return
		}
		v.Sub(q)
		if v.Sign() < 0 {
			v = *resource.NewQuantity(0, v.Format)
		}
		out[name] = v
	}
	sub(api.ResourceCPU, SystemReservedCPU)
	sub(api.ResourceMemory, SystemReservedMemory)
	for _, t := range thresholds {
		var name api.ResourceName
		switch t.Signal {
		case eviction.SignalMemoryAvailable:
			name = api.ResourceMemory
		case eviction.SignalNodeFSAvailable:
			name = api.ResourceEphemeralStorage
		default:
			continue
		}
		c, ok := capacity[name]
		if !ok {
			continue
		}
		sub(name, *resource.NewQuantity(t.Bytes(c.Value()), resource.BinarySI))
	}
	return out
}

// ParseLabels reads a --node-labels value, "k=v,k2=v2", checking each key
// and value as Kubernetes checks labels so that a bad flag fails at start
// rather than at registration.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for item := range flagItems(s) {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("label %q: want key=value", item)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("label %q: key: %s", item, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("label %q: value: %s", item, strings.Join(errs, "; "))
		}
		if !api.NodeMaySetLabel(k) {
			return nil, fmt.Errorf("label %q: a node may not set it on its own Node: "+
				"node-restriction.kubernetes.io/ and node-role.kubernetes.io/ labels, and kubernetes.io/ and k8s.io/ labels "+
				"other than the kubelet's (hostname, os, arch, zone, region, instance type, node.kubernetes.io/…), "+
				"are the operator's to set (kubectl label node)", item)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("label %q: key %q given twice", item, k)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints reads a --node-taints value, "key=value:NoSchedule,
// key2:NoExecute", checked as Kubernetes checks taints.
func ParseTaints(s string) ([]api.Taint, error) {
	var out []api.Taint
	for item := range flagItems(s) {
		kv, effect, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:effect", item)
		}
		k, v, _ := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("taint %q: key: %s", item, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("taint %q: value: %s", item, strings.Join(errs, "; "))
		}
		e := api.TaintEffect(effect)
		switch e {
		case api.TaintEffectNoSchedule, api.TaintEffectPreferNoSchedule, api.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", item, effect)
		}
		for _, t := range out {
			if t.Key == k && t.Effect == e {
				return nil, fmt.Errorf("taint %q: %s:%s given twice", item, k, e)
			}
		}
		out = append(out, api.Taint{Key: k, Value: v, Effect: e})
	}
	return out, nil
}

// ReadSignals reads the machine's signals: MemAvailable and MemTotal of
// /proc/meminfo, and the file system holding dataDir.
func ReadSignals(dataDir string) (eviction.Signals, error) {
	mem, err := readMeminfo()
	if err != nil {
		return eviction.Signals{}, fmt.Errorf("read signals: %w", err)
	}
	size, avail, err := statfs(dataDir)
	if err != nil {
		return eviction.Signals{}, fmt.Errorf("read signals: %w", err)
	}
	return eviction.Signals{
		MemoryAvailable: mem["MemAvailable"], MemoryCapacity: mem["MemTotal"],
		NodeFSAvailable: avail, NodeFSCapacity: size,
	}, nil
}
