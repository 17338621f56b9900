//go:build unix

package setup

import "syscall"

// detached puts a process in a session of its own, so it outlives setup
// and a Ctrl-C meant for setup.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
