//go:build !linux

package podman

import (
	"context"
	"syscall"
)

// serviceProcAttr is nil off Linux, where Podman runs in a virtual machine
// and codebridge does not start a service of its own in practice.
func serviceProcAttr() *syscall.SysProcAttr { return nil }

// lockFile does not lock off Linux (see serviceProcAttr).
func lockFile(context.Context, string) (unlock func(), err error) { return func() {}, nil }
