package enginekit

import "sync"

// Live is the set of an engine's sandboxes not yet removed, and whether the
// engine is closed: every driver's engine keeps one, so that closing hands
// back, once, each sandbox still live, and none is added after. Whatever an
// engine must decide together with "closed" (e.g. whether to keep a new
// connection) it decides under its own lock after [Live.Closed], and Close
// takes that lock after [Live.Close]. The zero value is open and empty.
type Live[B comparable] struct {
	mu     sync.Mutex
	set    map[B]struct{}
	closed bool
}

// Add records b as live and reports true, unless the set is closed.
func (l *Live[B]) Add(b B) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.set == nil {
		l.set = map[B]struct{}{}
	}
	l.set[b] = struct{}{}
	return true
}

// Remove forgets b; forgetting one not in the set does nothing.
func (l *Live[B]) Remove(b B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.set, b)
}

// Closed reports whether [Live.Close] has been called.
func (l *Live[B]) Closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close closes the set and returns what was live in it. first is false when
// it was closed already; live is then empty.
func (l *Live[B]) Close() (live []B, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false
	}
	l.closed = true
	live = make([]B, 0, len(l.set))
	for b := range l.set {
		live = append(live, b)
	}
	l.set = nil
	return live, true
}
