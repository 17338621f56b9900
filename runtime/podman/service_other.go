//go:build !linux

package podman

import (
	"os"
	"syscall"
)

var sigterm os.Signal = syscall.SIGTERM

// serviceProcAttr is nil off Linux: there is no parent-death signal, so a
// private service started here can outlive a codebridge that is killed hard.
func serviceProcAttr() *syscall.SysProcAttr { return nil }
