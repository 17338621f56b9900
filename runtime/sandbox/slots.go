package sandbox

import (
	"context"
	"sync"
	"time"
)

// slots bounds the runs executing at once and shares the places fairly
// between sessions: each session's waiting runs queue in arrival order, and a
// freed place goes to the next session in turn, round-robin over the sessions
// with runs waiting. A burst of runs from one session then delays another
// session's run by at most one run of each session ahead of it, never by
// the whole burst.
type slots struct {
	limit int

	mu      sync.Mutex // protects following
	used    int        // places held, by runs executing or handed one
	waiting map[string][]*ticket
	turns   []string // sessions with runs waiting, in the order they are served next
}

// ticket is one run's claim on a place: ready is closed when the run holds one.
type ticket struct {
	key   string
	ready chan struct{}
}

func newSlots(limit int) *slots {
	return &slots{limit: limit, waiting: map[string][]*ticket{}}
}

// enqueue claims a place for a run of session key: the ticket is ready at
// once if a place is free, else when [slots.release] hands it one.
func (q *slots) enqueue(key string) *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{key: key, ready: make(chan struct{})}
	if q.used < q.limit {
		q.used++
		close(t.ready)
		return t
	}
	if len(q.waiting[key]) == 0 {
		q.turns = append(q.turns, key)
	}
	q.waiting[key] = append(q.waiting[key], t)
	return t
}

// release gives a held place back, or hands it to the first waiting run of
// the session whose turn it is; that session goes to the back of the turns.
func (q *slots) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.turns) == 0 {
		q.used--
		return
	}
	key := q.turns[0]
	q.turns = q.turns[1:]
	queue := q.waiting[key]
	close(queue[0].ready)
	if queue = queue[1:]; len(queue) > 0 {
		q.waiting[key] = queue
		q.turns = append(q.turns, key)
	} else {
		delete(q.waiting, key)
	}
}

// cancel takes t out of the queue. It reports false when t was handed a place
// already, which the caller then holds and must release.
func (q *slots) cancel(t *ticket) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	queue := q.waiting[t.key]
	for i, o := range queue {
		if o != t {
			continue
		}
		queue = append(queue[:i:i], queue[i+1:]...)
		if len(queue) > 0 {
			q.waiting[t.key] = queue
			return true
		}
		delete(q.waiting, t.key)
		for j, k := range q.turns {
			if k == t.key {
				q.turns = append(q.turns[:j:j], q.turns[j+1:]...)
				break
			}
		}
		return true
	}
	return false
}

// queued is the number of runs waiting for a place.
func (q *slots) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, queue := range q.waiting {
		n += len(queue)
	}
	return n
}

// acquire waits for a place for a run of session key, for at most timeout
// (then it fails with a [*RunLimitError]) or until ctx ends.
func (q *slots) acquire(ctx context.Context, key string, timeout time.Duration) error {
	t := q.enqueue(key)
	select {
	case <-t.ready: // the common case: a place is free
		return nil
	default:
	}
	began := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-t.ready:
		return nil
	case <-timer.C:
		err = &RunLimitError{Limit: q.limit, Waited: time.Since(began)}
	case <-ctx.Done():
		err = ctx.Err()
	}
	if !q.cancel(t) {
		q.release() // handed a place as we gave up: pass it on
	}
	return err
}
