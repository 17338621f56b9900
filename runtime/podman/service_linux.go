package podman

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// serviceProcAttr gives the service its own session: it serves every
// codebridge of this user, so a signal to this one's process group or
// terminal must not reach it. It exits by itself once idle.
func serviceProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// lockFile takes an exclusive flock on path, creating it, waiting while
// another process holds it until ctx ends; unlock releases it. The lock
// belongs to the open file, so a process that dies releases it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s: %w", path, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
