package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time the threads of process pid have used so far
// (from /proc/PID/task/*/schedstat) and how often they have waited
// (voluntary context switches: each a sleep and a wake-up), or zeros when
// they cannot be read.
func ProcessCPU(pid int) (cpu time.Duration, waits int) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		if b, err := os.ReadFile(t + "/schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				cpu += time.Duration(ns)
			}
		}
		b, _ := os.ReadFile(t + "/status")
		for line := range strings.Lines(string(b)) {
			if n, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				v, _ := strconv.Atoi(strings.TrimSpace(n))
				waits += v
			}
		}
	}
	return cpu, waits
}

// ProcessMemory is one field of process pid's /proc/PID/smaps_rollup ("Rss",
// "Pss", "Pss_Anon", ...) in bytes, or 0 when it cannot be read (the
// process is gone).
func ProcessMemory(pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}
