//go:build !unix

package setup

import "syscall"

// detached: no sessions here.
func detached() *syscall.SysProcAttr { return nil }
