package tasks

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeJob is a job whose state the test sets.
type fakeJob struct {
	mu        sync.Mutex
	st        State
	answers   mcp.InputResponseMap
	cancelled bool
}

func (j *fakeJob) State() State {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st
}

func (j *fakeJob) Answer(a mcp.InputResponseMap) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.answers = a
}

func (j *fakeJob) Cancel() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cancelled = true
}

func (j *fakeJob) set(st State) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st = st
}

// clock is a store's time, moved by the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestStore(max int, ttl time.Duration) (*Store, *clock) {
	c := &clock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
	s := NewStore(max, ttl)
	s.now = c.now
	return s, c
}

func TestOwnerOnly(t *testing.T) {
	s, _ := newTestStore(4, time.Minute)
	job := &fakeJob{st: State{Status: Working}}
	task, err := s.Create("alice", job)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.ID) < 26 {
		t.Errorf("task id %q: want at least 128 random bits", task.ID)
	}
	if _, err := s.Get("alice", task.ID); err != nil {
		t.Errorf("the owner's get: %v", err)
	}
	for _, tc := range []struct{ owner, id string }{{"bob", task.ID}, {"alice", "nope"}} {
		if _, err := s.Get(tc.owner, tc.id); !errors.Is(err, ErrNotFound) {
			t.Errorf("get %s of %s: %v, want not found", tc.id, tc.owner, err)
		}
		if err := s.Cancel(tc.owner, tc.id); !errors.Is(err, ErrNotFound) {
			t.Errorf("cancel %s of %s: %v, want not found", tc.id, tc.owner, err)
		}
		if err := s.Update(tc.owner, tc.id, nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("update %s of %s: %v, want not found", tc.id, tc.owner, err)
		}
	}
	if job.cancelled {
		t.Error("another principal's cancel reached the job")
	}
	if err := s.Cancel("alice", task.ID); err != nil || !job.cancelled {
		t.Errorf("the owner's cancel: %v, job cancelled %v", err, job.cancelled)
	}
}

func TestBoundsAndExpiry(t *testing.T) {
	s, c := newTestStore(2, time.Minute)
	a, b := &fakeJob{st: State{Status: Working}}, &fakeJob{st: State{Status: Working}}
	ta, _ := s.Create("p", a)
	tb, _ := s.Create("p", b)
	if _, err := s.Create("p", &fakeJob{st: State{Status: Working}}); !errors.Is(err, ErrFull) {
		t.Fatalf("a third task with two working: %v, want ErrFull", err)
	}
	// b ends, then a: neither is forgotten before its ttl, to make room or otherwise.
	endB := c.t
	b.set(State{Status: Completed, Ended: endB})
	a.set(State{Status: Completed, Ended: endB.Add(time.Second)})
	c.t = endB.Add(time.Minute - time.Millisecond)
	if _, err := s.Create("p", &fakeJob{st: State{Status: Working}}); !errors.Is(err, ErrFull) {
		t.Fatalf("a third task with two ended within their ttl: %v, want ErrFull", err)
	}
	for _, id := range []string{ta.ID, tb.ID} {
		if _, err := s.Get("p", id); err != nil {
			t.Errorf("within its ttl: %v", err)
		}
	}
	// b's ttl is over (it ended a second before a): it makes room.
	c.t = endB.Add(time.Minute + time.Millisecond)
	if _, err := s.Create("p", &fakeJob{st: State{Status: Working}}); err != nil {
		t.Fatalf("a third task once one expired: %v", err)
	}
	if _, err := s.Get("p", tb.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("past its ttl: %v, want forgotten", err)
	}
	c.t = endB.Add(time.Second + time.Minute + time.Millisecond)
	if _, err := s.Get("p", ta.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("past its ttl: %v, want forgotten", err)
	}
	if s.Len() != 1 {
		t.Errorf("%d tasks held, want the working one", s.Len())
	}
}

func TestWire(t *testing.T) {
	s, c := newTestStore(4, time.Hour)
	job := &fakeJob{st: State{Status: Working}}
	task, _ := s.Create("p", job)
	created, _ := json.Marshal(s.Created(task))
	var m map[string]any
	if err := json.Unmarshal(created, &m); err != nil {
		t.Fatal(err)
	}
	if m["resultType"] != "task" || m["taskId"] != task.ID || m["status"] != "working" ||
		m["ttlMs"] != float64(time.Hour.Milliseconds()) || m["pollIntervalMs"] != float64(1000) ||
		m["createdAt"] != "2026-07-28T12:00:00Z" {
		t.Errorf("created: %s", created)
	}
	for _, k := range []string{"result", "error", "inputRequests", "task", "ttl"} {
		if _, ok := m[k]; ok {
			t.Errorf("created has %q: %s", k, created)
		}
	}
	c.t = c.t.Add(10 * time.Second)
	job.set(State{Status: Completed, Ended: c.t, Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}})
	got, _ := s.Get("p", task.ID)
	raw, _ := json.Marshal(got)
	if !strings.Contains(string(raw), `"resultType":"complete"`) || !strings.Contains(string(raw), `"status":"completed"`) ||
		!strings.Contains(string(raw), `"result":{"content":[{"type":"text","text":"done"}]`) ||
		!strings.Contains(string(raw), `"ttlMs":3610000`) || !strings.Contains(string(raw), `"lastUpdatedAt":"2026-07-28T12:00:10Z"`) {
		t.Errorf("completed: %s", raw)
	}
	ack, _ := json.Marshal(Ack())
	if string(ack) != `{"resultType":"complete"}` {
		t.Errorf("ack: %s", ack)
	}
}
