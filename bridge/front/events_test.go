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
