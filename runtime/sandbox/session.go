package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// session is one caller's sandbox: a container and its interpreter, started
// on the first run and again after the previous one ended.
//
// Runs take turns in arrival order: the turn is held by one run at a time,
// and a run that gives up waiting leaves the queue. Fields marked (turn) are
// used only by the holder of the turn.
type session struct {
	m    *Manager
	key  string
	idle *time.Timer // ends the session when it fires after IdleTimeout

	ct     Container           // (turn) nil until started
	it     *python.Interpreter // (turn) nil when not running
	id     string              // (turn) of the current interpreter
	reason string              // (turn) why the next interpreter starts
	alive  atomic.Bool         // an interpreter is running
	used   atomic.Int64        // when the last run ended, unix nanoseconds

	mu      sync.Mutex // protects following
	held    bool
	waiters []chan struct{}
}

// acquire waits for the session's turn, in arrival order, or for ctx.
func (s *session) acquire(ctx context.Context) error {
	s.mu.Lock()
	if !s.held {
		s.held = true
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i:i], s.waiters[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		// The turn was handed to us as ctx ended: pass it on.
		s.releaseTurn()
		return ctx.Err()
	}
}

// tryAcquire takes the turn only if nobody holds it.
func (s *session) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return false
	}
	s.held = true
	return true
}

// releaseTurn hands the turn to the first waiter, if any.
func (s *session) releaseTurn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) == 0 {
		s.held = false
		return
	}
	next := s.waiters[0]
	s.waiters = s.waiters[1:]
	close(next)
}

// busy reports whether a run holds or waits for the turn.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held || len(s.waiters) > 0
}

func (s *session) touch() { s.used.Store(time.Now().UnixNano()) }

func (s *session) lastUsed() time.Time { return time.Unix(0, s.used.Load()) }

// end closes the interpreter and removes the container (turn); the next run
// starts a new session and is told reason ("" when nobody will be told).
func (s *session) end(ctx context.Context, reason string) {
	s.kill(ctx)
	s.reason = reason
}

// kill stops the interpreter and has the container removed (in the
// background: the caller's run need not wait for Podman).
func (s *session) kill(ctx context.Context) {
	s.alive.Store(false)
	if s.it != nil {
		s.it.Close()
		s.it = nil
	}
	if s.ct != nil {
		s.m.remove(ctx, s.ct)
		s.ct = nil
	}
}
