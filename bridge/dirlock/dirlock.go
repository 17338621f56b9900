// Package dirlock serialises the writers of a folder across goroutines and
// processes: [Lock] holds an exclusive lock on the folder's .lock file (flock
// on Unix, LockFileEx on Windows; on other systems, within this process
// only). The lock belongs to the open file, so a process that dies releases
// it. The memory store and the audit log use it.
package dirlock

import (
	"fmt"
	"os"
	"path/filepath"
)

// Lock creates dir if needed and takes its writers' lock; unlock releases it.
func Lock(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of %s: %w", dir, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
}
