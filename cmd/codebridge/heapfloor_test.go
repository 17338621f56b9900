package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		base               int
		floor, live, roots uint64
		want               int
	}{
		{100, 8 * mb, 1 * mb, 0, 200},        // the minimum heap (4 MiB at 100) reaches 8 MiB first
		{100, 8 * mb, 100, mb / 2, 200},      // however small the live heap
		{100, 8 * mb, 3 * mb, 0, 166},        // here the proportional goal does
		{100, 8 * mb, 3 * mb, 1 * mb, 125},   // roots count in it
		{100, 8 * mb, 4 * mb, 0, 100},        // 4 MB live reaches 8 by itself
		{100, 8 * mb, 3 * mb, 2 * mb, 100},   // so do 3 live and 2 of roots
		{100, 8 * mb, 64 * mb, 1 * mb, 100},  // a large heap keeps GOGC
		{200, 8 * mb, 3 * mb, 0, 200},        // the environment's GOGC, where it reaches the floor
		{400, 8 * mb, 1 * mb, 0, 400},        // serve --http's
		{100, 8 * mb, 0, 0, 100},             // nothing measured yet
		{100, 1 << 40, 100, 0, 10000},        // capped
		{100, 1 << 40, 1 << 41, 1 * mb, 100}, // above a floor however large
	} {
		if got := gcPercent(c.base, c.floor, c.live, c.roots); got != c.want {
			t.Errorf("gcPercent(%d, %d, %d, %d) = %d, want %d", c.base, c.floor, c.live, c.roots, got, c.want)
		}
	}
}

// TestHeapGoalAtFloor checks, against the runtime itself, that the GOGC
// gcPercent gives makes the collector's heap goal the floor, not several
// times it: the runtime's goal counts stacks and globals, and its minimum
// grows with GOGC.
func TestHeapGoalAtFloor(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	const floor = 8 << 20
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
		{Name: "/gc/heap/goal:bytes"},
	}
	runtime.GC()
	metrics.Read(s)
	live, roots := s[0].Value.Uint64(), s[1].Value.Uint64()+s[2].Value.Uint64()
	if live+(live+roots) >= floor {
		t.Skipf("this test binary's heap (%d live, %d roots) reaches the floor at GOGC 100", live, roots)
	}
	debug.SetGCPercent(gcPercent(100, floor, live, roots))
	metrics.Read(s)
	// A goal from a GOGC rounded down may fall short of the floor by a
	// percent of what it counts; it must never be above it.
	if goal := s[3].Value.Uint64(); goal > floor || goal < floor-(live+roots)/100-1 {
		t.Errorf("heap goal %d with %d live and %d of roots, want the floor, %d", goal, live, roots, floor)
	}
}

// TestKeepHeapFloor checks that after a collection GOGC is what the live
// heap needs to reach the floor, and that stop puts it back.
func TestKeepHeapFloor(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	const floor = 1 << 40 // far above this test binary's heap
	stop := keepHeapFloor(floor)
	// The finalizer runs on its own goroutine after a collection: collect
	// until it has (a hang guard ends the test otherwise).
	for i := 0; gogc() == 100; i++ {
		if i == 10000 {
			stop()
			t.Fatal("GOGC still 100 after 10,000 collections")
		}
		runtime.GC()
		runtime.Gosched()
	}
	if got := gogc(); got != 10000 {
		t.Errorf("GOGC %d with a floor far above the heap, want the cap, 10000", got)
	}
	stop()
	for i := 0; gogc() != 100; i++ {
		if i == 10000 {
			t.Fatal("GOGC not put back after stop and 10,000 collections")
		}
		runtime.GC()
		runtime.Gosched()
	}
}

// TestUseServerGC checks that serve --http's GOGC holds across collections
// while the floor is reached, and that a GOGC the environment sets wins.
func TestUseServerGC(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC") // t.Setenv puts the original back

	defer gcBase.Store(gcBase.Load())
	stop := keepHeapFloor(1) // any live heap reaches this floor by itself
	useServerGC()
	if got := gogc(); got != serverGCPercent {
		t.Fatalf("GOGC %d after useServerGC, want %d", got, serverGCPercent)
	}
	for range 5 { // each collection runs the floor's finalizer once
		runtime.GC()
		runtime.Gosched()
	}
	if got := gogc(); got != serverGCPercent {
		t.Errorf("GOGC %d after collections, want %d: the floor put the environment's base back", got, serverGCPercent)
	}
	stop()
	// The floor's finalizer is still armed until it has run once more and
	// put the base back: collect until it has, so that it cannot change
	// GOGC later under another test (TestHeapGoalAtFloor, with -shuffle).
	const marker = 123
	gcBase.Store(marker)
	for i := 0; gogc() != marker; i++ {
		if i == 10000 {
			t.Fatal("the floor's finalizer did not run in 10,000 collections after stop")
		}
		runtime.GC()
		runtime.Gosched()
	}

	os.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	gcBase.Store(150)
	useServerGC()
	if got := gogc(); got != 150 {
		t.Errorf("GOGC %d with GOGC=150 in the environment, want 150", got)
	}
}

// gogc is the collector's GOGC now.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
