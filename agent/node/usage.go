package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadNodeUsage reads the node's CPU time (every CPU's time not idle or
// waiting) from /proc/stat and its memory working set (total less
// available) from /proc/meminfo.
func ReadNodeUsage() (cpuNanos, memoryBytes int64, err error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	if cpuNanos, err = parseProcStat(stat); err != nil {
		return 0, 0, err
	}
	mem, err := readMeminfo()
	if err != nil {
		return 0, 0, err
	}
	total, ok1 := mem["MemTotal"]
	avail, ok2 := mem["MemAvailable"]
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("%s has no MemTotal or MemAvailable", procMeminfo)
	}
	return cpuNanos, max(0, total-avail), nil
}

// parseProcStat reads the busy CPU time of the "cpu" line: user, nice,
// system, irq, softirq and steal (guest time is within user), in USER_HZ,
// which is 100 on every Linux machine.
func parseProcStat(data []byte) (int64, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += v
	}
	const userHZ = 100
	return busy * (int64(time.Second) / userHZ), nil
}
