package front

import (
	"container/list"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventStore keeps the events of MCP sessions' streams so that a client
// whose connection drops can resume one ([mcp.EventStore]). go-sdk's
// MemoryEventStore keeps every stream a session ever opened, one per POST,
// until the session ends: its bytes are bounded across sessions, but not its
// streams, so a session's codebridge grew by about 400 bytes of live heap a
// run for as long as the session lived, and by five times that with serve
// --http's GOGC (docs/performance.md). This one keeps, in each session, only the
// streams used most recently (a client resumes the stream its connection
// just lost, not one from hundreds of runs ago), and at most maxBytes of
// events in all, dropping the streams used least recently first.
//
// go-sdk counts each stream's events itself; a stream dropped while still in
// use and then written to again can no longer be replayed: After answers
// [mcp.ErrEventsPurged], as MemoryEventStore does for purged events.
type eventStore struct {
	maxBytes   int // events kept across sessions
	maxStreams int // streams kept in each session, besides its standalone one

	mu       sync.Mutex // protects following
	bytes    int
	sessions map[string]*sessionStreams
	lru      list.List // of *streamEvents, least recently used first
}

// sessionStreams are one session's streams kept.
type sessionStreams struct {
	byID map[string]*streamEvents
	lru  list.List // of *streamEvents, least recently used first
}

// streamEvents are one stream's events kept, all of them unless lost.
type streamEvents struct {
	session, stream string
	lost            bool // dropped in use and written to again: its indexes are unknown
	data            [][]byte
	bytes           int
	all, own        *list.Element // in eventStore.lru and sessionStreams.lru
}

func newEventStore(maxBytes, maxStreams int) *eventStore {
	return &eventStore{maxBytes: maxBytes, maxStreams: maxStreams, sessions: map[string]*sessionStreams{}}
}

// Open implements [mcp.EventStore].
func (s *eventStore) Open(_ context.Context, session, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.use(session, stream, false)
	return nil
}

// Append implements [mcp.EventStore]. A stream's own events are never
// dropped to make room for its next: at least the one appended is kept.
func (s *eventStore) Append(_ context.Context, session, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.use(session, stream, true) // lost if not open: dropped in use
	ev.data = append(ev.data, data)
	ev.bytes += len(data)
	s.bytes += len(data)
	for s.bytes > s.maxBytes && s.lru.Front() != ev.all {
		s.drop(s.lru.Front().Value.(*streamEvents))
	}
	return nil
}

// After implements [mcp.EventStore].
func (s *eventStore) After(_ context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var data [][]byte
	var err error
	var ev *streamEvents
	if ss := s.sessions[session]; ss != nil {
		ev = ss.byID[stream]
	}
	switch {
	case ev == nil:
		err = fmt.Errorf("stream %q of session %q is no longer kept: %w", stream, session, mcp.ErrEventsPurged)
	case ev.lost || index < -1: // -1 asks for all of them
		err = fmt.Errorf("stream %q of session %q after event %d: %w", stream, session, index, mcp.ErrEventsPurged)
	case index+1 < len(ev.data):
		data = slices.Clone(ev.data[index+1:])
	}
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed implements [mcp.EventStore].
func (s *eventStore) SessionClosed(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[session]; ss != nil {
		for _, ev := range ss.byID {
			s.drop(ev)
		}
	}
	return nil
}

// use returns a stream's events, made the most recently used; a new one is
// lost if so told. One past maxStreams in its session drops the
// session's least recently used, never its standalone stream (ID "").
func (s *eventStore) use(session, stream string, lost bool) *streamEvents {
	ss := s.sessions[session]
	if ss == nil {
		ss = &sessionStreams{byID: map[string]*streamEvents{}}
		s.sessions[session] = ss
	}
	if ev := ss.byID[stream]; ev != nil {
		s.lru.MoveToBack(ev.all)
		ss.lru.MoveToBack(ev.own)
		return ev
	}
	ev := &streamEvents{session: session, stream: stream, lost: lost}
	ev.all, ev.own = s.lru.PushBack(ev), ss.lru.PushBack(ev)
	ss.byID[stream] = ev
	kept := len(ss.byID)
	if ss.byID[""] != nil {
		kept--
	}
	if kept > s.maxStreams { // maxStreams is at least 1: the new one is not the oldest
		oldest := ss.lru.Front().Value.(*streamEvents)
		if oldest.stream == "" {
			oldest = ss.lru.Front().Next().Value.(*streamEvents)
		}
		s.drop(oldest)
	}
	return ev
}

// drop forgets a stream's events.
func (s *eventStore) drop(ev *streamEvents) {
	ss := s.sessions[ev.session]
	s.lru.Remove(ev.all)
	ss.lru.Remove(ev.own)
	s.bytes -= ev.bytes
	delete(ss.byID, ev.stream)
	if len(ss.byID) == 0 {
		delete(s.sessions, ev.session)
	}
}
