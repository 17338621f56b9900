package pool

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestLimiterBoundsInFlight: of 50 calls at once on a limiter of 2, at most
// 2 hold a slot at any moment, 2 do at some moment, and every one gets one.
func TestLimiterBoundsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(2, 100)
		var in, peak, done atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if err := l.acquire(t.Context()); err != nil {
					t.Error(err)
					return
				}
				n := in.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(50 * time.Millisecond) // the bubble's clock
				in.Add(-1)
				l.release()
				done.Add(1)
			})
		}
		wg.Wait()
		if peak.Load() != 2 || done.Load() != 50 {
			t.Errorf("peak in flight %d (want 2), done %d (want 50)", peak.Load(), done.Load())
		}
		if n := l.pending.Load(); n != 0 {
			t.Errorf("%d calls still counted after all released", n)
		}
	})
}

// TestLimiterFIFO: calls waiting for the one slot get it in the order they
// came.
func TestLimiterFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(1, 10)
		if err := l.acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				if err := l.acquire(t.Context()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				l.release()
			})
			synctest.Wait() // i waits in line before i+1 comes
		}
		if got := l.waiting(); got != 5 {
			t.Errorf("waiting = %d, want 5", got)
		}
		l.release()
		wg.Wait()
		if want := []int{0, 1, 2, 3, 4}; !slices.Equal(order, want) {
			t.Errorf("slots went in order %v, want %v", order, want)
		}
	})
}

// TestLimiterQueueFull: with the slot taken and the queue full, a call
// fails at once with errQueueFull; a waiting call that gives up (cancelled,
// or at its deadline) leaves its place to the next, and holds nothing.
func TestLimiterQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(1, 2)
		if err := l.acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		tctx, tcancel := context.WithTimeout(t.Context(), time.Second)
		defer tcancel()
		errs := make(chan error, 2)
		go func() { errs <- l.acquire(ctx) }()
		go func() { errs <- l.acquire(tctx) }()
		synctest.Wait()
		if err := l.acquire(t.Context()); !errors.Is(err, errQueueFull) {
			t.Fatalf("with 1 in flight and 2 waiting: %v, want errQueueFull", err)
		}

		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled while waiting: %v", err)
		}
		time.Sleep(2 * time.Second) // the bubble's clock: past tctx's deadline
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("deadline while waiting: %v", err)
		}
		if n := l.pending.Load(); n != 1 {
			t.Fatalf("pending = %d after two waiting calls gave up, want 1 (the holder)", n)
		}
		l.release()
		// Nothing was left taken: both slots' worth can be had at once.
		if !l.sem.TryAcquire(1) {
			t.Fatal("the slot is still taken after every call released or gave up")
		}
		l.sem.Release(1)
	})
}

// TestCallsWaitForSlots: a server of "maxConcurrency" 2 sent 10 calls at
// once has at most 2 of them at any moment, 2 at some moment, and every
// one completes. Calls are held in the server until the test releases
// them, so the count is of events, not of time.
func TestCallsWaitForSlots(t *testing.T) {
	def := memDef("s")
	def.MaxConcurrency = 2
	p, m := newMemPool(t, Options{}, def)

	tokens := make(chan any, 10)
	var mu sync.Mutex
	in, peak := 0, 0
	progress := func(n *mcp.ProgressNotificationParams) {
		mu.Lock()
		in++
		peak = max(peak, in)
		mu.Unlock()
		tokens <- n.ProgressToken
	}
	errs := make(chan error, 10)
	for range 10 {
		go func() {
			_, err := p.Call(t.Context(), "s", "sleep", sleepIn{Held: true}, progress)
			errs <- err
		}()
	}
	// Two in the server before any is released; then one more for each
	// released.
	held, received := []any{<-tokens, <-tokens}, 2
	for len(held) > 0 {
		tok := held[0]
		held = held[1:]
		mu.Lock()
		in-- // before the server may take the next call
		mu.Unlock()
		m.acks.release(tok)
		if received < 10 {
			held = append(held, <-tokens)
			received++
		}
	}
	for range 10 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if peak != 2 {
		t.Errorf("the server had at most %d calls at once, want 2", peak)
	}
}

// TestCallBusy: with a server's one slot taken and its queue (1) full, a
// call fails at once with a BusyError naming the server and both limits;
// the waiting call still completes, and one that gave up while waiting
// leaves its place.
func TestCallBusy(t *testing.T) {
	def := memDef("s")
	def.MaxConcurrency = 1
	def.Source = "/cfg/s.json"
	p, m := newMemPool(t, Options{Queue: 1}, def)

	tokens := make(chan any, 2)
	progress := func(n *mcp.ProgressNotificationParams) { tokens <- n.ProgressToken }
	errs := make(chan error, 2)
	call := func(ctx context.Context) {
		_, err := p.Call(ctx, "s", "sleep", sleepIn{Held: true}, progress)
		errs <- err
	}
	go call(t.Context())
	first := <-tokens
	waiting := func(n int) {
		t.Helper()
		testenv.Eventually(t, "calls waiting for the slot", func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.servers["s"].cur.slots.waiting() == n
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	go call(ctx)
	waiting(1)
	_, err := p.Call(t.Context(), "s", "echo", echoIn{Message: "x"}, nil)
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, ErrBusy) {
		t.Fatalf("with the slot taken and the queue full: %v, want a BusyError", err)
	}
	if want := (BusyError{Server: "s", Source: "/cfg/s.json", Concurrency: 1, Configured: true, Queue: 1}); *be != want {
		t.Errorf("BusyError %+v, want %+v", *be, want)
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting: %v", err)
	}

	go call(t.Context()) // the place the cancelled call left
	waiting(1)
	m.acks.release(first)
	m.acks.release(<-tokens)
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestConcurrencyDefault: a server whose definition sets no
// MaxConcurrency takes Options.Concurrency; one that sets it, its own; and
// a reload that changes it restarts the server with the new one.
func TestConcurrencyDefault(t *testing.T) {
	own := memDef("own")
	own.MaxConcurrency = 3
	p, m := newMemPool(t, Options{Concurrency: 5}, memDef("dflt"), own)
	slots := func(name string, want int) {
		t.Helper()
		if _, err := p.Call(t.Context(), name, "echo", echoIn{}, nil); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		got := p.servers[name].cur.slots.size
		p.mu.Unlock()
		if got != want {
			t.Errorf("%s has %d slots, want %d", name, got, want)
		}
	}
	slots("dflt", 5)
	slots("own", 3)

	changed := *own
	changed.MaxConcurrency = 1
	p.Update([]*discovery.Server{memDef("dflt"), &changed})
	slots("own", 1)
	if n := m.starts.Load(); n != 3 {
		t.Errorf("%d starts, want 3: own restarted with its new limit", n)
	}
}
