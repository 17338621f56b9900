package dirlock

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockGivesUp: a lock held by another open file (as a stopped peer
// process would hold it) makes Lock fail when its context ends, with an
// error that names the lock file and says how to find the holder; once it is
// released, Lock takes it.
func TestLockGivesUp(t *testing.T) {
	dir := t.TempDir()
	holder, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock of a free lock: %v, %v", ok, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = LockContext(ctx, dir)
	path := filepath.Join(dir, ".lock")
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "fuser") {
		t.Fatalf("LockContext on a held lock: %v, want ErrHeld naming %s and fuser", err, path)
	}
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ok, err := other.TryLock(); ok || err != nil {
		t.Fatalf("TryLock of a held lock: %v, %v; want false, nil", ok, err)
	}

	holder.Unlock()
	unlock, err := LockContext(t.Context(), dir)
	if err != nil {
		t.Fatalf("LockContext once released: %v", err)
	}
	unlock()
}

// TestLockWaitsForRelease: Lock waits while the lock is held and takes it
// when the holder lets go.
func TestLockWaitsForRelease(t *testing.T) {
	dir := t.TempDir()
	holder, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock: %v, %v", ok, err)
	}
	tried := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		l, err := Open(dir)
		if err != nil {
			done <- err
			return
		}
		defer l.Close()
		if ok, _ := l.TryLock(); ok {
			done <- errors.New("took a held lock")
			return
		}
		close(tried)
		done <- l.Lock(t.Context())
	}()
	select {
	case <-tried:
	case err := <-done:
		t.Fatal(err)
	}
	holder.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("Lock after the release: %v", err)
	}
}
