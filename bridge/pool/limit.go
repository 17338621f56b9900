package pool

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// A limiter bounds the tool calls in flight on one server's session: at
// most size at once, and at most queue more waiting for a slot, served in
// the order they came (a [semaphore.Weighted] of weight-one requests is
// first come, first served).
type limiter struct {
	size, queue int
	sem         *semaphore.Weighted
	pending     atomic.Int64 // calls holding a slot or waiting for one
}

// errQueueFull: every slot is taken and queue calls are waiting already.
var errQueueFull = errors.New("every call slot is taken and the queue is full")

func newLimiter(size, queue int) *limiter {
	return &limiter{size: size, queue: queue, sem: semaphore.NewWeighted(int64(size))}
}

// acquire takes a slot, waiting in line for one until ctx is done, or
// fails at once with errQueueFull. After an error the caller holds nothing;
// after nil it must call release.
func (l *limiter) acquire(ctx context.Context) error {
	if l.pending.Add(1) > int64(l.size+l.queue) {
		l.pending.Add(-1)
		return errQueueFull
	}
	if err := l.sem.Acquire(ctx, 1); err != nil {
		l.pending.Add(-1)
		return err
	}
	return nil
}

// release gives back a slot taken by acquire. The count drops first, so
// that a call arriving meanwhile waits for the slot rather than being
// refused while it is being freed.
func (l *limiter) release() {
	l.pending.Add(-1)
	l.sem.Release(1)
}

// waiting returns how many calls wait for a slot now.
func (l *limiter) waiting() int {
	return max(int(l.pending.Load())-l.size, 0)
}
