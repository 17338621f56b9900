package front

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bg is the context of the store's calls: it uses none.
var bg = context.Background()

// replay is what After yields for a stream after index, or its error.
func replay(s *eventStore, session, stream string, index int) ([]string, error) {
	var got []string
	for d, err := range s.After(bg, session, stream, index) {
		if err != nil {
			return got, err
		}
		got = append(got, string(d))
	}
	return got, nil
}

func TestEventStoreReplays(t *testing.T) {
	s := newEventStore(1<<20, 4)
	s.Open(bg, "a", "1")
	for _, d := range []string{"", "x", "y"} { // a priming event, then two
		s.Append(bg, "a", "1", []byte(d))
	}
	for _, c := range []struct {
		index int
		want  []string
	}{{-1, []string{"", "x", "y"}}, {0, []string{"x", "y"}}, {2, nil}} {
		got, err := replay(s, "a", "1", c.index)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("After(%d) = %q, %v; want %q", c.index, got, err, c.want)
		}
	}
	if _, err := replay(s, "a", "1", -2); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("an index before the first: %v, want ErrEventsPurged", err)
	}
	if _, err := replay(s, "a", "2", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("a stream never opened: %v, want ErrEventsPurged", err)
	}
}

// TestEventStoreKeepsRecentStreams checks that a session keeps only its
// most recent streams and its standalone one, however many it opens: what
// made a long session grow with every run.
func TestEventStoreKeepsRecentStreams(t *testing.T) {
	s := newEventStore(1<<20, 4)
	s.Open(bg, "a", "")
	s.Append(bg, "a", "", []byte("standalone"))
	for i := range 1000 {
		id := fmt.Sprint(i)
		s.Open(bg, "a", id)
		s.Append(bg, "a", id, []byte("r"+id))
		if i == 500 { // another session's stream, used once long ago
			s.Open(bg, "b", "x")
		}
	}
	if n := len(s.sessions["a"].byID); n != 5 {
		t.Errorf("session a keeps %d streams, want 4 and its standalone one", n)
	}
	if s.lru.Len() != 6 || s.bytes != len("standalone")+4*len("r999") {
		t.Errorf("%d streams and %d bytes kept in all", s.lru.Len(), s.bytes)
	}
	for _, id := range []string{"", "996", "999"} {
		if _, err := replay(s, "a", id, -1); err != nil {
			t.Errorf("stream %q: %v", id, err)
		}
	}
	if _, err := replay(s, "a", "995", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("the fifth most recent stream: %v, want ErrEventsPurged", err)
	}
	s.SessionClosed(bg, "a")
	s.SessionClosed(bg, "b")
	if len(s.sessions) != 0 || s.lru.Len() != 0 || s.bytes != 0 {
		t.Errorf("after the sessions closed: %d sessions, %d streams, %d bytes", len(s.sessions), s.lru.Len(), s.bytes)
	}
}

// TestEventStoreBytes checks the bound across sessions: the streams used
// least recently go first, never the one being written, and one dropped in
// use can no longer be replayed.
func TestEventStoreBytes(t *testing.T) {
	s := newEventStore(10, 32)
	s.Open(bg, "a", "1")
	s.Append(bg, "a", "1", []byte("aaaa"))
	s.Open(bg, "b", "1")
	s.Append(bg, "b", "1", []byte("bbbb"))
	s.Open(bg, "c", "1")
	s.Append(bg, "c", "1", []byte("cccc")) // 12 bytes: a's stream goes
	if _, err := replay(s, "a", "1", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("the stream used least recently: %v, want it dropped", err)
	}
	if got, err := replay(s, "b", "1", -1); err != nil || !slices.Equal(got, []string{"bbbb"}) {
		t.Errorf("b's stream: %q, %v", got, err)
	}
	s.Append(bg, "c", "1", []byte("0123456789")) // larger than the bound alone
	if got, err := replay(s, "c", "1", 0); err != nil || !slices.Equal(got, []string{"0123456789"}) {
		t.Errorf("the stream written: %q, %v; want its last event kept", got, err)
	}
	s.Append(bg, "a", "1", []byte("late")) // a's stream, dropped, written again
	if _, err := replay(s, "a", "1", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("a stream dropped in use: %v, want ErrEventsPurged (its indexes are lost)", err)
	}
}

// TestEventStoreFairShare: when the bound across sessions is reached, the
// session over its share of it loses its oldest events, not another session
// that keeps less than its share.
func TestEventStoreFairShare(t *testing.T) {
	s := newEventStore(100, 32)
	s.Open(bg, "quiet", "1")
	s.Append(bg, "quiet", "1", []byte("0123456789")) // 10 bytes: under its share of 50
	s.Open(bg, "loud", "1")
	for range 30 {
		s.Append(bg, "loud", "1", []byte("0123456789"))
	}
	if got, err := replay(s, "quiet", "1", -1); err != nil || !slices.Equal(got, []string{"0123456789"}) {
		t.Errorf("the quiet session's stream: %q, %v; want its event kept", got, err)
	}
	if s.bytes > 100 {
		t.Errorf("%d bytes kept, want at most 100", s.bytes)
	}
	// The loud stream lost its oldest events: its latest are still there,
	// and asking from the start says some are gone.
	if got, err := replay(s, "loud", "1", 28); err != nil || len(got) != 1 {
		t.Errorf("the loud stream after its 29th event: %q, %v; want its last event", got, err)
	}
	if _, err := replay(s, "loud", "1", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("the loud stream from its start: %v, want ErrEventsPurged", err)
	}
}

// FuzzEventStore runs sequences of the store's calls and checks its
// invariants after each: its byte count is that of the events kept, a
// session keeps at most streamsKept streams besides its standalone one, the
// bytes kept stay under the bound (plus one event), calls on
// a session gone do not panic, and a session under its share of the bound
// never loses events to another's appends.
func FuzzEventStore(f *testing.F) {
	f.Add([]byte{1, 0, 5, 1, 0, 200, 5, 0, 200, 2, 0, 0, 3, 0})
	f.Add([]byte{1, 4, 1, 1, 5, 255, 1, 5, 255, 3, 4, 2, 4, 0, 3, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const maxBytes = 300
		s := newEventStore(maxBytes, streamsKept)
		sessions := []string{"a", "b", "c"}
		sessionBytes := func() map[string]int {
			m := map[string]int{}
			for id, ss := range s.sessions {
				for _, ev := range ss.byID {
					m[id] += ev.bytes
				}
			}
			return m
		}
		for len(ops) >= 2 {
			op, session, arg := ops[0]%4, sessions[ops[0]/4%3], ops[1]
			ops = ops[2:]
			stream := fmt.Sprint(arg % 40)
			if arg%40 == 0 {
				stream = ""
			}
			switch op {
			case 0:
				s.Open(bg, session, stream)
			case 1:
				before := sessionBytes()
				n := len(s.sessions)
				if s.sessions[session] == nil {
					n++
				}
				share := maxBytes / n
				s.Append(bg, session, stream, make([]byte, arg))
				after := sessionBytes()
				for id, b := range before {
					if id != session && b <= share && after[id] != b {
						t.Fatalf("session %s kept %d bytes, under its share %d, and lost %d to %s's append", id, b, share, b-after[id], session)
					}
				}
			case 2:
				for range s.After(bg, session, stream, int(arg%8)-2) {
				}
			case 3:
				s.SessionClosed(bg, session)
				if _, err := replay(s, session, stream, -1); !errors.Is(err, mcp.ErrEventsPurged) {
					t.Fatalf("a stream of a closed session: %v, want ErrEventsPurged", err)
				}
			}
			total, streams, biggest := 0, 0, 0
			for id, ss := range s.sessions {
				kept := 0
				for sid, ev := range ss.byID {
					sum := 0
					for _, d := range ev.data {
						sum += len(d)
						biggest = max(biggest, len(d))
					}
					if sum != ev.bytes {
						t.Fatalf("stream %s/%s counts %d bytes, holds %d", id, sid, ev.bytes, sum)
					}
					total += sum
					if sid != "" {
						kept++
					}
				}
				if kept > streamsKept {
					t.Fatalf("session %s keeps %d streams, want at most %d", id, kept, streamsKept)
				}
				if ss.lru.Len() != len(ss.byID) {
					t.Fatalf("session %s: %d streams in its list, %d by id", id, ss.lru.Len(), len(ss.byID))
				}
				streams += len(ss.byID)
			}
			if total != s.bytes || streams != s.lru.Len() {
				t.Fatalf("store counts %d bytes and %d streams, holds %d and %d", s.bytes, s.lru.Len(), total, streams)
			}
			if s.bytes > maxBytes+biggest {
				t.Fatalf("%d bytes kept, over the bound %d plus the largest event kept (%d)", s.bytes, maxBytes, biggest)
			}
		}
	})
}
