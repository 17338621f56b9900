package podman

import (
	"os"
	"syscall"
)

var sigterm os.Signal = syscall.SIGTERM

// serviceProcAttr puts the service in its own process group and has the
// kernel send it SIGTERM when the thread that started it (in Go, in practice,
// the process) exits, so a private service never outlives codebridge.
func serviceProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
