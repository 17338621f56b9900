package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestUseServerGC checks that serve --http's GOGC holds across collections,
// and that a GOGC the environment sets wins.
func TestUseServerGC(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC") // t.Setenv puts the original back

	useServerGC()
	if got := gogc(); got != serverGCPercent {
		t.Fatalf("GOGC %d after useServerGC, want %d", got, serverGCPercent)
	}
	for range 5 {
		runtime.GC()
		runtime.Gosched()
	}
	if got := gogc(); got != serverGCPercent {
		t.Errorf("GOGC %d after collections, want %d", got, serverGCPercent)
	}

	os.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
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
