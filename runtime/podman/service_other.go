//go:build !linux

package podman

import (
	"errors"
	"os"
	"syscall"
)

var sigterm os.Signal = syscall.SIGTERM

// serviceProcAttr is nil off Linux: there is no parent-death signal, so a
// private service started here can outlive a codebridge that is killed hard.
func serviceProcAttr() *syscall.SysProcAttr { return nil }

func processStart(int) (string, bool) { return "", false }

// processAlive reports whether a process with this pid exists. When the
// platform cannot tell, it says yes: leaving a leftover is better than
// removing a live instance's container.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return !errors.Is(err, os.ErrProcessDone)
}
