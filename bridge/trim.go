package bridge

import (
	"runtime/debug"
	"sync"
	"time"
)

// idleTrimAfter is how long codebridge is idle, with no run in progress,
// before it gives the memory its heap freed back to the system. An agent
// pauses between runs while its model writes the next one, for seconds;
// a session left open is idle for minutes. Trimmed, a stdio codebridge
// holds about 4 MB of anonymous memory, and the next run takes a few tenths
// of a millisecond more to fault pages back (docs/performance.md).
const idleTrimAfter = 5 * time.Second

// idleTrim gives the heap's free memory back to the system once no run has
// been in progress for a while. The Go runtime keeps what a burst of runs
// freed (up to its 4 MB minimum heap goal, and returns the rest slowly); in
// a stdio codebridge, one per agent window, that is most of what the
// process holds of its own while its session waits for the agent.
type idleTrim struct {
	after time.Duration
	free  func() // debug.FreeOSMemory, or a test's

	mu      sync.Mutex // protects following
	running int
	timer   *time.Timer
	closed  bool
	firing  sync.WaitGroup // a free in progress, waited for by close
}

// newIdleTrim starts the wait at once: what starting up freed (the
// engine's connection, the first sandbox's start) is given back too, even
// if no run comes.
func newIdleTrim(after time.Duration, free func()) *idleTrim {
	if free == nil {
		free = debug.FreeOSMemory
	}
	t := &idleTrim{after: after, free: free}
	t.timer = time.AfterFunc(after, t.fire)
	return t
}

// begin marks a run started.
func (t *idleTrim) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running++
	if t.timer != nil {
		t.timer.Stop()
	}
}

// end marks a run ended; the last one to end starts the wait.
func (t *idleTrim) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	if t.running > 0 || t.closed {
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.after, t.fire)
	} else {
		t.timer.Reset(t.after)
	}
}

func (t *idleTrim) fire() {
	t.mu.Lock()
	if t.running > 0 || t.closed {
		t.mu.Unlock()
		return
	}
	t.firing.Add(1)
	t.mu.Unlock()
	defer t.firing.Done()
	t.free()
}

// close stops the wait and waits for a free in progress.
func (t *idleTrim) close() {
	t.mu.Lock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.firing.Wait()
}
