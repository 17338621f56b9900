package sandbox

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSlotsRoundRobin: with every place held, a burst of runs from session
// a queued before one run of b: freed places go to a and b in turn, so b's
// run goes before the tail of a's burst, and each session's runs go in
// arrival order.
func TestSlotsRoundRobin(t *testing.T) {
	q := newSlots(2)
	held := []*ticket{q.enqueue("x"), q.enqueue("y")}
	for _, h := range held {
		if !isReady(h) {
			t.Fatal("a free place was not given at once")
		}
	}
	var queued []*ticket
	name := map[*ticket]string{}
	for _, who := range []string{"a1", "a2", "a3", "a4", "b1", "c1", "b2"} {
		tk := q.enqueue(who[:1])
		queued, name[tk] = append(queued, tk), who
	}
	if n := q.queued(); n != len(queued) {
		t.Fatalf("%d queued, want %d", n, len(queued))
	}
	var order []string
	for range queued {
		q.release()
		for _, tk := range queued {
			if isReady(tk) && !slices.Contains(order, name[tk]) {
				order = append(order, name[tk])
			}
		}
	}
	want := []string{"a1", "b1", "c1", "a2", "b2", "a3", "a4"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order served (-want +got):\n%s", diff)
	}
	// Two places are held by the last runs served; releasing both frees them.
	q.release()
	q.release()
	if q.used != 0 || q.queued() != 0 || len(q.turns) != 0 {
		t.Errorf("after every release: used %d, queued %d, turns %v", q.used, q.queued(), q.turns)
	}
}

// TestSlotsGiveUp: a run that waits past its limit fails with a
// RunLimitError and leaves the queue; the next session's run is served.
func TestSlotsGiveUp(t *testing.T) {
	q := newSlots(1)
	q.enqueue("x")
	err := q.acquire(t.Context(), "a", time.Millisecond)
	var limit *RunLimitError
	if !errors.As(err, &limit) || limit.Limit != 1 {
		t.Fatalf("acquire past the limit: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := q.acquire(ctx, "a", time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire with an ended context: %v", err)
	}
	b := q.enqueue("b")
	if q.queued() != 1 || len(q.turns) != 1 {
		t.Fatalf("queue after two give-ups: %d waiting, turns %v", q.queued(), q.turns)
	}
	q.release()
	if !isReady(b) {
		t.Error("b's run was not handed the freed place")
	}
}

func isReady(t *ticket) bool {
	select {
	case <-t.ready:
		return true
	default:
		return false
	}
}
