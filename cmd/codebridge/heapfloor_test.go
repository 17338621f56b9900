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
		base        int
		floor, live uint64
		want        int
	}{
		{100, 8 * mb, 1 * mb, 700},  // 1 MB live: the next collection at 8
		{100, 8 * mb, 2 * mb, 300},  //
		{100, 8 * mb, 4 * mb, 100},  // 4 MB live reaches 8 by itself
		{100, 8 * mb, 64 * mb, 100}, // a large heap keeps GOGC
		{200, 8 * mb, 3 * mb, 200},  // the environment's GOGC, where it reaches the floor
		{100, 8 * mb, 0, 100},       // nothing measured yet
		{100, 8 * mb, 100, 10000},   // capped
	} {
		if got := gcPercent(c.base, c.floor, c.live); got != c.want {
			t.Errorf("gcPercent(%d, %d, %d) = %d, want %d", c.base, c.floor, c.live, got, c.want)
		}
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
