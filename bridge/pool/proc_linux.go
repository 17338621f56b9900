package pool

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group, so that stopping it
// also stops what it started (npx starts node), and has the kernel kill it when
// codebridge dies.
//
// Pdeathsig fires when the thread that started the child exits; the Go runtime
// does not end threads unless a goroutine locked to one exits, which the pool
// never does.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
}

// killGroup kills the process group pid leads, if any of it remains.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
