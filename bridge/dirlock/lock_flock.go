//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dirlock

import (
	"os"

	"golang.org/x/sys/unix"
)

// tryLockFile takes an exclusive flock on f if no one else holds one. flock
// locks belong to the open file, so two opens in one process exclude each
// other too.
func tryLockFile(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch err {
		case nil:
			return true, nil
		case unix.EWOULDBLOCK:
			return false, nil
		case unix.EINTR:
			continue
		default:
			return false, err
		}
	}
}

func unlockFile(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
