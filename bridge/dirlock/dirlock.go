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
	l, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if err := l.Lock(); err != nil {
		l.Close()
		return nil, err
	}
	return func() {
		l.Unlock()
		l.Close()
	}, nil
}

// File is a folder's lock file kept open, for a writer that takes the lock
// often. If the folder is removed while it is open, it no longer excludes a
// process that makes the folder again: close it and open the new one.
type File struct{ f *os.File }

// Open creates dir if needed and opens its lock file.
func Open(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of %s: %w", dir, err)
	}
	return &File{f}, nil
}

// Lock blocks until it holds the folder's lock.
func (l *File) Lock() error {
	if err := lockFile(l.f); err != nil {
		return fmt.Errorf("locking %s: %w", l.f.Name(), err)
	}
	return nil
}

// Unlock releases the lock.
func (l *File) Unlock() { unlockFile(l.f) }

// Close closes the lock file, releasing the lock if it is held.
func (l *File) Close() error { return l.f.Close() }
