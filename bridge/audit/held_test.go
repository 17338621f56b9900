package audit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
)

// TestRecordNotBlockedByHeldLock: another writer holding the folder's lock
// (a stopped peer codebridge) does not hold up Record, which sits on every
// tool call's path; Close writes what was queued once the lock is free.
func TestRecordNotBlockedByHeldLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := New(dir, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Record(rec("queued1"))
		l.Record(rec("queued2"))
	}()
	<-done // on a blocking Record, this waits until the test's timeout
	if tools, _ := lines(t, dir); len(tools) != 0 {
		t.Fatalf("records %v written while another writer held the lock", tools)
	}
	unlock()
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tools, _ := lines(t, dir); fmt.Sprint(tools) != "[queued1 queued2]" {
		t.Errorf("records after Close %v, want [queued1 queued2]", tools)
	}
	if n := l.Dropped(); n != 0 {
		t.Errorf("Dropped() = %d, want 0", n)
	}
	l.Record(rec("after close"))
	if n := l.Dropped(); n != 1 {
		t.Errorf("Dropped() after a record past Close = %d, want 1", n)
	}
}

// TestFullQueueDrops: with the lock held, records past the queue's bound
// are dropped and counted; Close, given no time, gives up on the rest and
// says so, and counts them too.
func TestFullQueueDrops(t *testing.T) {
	dir := t.TempDir()
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	l := New(dir, Options{})
	const extra = 7
	for i := range maxQueue + extra {
		l.Record(rec(fmt.Sprint(i)))
	}
	if n := l.Dropped(); n != extra {
		t.Fatalf("Dropped() = %d, want %d", n, extra)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with an ended context while the lock is held: %v, want context.Canceled", err)
	}
	if n := l.Dropped(); n != maxQueue+extra {
		t.Errorf("Dropped() after Close = %d, want %d", n, maxQueue+extra)
	}
	if tools, _ := lines(t, dir); len(tools) != 0 {
		t.Errorf("records %v written while another writer held the lock", tools)
	}
}
