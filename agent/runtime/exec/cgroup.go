//go:build linux

package exec

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/berth-dev/berth/agent/runtime"
)

// cgroupMount is where the cgroup filesystems are mounted; tests may point
// it elsewhere.
var cgroupMount = "/sys/fs/cgroup"

// cgroupParentName is the directory under which berth makes one cgroup per
// run.
const cgroupParentName = "berth"

// cpuPeriodMicros is the CFS period of every limited run: 100ms.
const cpuPeriodMicros = 100000

// cgroupPaths are the cgroup directories of one run, recorded in its
// config.json so the shim can join them and a later agent can remove them.
// On v2 Memory and CPU are the same directory.
type cgroupPaths struct {
	Version string `json:"version,omitempty"`
	Memory  string `json:"memory,omitempty"`
	CPU     string `json:"cpu,omitempty"`
}

// cgroups makes and reads the runs' cgroups. The zero value (no Version)
// runs everything without one.
type cgroups struct {
	version   string // "v2", "v1" or ""
	memParent string
	cpuParent string
	memory    bool
	cpu       bool
}

// detectCgroups finds the cgroup version and makes berth's parent cgroups.
// On v2 the parent is <mount>/berth with memory and cpu enabled down to it
// (a cgroup that holds processes cannot delegate controllers, so it hangs
// from the root). On v1 it sits under the agent's own cgroup in each
// hierarchy, so whatever bounds the agent bounds its pods too. The error
// says why berth cannot use cgroups here.
func detectCgroups(mount string) (cgroups, error) {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
		return detectV2(mount)
	}
	if isDir(filepath.Join(mount, "memory")) && isDir(filepath.Join(mount, "cpu")) {
		return detectV1(mount)
	}
	return cgroups{}, fmt.Errorf("no cgroup v2 or v1 memory and cpu hierarchies under %s", mount)
}

func detectV2(mount string) (cgroups, error) {
	parent := filepath.Join(mount, cgroupParentName)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return cgroups{}, fmt.Errorf("cgroup v2: %w", err)
	}
	for _, dir := range []string{mount, parent} {
		for _, c := range []string{"+memory", "+cpu"} {
			// Already enabled, or not available: what is on is read below.
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(c), 0)
		}
	}
	b, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return cgroups{}, fmt.Errorf("cgroup v2: %w", err)
	}
	on := strings.Fields(string(b))
	cg := cgroups{version: "v2", memParent: parent, cpuParent: parent}
	for _, c := range on {
		cg.memory = cg.memory || c == "memory"
		cg.cpu = cg.cpu || c == "cpu"
	}
	return cg, nil
}

func detectV1(mount string) (cgroups, error) {
	own, err := ownCgroups()
	if err != nil {
		return cgroups{}, fmt.Errorf("cgroup v1: %w", err)
	}
	cg := cgroups{
		version:   "v1",
		memParent: filepath.Join(mount, "memory", own["memory"], cgroupParentName),
		cpuParent: filepath.Join(mount, "cpu", own["cpu"], cgroupParentName),
	}
	for _, d := range []string{cg.memParent, cg.cpuParent} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return cgroups{}, fmt.Errorf("cgroup v1: %w", err)
		}
	}
	cg.memory = exists(filepath.Join(cg.memParent, "memory.limit_in_bytes"))
	cg.cpu = exists(filepath.Join(cg.cpuParent, "cpu.cfs_quota_us"))
	return cg, nil
}

// ownCgroups maps each v1 controller to this process's cgroup path, from
// /proc/self/cgroup.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	own := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, sc.Err()
}

// capabilities reports what cg can enforce.
func (cg cgroups) capabilities() runtime.Capabilities {
	return runtime.Capabilities{Cgroup: cg.version, MemoryLimit: cg.memory, CPULimit: cg.cpu}
}

// cgroupName is the directory name of a run's cgroup.
func cgroupName(id runtime.ID) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '/' || r == 0 {
				return '_'
			}
			return r
		}, s)
	}
	return clean(id.PodUID) + "_" + clean(id.Name) + "_" + strconv.Itoa(id.Attempt)
}

// create makes the run's cgroup and sets its limits.
func (cg cgroups) create(id runtime.ID, l runtime.Limits) (cgroupPaths, error) {
	if cg.version == "" {
		return cgroupPaths{}, nil
	}
	name := cgroupName(id)
	p := cgroupPaths{Version: cg.version, Memory: filepath.Join(cg.memParent, name), CPU: filepath.Join(cg.cpuParent, name)}
	for _, d := range []string{p.Memory, p.CPU} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return cgroupPaths{}, fmt.Errorf("cgroup %s: %w", d, err)
		}
	}
	var writes [][2]string // file, value
	if cg.version == "v2" {
		if l.MemoryBytes > 0 {
			writes = append(writes, [2]string{filepath.Join(p.Memory, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)})
			if exists(filepath.Join(p.Memory, "memory.swap.max")) {
				writes = append(writes, [2]string{filepath.Join(p.Memory, "memory.swap.max"), "0"})
			}
		}
		if l.MilliCPU > 0 {
			writes = append(writes, [2]string{filepath.Join(p.CPU, "cpu.max"), fmt.Sprintf("%d %d", cpuQuota(l.MilliCPU), cpuPeriodMicros)})
		}
	} else {
		// The process joins after it started: bring the memory it already
		// charged along where the kernel still can (newer ones refuse).
		_ = os.WriteFile(filepath.Join(p.Memory, "memory.move_charge_at_immigrate"), []byte("3"), 0)
		if l.MemoryBytes > 0 {
			writes = append(writes, [2]string{filepath.Join(p.Memory, "memory.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)})
			if exists(filepath.Join(p.Memory, "memory.memsw.limit_in_bytes")) {
				writes = append(writes, [2]string{filepath.Join(p.Memory, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)})
			}
		}
		if l.MilliCPU > 0 {
			writes = append(writes,
				[2]string{filepath.Join(p.CPU, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriodMicros)},
				[2]string{filepath.Join(p.CPU, "cpu.cfs_quota_us"), strconv.FormatInt(cpuQuota(l.MilliCPU), 10)})
		}
	}
	for _, w := range writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil {
			cg.remove(p)
			return cgroupPaths{}, fmt.Errorf("cgroup limit %s: %w", w[0], err)
		}
	}
	return p, nil
}

// cpuQuota is the CFS quota in microseconds per period for milliCPU, at
// least the kernel's minimum of 1ms.
func cpuQuota(milliCPU int64) int64 {
	return max(milliCPU*cpuPeriodMicros/1000, 1000)
}

// procs lists the processes in the run's cgroup.
func (p cgroupPaths) procs() []int {
	if p.Memory == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(p.Memory, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// join moves pid into the run's cgroups (v1, where a process cannot be
// started inside a cgroup). The shim calls it right after the process
// started, so the first instructions of the container (the exec of its
// program and whatever runs before the shim is scheduled again) run in the
// agent's cgroup, and what they charged stays there; on v2 the process is
// born in its cgroup and there is no such window.
func (p cgroupPaths) join(pid int) error {
	for _, d := range []string{p.Memory, p.CPU} {
		if d == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// killAll sends SIGKILL to every process left in the run's cgroup.
func (p cgroupPaths) killAll() {
	for _, pid := range p.procs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// oomKilled reports whether the kernel killed a process of the run for
// want of memory.
func (p cgroupPaths) oomKilled() bool {
	switch p.Version {
	case "v2":
		return keyedValue(filepath.Join(p.Memory, "memory.events"), "oom_kill") > 0
	case "v1":
		file := filepath.Join(p.Memory, "memory.oom_control")
		if n := keyedValue(file, "oom_kill"); n > 0 {
			return true
		}
		if b, err := os.ReadFile(file); err == nil && strings.Contains(string(b), "oom_kill ") {
			return false // the kernel counts kills, and counted none
		}
		n, _ := readInt(filepath.Join(p.Memory, "memory.failcnt"))
		return n > 0
	}
	return false
}

// stats reads the run's working set and, on v2, its CPU time; cpuOK is
// false when the cgroup does not count CPU (v1, where berth joins no
// cpuacct hierarchy). On v1 memory the process touched before it joined
// stays charged to the agent's cgroup, so the caller also counts the
// process group's resident set.
func (p cgroupPaths) stats() (mem, cpu int64, cpuOK bool, err error) {
	switch p.Version {
	case "v2":
		usage, err := readInt(filepath.Join(p.Memory, "memory.current"))
		if err != nil {
			return 0, 0, false, err
		}
		mem = max(usage-keyedValue(filepath.Join(p.Memory, "memory.stat"), "inactive_file"), 0)
		return mem, keyedValue(filepath.Join(p.CPU, "cpu.stat"), "usage_usec") * 1000, true, nil
	case "v1":
		usage, err := readInt(filepath.Join(p.Memory, "memory.usage_in_bytes"))
		if err != nil {
			return 0, 0, false, err
		}
		mem = max(usage-keyedValue(filepath.Join(p.Memory, "memory.stat"), "total_inactive_file"), 0)
		return mem, 0, false, nil
	}
	return 0, 0, false, errors.New("no cgroup")
}

// remove kills what is left in the run's cgroups and deletes them.
func (cg cgroups) remove(p cgroupPaths) error {
	p.killAll()
	var errs []error
	for _, d := range []string{p.Memory, p.CPU} {
		if d == "" {
			continue
		}
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// keyedValue reads the value of key from a "key value" per line file, or 0.
func keyedValue(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
