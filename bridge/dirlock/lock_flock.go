//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dirlock

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile blocks until it holds an exclusive flock on f. flock locks belong
// to the open file, so two opens in one process exclude each other too.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
