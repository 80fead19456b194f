//go:build linux

package exec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/agent/runtime"
)

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat. Linux
// fixes it at 100 on every architecture berth runs on.
const clockTicks = 100

// procStat is what berth reads from /proc/<pid>/stat.
type procStat struct {
	State     byte
	PGID      int
	UTime     uint64 // clock ticks
	STime     uint64
	CUTime    uint64 // of waited-for children
	CSTime    uint64
	StartTime uint64 // clock ticks after boot: with the pid, names one process
}

// readProcStat reads /proc/<pid>/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses the text of /proc/<pid>/stat. The command name (field
// 2) may hold spaces and parentheses, so the fields are counted after its
// last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return procStat{}, errors.New("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat: %d fields, want at least 22", len(f)+2)
	}
	var s procStat
	s.State = f[0][0]
	nums := []struct {
		field int
		dst   *uint64
	}{{14, &s.UTime}, {15, &s.STime}, {16, &s.CUTime}, {17, &s.CSTime}, {22, &s.StartTime}}
	for _, n := range nums {
		v, err := strconv.ParseInt(f[n.field-3], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", n.field, err)
		}
		if v > 0 {
			*n.dst = uint64(v)
		}
	}
	pg, err := strconv.Atoi(f[5-3])
	if err != nil {
		return procStat{}, fmt.Errorf("stat field 5: %w", err)
	}
	s.PGID = pg
	return s, nil
}

// processStart returns the start time of pid (field 22 of its stat).
func processStart(pid int) (uint64, error) {
	s, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return s.StartTime, nil
}

// alive reports whether pid is the process that started at start and has
// not yet exited (a zombie has exited).
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s, err := readProcStat(pid)
	if err != nil {
		return false
	}
	return s.StartTime == start && s.State != 'Z' && s.State != 'X'
}

// groupUsage sums the CPU time and resident memory of every process in the
// process group pgid. The leader's waited-for children count too, so work
// done by short-lived commands is not lost.
func groupUsage(pgid int) (cpuNanos, rssBytes int64, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, fmt.Errorf("read /proc: %w", err)
	}
	page := int64(os.Getpagesize())
	found := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, err := readProcStat(pid)
		if err != nil || s.PGID != pgid || s.State == 'Z' {
			continue
		}
		found = true
		ticks := s.UTime + s.STime
		if pid == pgid {
			ticks += s.CUTime + s.CSTime
		}
		cpuNanos += int64(ticks) * (1e9 / clockTicks)
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "statm")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					rssBytes += n * page
				}
			}
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("process group %d: no process", pgid)
	}
	return cpuNanos, rssBytes, nil
}

// defaultPath is searched when the container's environment sets no PATH,
// as container runtimes do.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// workingDir is where a container's processes start: its workingDir,
// else the root, as a container runtime starts an image without one (and
// as the shim, which runs in /, leaves it). Execs in the container start
// there too, not in the agent's directory.
func workingDir(c *runtime.Container) string {
	if c.WorkingDir != "" {
		return c.WorkingDir
	}
	return "/"
}

// lookPath resolves name through the PATH of env (not the agent's), the way
// the process itself would: a name with a slash is used as it is, relative
// to dir.
func lookPath(name string, env []string, dir string) (string, error) {
	if name == "" {
		return "", errors.New("empty command")
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("exec %q: %w", name, err)
		}
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: executable file not found in $PATH", name)
}

// executable reports why p cannot be run, or nil.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: permission denied", p)
	}
	return nil
}
