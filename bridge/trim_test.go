package bridge

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestIdleTrimFreesOnceIdle(t *testing.T) {
	freed := make(chan struct{}, 10)
	tr := newIdleTrim(time.Millisecond, func() { freed <- struct{}{} })
	defer tr.close()
	select { // what starting up freed, with no run at all
	case <-freed:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("not freed a minute after the start")
	}
	tr.begin()
	tr.begin()
	tr.end()
	// One run is still in progress: a wait that ends now frees nothing.
	tr.fire()
	select {
	case <-freed:
		t.Fatal("freed while a run was in progress")
	default:
	}
	tr.end()
	select {
	case <-freed:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("not freed a minute after the last run ended")
	}
}

func TestIdleTrimClosed(t *testing.T) {
	var n atomic.Int32
	tr := newIdleTrim(time.Hour, func() { n.Add(1) })
	tr.begin()
	tr.end()
	tr.close()
	tr.fire() // a wait that ends after close
	tr.begin()
	tr.end() // starts no new wait
	if n.Load() != 0 {
		t.Errorf("freed %d times after close, want 0", n.Load())
	}
	if tr.timer.Stop() {
		t.Error("the wait still pending after close")
	}
}
