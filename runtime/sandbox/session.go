package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// session is one caller's sandbox: a container and its interpreter, started
// on the first run and again after the previous one ended.
//
// The turn: a session's runs take it in arrival order, one at a time, and a
// run that gives up waiting leaves the queue. Fields marked (turn) belong to
// the holder of the turn, and every path that touches them takes it first:
// runs, idle expiry and eviction ([session.tryAcquire]), and End and Close,
// which mark the session gone and then wait for the turn, cancelling its
// holder when they cannot wait ([session.retire]). Whoever holds the turn of
// a gone session ends it before handing the turn on ([session.release]), so
// only a holder of the turn ever ends a session.
type session struct {
	m      *Manager
	key    string
	handle string      // names the session for its owner, from any call
	ref    HandleRef   // of handle and its owner
	idle   *time.Timer // ends the session when it fires after IdleTimeout

	ct     Container           // (turn) nil until started
	it     *python.Interpreter // (turn) nil when not running
	id     string              // (turn) of the current interpreter
	reason string              // (turn) why the next interpreter starts
	away   bool                // (turn) another replica took the container: the next run takes it back ([Adopter])

	mu       sync.Mutex // protects following
	detached bool       // reachable by handle only: forgotten when it idles out or is evicted
	state    state
	used     time.Time          // when the last run ended
	held     bool               // someone holds the turn
	stop     context.CancelFunc // cancels the holder's run; nil when it has none
	waiters  []waiter
}

// state is where a session is in its life; only [session.set] moves it.
type state int

const (
	stateEmpty state = iota // no interpreter: the next run starts one
	stateLive               // an interpreter is running
	stateGone               // removed from its manager: no run uses it again, and the holder of the turn ends it
)

// waiter is a run waiting for the turn, and how to cancel it once it holds it.
type waiter struct {
	ready chan struct{}
	stop  context.CancelFunc
}

// set moves s to state to, except that a gone session stays gone.
func (s *session) set(to state) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateGone {
		s.state = to
	}
}

func (s *session) current() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// acquire waits for the session's turn, in arrival order, or for ctx. stop,
// if not nil, cancels what the caller does with the turn: [session.retire]
// calls it to end the session.
func (s *session) acquire(ctx context.Context, stop context.CancelFunc) error {
	s.mu.Lock()
	if !s.held {
		s.held, s.stop = true, stop
		s.mu.Unlock()
		return nil
	}
	w := waiter{ready: make(chan struct{}), stop: stop}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, o := range s.waiters {
			if o.ready == w.ready {
				s.waiters = append(s.waiters[:i:i], s.waiters[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		// The turn was handed to us as ctx ended: pass it on.
		s.release(context.WithoutCancel(ctx))
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
	s.held, s.stop = true, nil
	return true
}

// release hands the turn to the first waiter, if any. The holder of a gone
// session's turn ends the session first: nobody else may.
func (s *session) release(ctx context.Context) {
	for !s.handOn() {
		s.end(ctx, "")
	}
}

// handOn hands the turn on, unless s is gone and still has a container or
// interpreter to end.
func (s *session) handOn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateGone && (s.it != nil || s.ct != nil) {
		return false
	}
	if len(s.waiters) == 0 {
		s.held, s.stop = false, nil
		return true
	}
	next := s.waiters[0]
	s.waiters = s.waiters[1:]
	s.stop = next.stop
	close(next.ready)
	return true
}

// retire marks s gone, so that no run uses it again and the holder of its
// turn ends it; with cancel, the holder's run is cancelled too.
func (s *session) retire(cancel bool) {
	s.set(stateGone)
	if !cancel {
		return
	}
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// busy reports whether a run holds or waits for the turn.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held || len(s.waiters) > 0
}

func (s *session) detach() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detached = true
}

func (s *session) isDetached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.detached
}

func (s *session) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used = time.Now()
}

func (s *session) lastUsed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// end closes the interpreter and removes the container (turn); the next run
// starts a new session and is told reason ("" when nobody will be told).
func (s *session) end(ctx context.Context, reason string) {
	s.set(stateEmpty)
	if s.it != nil {
		s.it.Close()
		s.it = nil
	}
	if s.ct != nil {
		// In the background: the caller's run need not wait for Podman.
		s.m.remove(ctx, s.ct)
		s.ct = nil
	}
	s.reason = reason
}
