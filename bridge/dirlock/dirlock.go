// Package dirlock serialises the writers of a folder across goroutines and
// processes: [Lock] holds an exclusive lock on the folder's .lock file (flock
// on Unix, LockFileEx on Windows; on other systems, within this process
// only). The lock belongs to the open file, so a process that dies releases
// it. The memory store, the helpers, the pins, the OAuth records and the
// audit log use it.
//
// No wait is unbounded: a process that holds a lock and is stopped (SIGSTOP,
// a suspended laptop on NFS) makes the others fail with [ErrHeld] after
// [DefaultWait], or sooner when their context ends, instead of hanging.
package dirlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultWait is the longest any lock of this package is waited for: by
// [Lock], and by [LockContext] and [File.Lock] when their context has no
// earlier deadline. Writers hold these locks for one small write, so a wait
// this long means the holder is stopped or stuck.
const DefaultWait = 10 * time.Second

// ErrHeld says another holder kept the lock for the whole wait.
var ErrHeld = errors.New("lock held by another process")

// Backoff between tries: from minBackoff, doubling up to maxBackoff.
const (
	minBackoff = time.Millisecond
	maxBackoff = 50 * time.Millisecond
)

// Lock creates dir if needed and takes its writers' lock, waiting at most
// [DefaultWait]; unlock releases it.
func Lock(dir string) (unlock func(), err error) {
	return LockContext(context.Background(), dir)
}

// LockContext is [Lock] waiting until ctx ends, and at most [DefaultWait].
func LockContext(ctx context.Context, dir string) (unlock func(), err error) {
	l, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if err := l.Lock(ctx); err != nil {
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

// Path is the lock file's path.
func (l *File) Path() string { return l.f.Name() }

// TryLock takes the lock if it is free, without waiting; ok is false when
// another holder has it.
func (l *File) TryLock() (ok bool, err error) {
	ok, err = tryLockFile(l.f)
	if err != nil {
		return false, fmt.Errorf("locking %s: %w", l.f.Name(), err)
	}
	return ok, nil
}

// Lock takes the lock, trying again with a short backoff until ctx ends or
// [DefaultWait] has passed; then the error wraps [ErrHeld] and says how to
// find the holder.
func (l *File) Lock(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultWait)
	defer cancel()
	start := time.Now()
	var t *time.Timer
	for backoff := minBackoff; ; backoff = min(2*backoff, maxBackoff) {
		ok, err := l.TryLock()
		if err != nil || ok {
			return err
		}
		if t == nil {
			t = time.NewTimer(backoff)
			defer t.Stop()
		} else {
			t.Reset(backoff)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return l.heldError(time.Since(start))
		}
	}
}

func (l *File) heldError(waited time.Duration) error {
	p := l.f.Name()
	return fmt.Errorf("%w: %s was held for %s by another process (or another open of it in this one): find it with 'fuser -v %s' or 'lsof %s', then resume or stop that process",
		ErrHeld, p, waited.Round(time.Millisecond), p, p)
}

// Unlock releases the lock.
func (l *File) Unlock() { unlockFile(l.f) }

// Close closes the lock file, releasing the lock if it is held.
func (l *File) Close() error { return l.f.Close() }
