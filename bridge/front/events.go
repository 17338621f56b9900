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
// events in all. Past that bound, each session has an equal share of it: the
// session keeping the most loses its stream used least recently, or the
// oldest events of the one it is writing, so one client's large outputs never
// take from a session that keeps less than its share.
//
// go-sdk counts each stream's events itself; a stream dropped while still in
// use and then written to again can no longer be replayed, nor can events
// dropped from a stream's start: After answers [mcp.ErrEventsPurged], as
// MemoryEventStore does for purged events.
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
	byID  map[string]*streamEvents
	lru   list.List // of *streamEvents, least recently used first
	bytes int       // of its streams' events
}

// streamEvents are one stream's events kept, all of them unless lost.
type streamEvents struct {
	session, stream string
	lost            bool // dropped in use and written to again: its indexes are unknown
	first           int  // index of data[0]: the events before it were dropped
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
	s.sessions[session].bytes += len(data)
	s.bytes += len(data)
	for s.bytes > s.maxBytes && s.shed(ev) {
	}
	return nil
}

// shed drops events of the session that keeps the most, if it keeps more
// than its share of maxBytes: its stream used least recently, or, when that
// is ev (the stream just written), ev's oldest event but never its last. It
// reports whether it dropped anything.
func (s *eventStore) shed(ev *streamEvents) bool {
	share := s.maxBytes / len(s.sessions)
	var most *sessionStreams
	for e := s.lru.Front(); e != nil; e = e.Next() { // of equals, the one used least recently
		ss := s.sessions[e.Value.(*streamEvents).session]
		if ss.bytes > share && (most == nil || ss.bytes > most.bytes) && sheddable(ss, ev) {
			most = ss
		}
	}
	if most == nil {
		return false
	}
	if oldest := most.lru.Front().Value.(*streamEvents); oldest != ev {
		s.drop(oldest)
		return true
	}
	n := len(ev.data[0])
	ev.data[0] = nil
	ev.data = ev.data[1:]
	ev.first++
	ev.bytes -= n
	most.bytes -= n
	s.bytes -= n
	return true
}

// sheddable reports whether ss has events shed may drop: any but ev's last.
func sheddable(ss *sessionStreams, ev *streamEvents) bool {
	return ss.lru.Front().Value.(*streamEvents) != ev || len(ev.data) > 1
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
	case ev.lost || index < ev.first-1: // -1 asks for all of them
		err = fmt.Errorf("stream %q of session %q after event %d: %w", stream, session, index, mcp.ErrEventsPurged)
	case index+1 < ev.first+len(ev.data):
		data = slices.Clone(ev.data[index+1-ev.first:])
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
	ss.bytes -= ev.bytes
	delete(ss.byID, ev.stream)
	if len(ss.byID) == 0 {
		delete(s.sessions, ev.session)
	}
}
