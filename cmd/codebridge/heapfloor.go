package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// heapFloor is the smallest heap goal codebridge's collector works to.
// Go's own is 4 MB, and every JSON message go-sdk decodes allocates a 32
// KiB buffer (its internal json.Unmarshal makes a new decoder each time): a
// tool call from code leaves about 75 KB of garbage, and with a live heap
// under a megabyte the floor halves how often the collector runs, to about
// every hundred calls. A stdio codebridge holds up to the floor while it
// is in use; once idle it gives what it freed back to the system ([bridge]
// trims its heap when no run has been in progress for a few seconds).
const heapFloor = 8 << 20

// serverGCPercent is the GOGC a `serve --http` codebridge works to unless
// the environment sets GOGC. Each collection scans every goroutine's stack,
// and a live session keeps about eight goroutines, so with GOGC 100 the
// collector's share of a run grew with the sessions: at 100 sessions all
// calling, a run cost codebridge 862-875 µs of CPU, 599-670 µs with GOGC
// 200 and 528-594 µs with GOGC 400, for 0.04 and 0.11 MB more per session
// (scripts/bench.sh sessions -sessions.http 100 -sessions.env GOGC=N,
// docs/performance.md). A stdio
// codebridge holds one session and keeps GOGC 100: there the heap is a
// session's cost.
const serverGCPercent = 400

// gcBase is the GOGC keepHeapFloor keeps once the live heap reaches the
// floor by itself: the environment's (100 unless set), or serverGCPercent.
var gcBase atomic.Int64

// keepHeapFloor raises GOGC after each collection so that the next one
// starts no sooner than when the heap reaches floor bytes, and keeps GOGC
// at its base (100 unless the environment says otherwise; see
// useServerGC) once the live heap is large enough for that to reach the
// floor by itself. With GOGC=off it does nothing. stop ends it at the next
// collection and puts GOGC back to its base.
func keepHeapFloor(floor uint64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	gcBase.Store(int64(base))
	var stopped atomic.Bool
	if base < 0 {
		return func() {}
	}
	// What the runtime's heap goal is made of, as of the last collection.
	heap := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}
	var arm func()
	arm = func() {
		// A finalizer runs after the collection that found its object
		// unreachable: once per cycle. The pointer keeps the object out of
		// the tiny allocator, whose objects may never be finalized.
		runtime.SetFinalizer(&struct{ p *int }{}, func(any) {
			base := int(gcBase.Load())
			if stopped.Load() {
				debug.SetGCPercent(base)
				return
			}
			metrics.Read(heap)
			roots := heap[1].Value.Uint64() + heap[2].Value.Uint64()
			debug.SetGCPercent(gcPercent(base, floor, heap[0].Value.Uint64(), roots))
			arm()
		})
	}
	arm()
	return func() { stopped.Store(true) }
}

// minHeapAt100 is the runtime's smallest heap goal at GOGC 100; it scales
// with GOGC (runtime/mgcpacer.go, defaultHeapMinimum).
const minHeapAt100 = 4 << 20

// gcPercent is the GOGC whose heap goal is floor (to within the rounding of
// a percent), or base where base's goal already reaches it. The runtime's
// goal is the larger of two that both grow with GOGC: the live heap plus
// GOGC percent of it and of the stacks and globals it scans (roots), and a
// minimum of 4 MiB times GOGC over 100. Leave either out and the goal is
// several times the floor: counting the live heap alone, a GOGC for 0.3 MB
// live made a minimum of 35 MB.
func gcPercent(base int, floor, live, roots uint64) int {
	if live == 0 {
		return base
	}
	p := floor * 100 / minHeapAt100 // where the minimum reaches floor
	if live >= floor {
		p = 0
	} else {
		p = min(p, (floor-live)*100/(live+roots)) // where the proportional goal does
	}
	return max(base, int(min(p, 10000)))
}

// useServerGC makes serverGCPercent the base GOGC, unless the environment
// sets GOGC.
func useServerGC() {
	if _, set := os.LookupEnv("GOGC"); set || gcBase.Load() < 0 {
		return
	}
	gcBase.Store(serverGCPercent)
	debug.SetGCPercent(serverGCPercent)
}
