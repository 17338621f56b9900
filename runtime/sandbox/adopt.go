package sandbox

import (
	"context"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// Adopter is an [Engine] whose sandboxes outlive the codebridge replica
// that started them and are reachable from every replica (Kubernetes pods
// whose interpreter serves its stream in the pod). With one, a handle works
// from any replica: the [Manager] marks each session's container with its
// [HandleRef] and id, and a call whose handle names no session of this
// replica adopts the container marked with it, interpreter and state
// intact, instead of failing. The replica that held it loses its stream; its
// next run of that session adopts it back.
type Adopter interface {
	// Mark records on ct that it is the sandbox of the session id whose
	// handle ref names, so that Adopt finds it from any replica.
	Mark(ctx context.Context, ct Container, ref HandleRef, id string) error
	// Adopt finds the live container marked with ref, makes it this
	// replica's (its shutdown then removes it, the replica that held it no
	// longer does) and opens a new stream to it; runs is how many runs its
	// interpreter has served. It fails with [ErrUnknownHandle] when no
	// container is marked with ref.
	Adopt(ctx context.Context, ref HandleRef) (ct Container, id string, runs int, err error)
	// Lost reports whether ct's container has been adopted since ct was
	// started or adopted (by another replica, or by this one over another
	// stream). Removing a lost ct must leave its container alone.
	Lost(ctx context.Context, ct Container) bool
}

// ReasonMoved is [SessionInfo.Reason] of a run that ended because another
// replica took its session's sandbox (a call with the session's handle
// reached it) while the run started: its code may not have run. The next
// run takes the sandbox back.
const ReasonMoved = "moved"

// adopter is the manager's engine as an [Adopter], or nil.
func (m *Manager) adopter() Adopter {
	a, _ := m.eng.(Adopter)
	return a
}

// mark records s's handle on its new container, where the engine lets every
// replica find it. A failure only costs the other replicas the session.
func (m *Manager) mark(ctx context.Context, s *session) {
	a := m.adopter()
	if a == nil {
		return
	}
	if err := a.Mark(ctx, s.ct, s.ref, s.id); err != nil {
		m.log.Warn("marking the sandbox with its session's handle: other replicas cannot continue the session", "session", s.id, "err", err)
	}
}

// adopt makes a session of the container another replica holds for ref,
// for a call with its handle; it fails with ErrUnknownHandle when there is
// none. The session is detached: only its handle reaches it here.
func (m *Manager) adopt(ctx context.Context, req Request, ref HandleRef) (*session, error) {
	a := m.adopter()
	if a == nil {
		return nil, ErrUnknownHandle
	}
	// One adoption at a time: two calls with one handle must not take the
	// sandbox from each other.
	m.adoptMu.Lock()
	defer m.adoptMu.Unlock()
	if key, err := m.handles.Resolve(ctx, ref); err == nil {
		m.mu.Lock()
		s := m.sessions[key]
		m.mu.Unlock()
		if s != nil && s.ref == ref {
			return s, nil // adopted by the call before this one
		}
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, errShutDown
	}
	ct, id, runs, err := a.Adopt(ctx, ref)
	if err != nil {
		return nil, err
	}
	s := &session{m: m, key: "adopted/" + newID(), handle: req.Handle, ref: ref, detached: true, reason: ReasonFirst}
	s.ct, s.it, s.id = ct, python.Resume(ct.Stream(), runs, m.opts.Limits), id
	s.state = stateLive
	s.idle = time.AfterFunc(time.Hour, func() { m.expire(s) })
	s.idle.Stop()
	m.mu.Lock()
	m.sessions[s.key] = s
	m.mu.Unlock()
	if err := m.handles.Bind(ctx, ref, s.key); err != nil {
		m.End(ctx, s.key)
		return nil, err
	}
	m.log.Info("sandbox session continued from another replica", "session", id, "runs", runs)
	return s, nil
}

// moved reports whether s's interpreter ended because another replica took
// its container; if so, s lets go of it (the container stays, the other
// replica's) and the next run takes it back. The caller holds the turn.
func (m *Manager) moved(ctx context.Context, s *session) bool {
	a := m.adopter()
	if a == nil || s.ct == nil || !a.Lost(ctx, s.ct) {
		return false
	}
	m.log.Info("sandbox session taken by another replica", "session", s.id)
	s.it.Close()
	s.it = nil
	s.m.remove(ctx, s.ct) // the engine removes only what is still this replica's
	s.ct = nil
	s.set(stateEmpty)
	s.reason, s.away = ReasonMoved, true
	return true
}

// takeBack adopts s's container again after another replica took it (s.away).
// It reports whether it did; if the container is gone, s starts afresh.
func (m *Manager) takeBack(ctx context.Context, s *session) bool {
	s.away = false
	ct, id, runs, err := m.adopter().Adopt(ctx, s.ref)
	if err != nil {
		m.log.Info("the sandbox another replica took is gone: starting a new one", "session", s.id, "err", err)
		return false
	}
	s.ct, s.it, s.id = ct, python.Resume(ct.Stream(), runs, m.opts.Limits), id
	s.set(stateLive)
	return true
}
