//go:build !linux

package confine

import (
	"errors"
	"os"
	"syscall"
)

// ProcessStart is unknown off Linux.
func ProcessStart(int) (string, bool) { return "", false }

// ProcessAlive reports whether a process with this pid exists. When the
// platform cannot tell, it says yes: leaving a leftover is better than
// removing a live instance's container.
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return !errors.Is(err, os.ErrProcessDone)
}
