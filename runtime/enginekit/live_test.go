package enginekit

import (
	"slices"
	"sync"
	"testing"
)

func TestLive(t *testing.T) {
	var l Live[int]
	if !l.Add(1) || !l.Add(2) || !l.Add(3) {
		t.Fatal("Add to an open set said no")
	}
	l.Remove(2)
	l.Remove(7) // not in the set: nothing happens
	if l.Closed() {
		t.Fatal("Closed before Close")
	}
	live, first := l.Close()
	slices.Sort(live)
	if !first || !slices.Equal(live, []int{1, 3}) {
		t.Fatalf("Close = %v, %v; want [1 3], true", live, first)
	}
	if !l.Closed() {
		t.Fatal("not Closed after Close")
	}
	if l.Add(4) {
		t.Fatal("Add after Close said yes")
	}
	if live, first := l.Close(); first || len(live) != 0 {
		t.Fatalf("second Close = %v, %v; want none, false", live, first)
	}
}

// TestLiveCloseRacesAdd: whatever Close and Adds interleave, Close hands
// back exactly the ones whose Add said yes.
func TestLiveCloseRacesAdd(t *testing.T) {
	for range 50 {
		var l Live[int]
		added := make([]bool, 64)
		var wg sync.WaitGroup
		for i := range added {
			wg.Go(func() { added[i] = l.Add(i) })
		}
		live, _ := l.Close()
		wg.Wait()
		for i, ok := range added {
			if ok != slices.Contains(live, i) {
				t.Fatalf("Add(%d) said %v but Close handed back %v", i, ok, live)
			}
		}
	}
}
