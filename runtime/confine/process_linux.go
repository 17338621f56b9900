package confine

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessStart returns the start time of process pid (field 22 of
// /proc/PID/stat, clock ticks since boot), which tells a live process from a
// later one that reused its pid.
func ProcessStart(pid int) (string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name (field 2) may contain spaces and parentheses; fields
	// after it start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// ProcessAlive reports whether a process with this pid exists.
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
