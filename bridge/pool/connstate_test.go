package pool

import (
	"fmt"
	"testing"
)

// tryTransition moves a conn in state from to state to, and returns the
// panic that refused it, or nil, and the state the conn is in afterwards.
func tryTransition(from, to connState) (refused any, after connState) {
	c := &conn{name: "t", state: from}
	defer func() {
		refused = recover()
		after = c.state
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.setStateLocked(to); prev != from {
		panic(fmt.Sprintf("setStateLocked returned %v, want %v", prev, from))
	}
	return nil, c.state
}

func TestConnTransitions(t *testing.T) {
	states := []connState{connStarting, connActive, connDraining, connClosing, connClosed, connExited}
	tests := []struct {
		from, to connState
		ok       bool
	}{
		{connStarting, connActive, true},
		{connStarting, connClosing, true},
		{connActive, connDraining, true},
		{connActive, connClosing, true},
		{connActive, connExited, true},
		{connDraining, connClosing, true},
		{connDraining, connExited, true},
		{connClosing, connClosed, true},

		{connStarting, connExited, false},   // no session to end yet: watch starts after the start
		{connStarting, connDraining, false}, // nothing to drain
		{connActive, connActive, false},     // no transition is a no-op
		{connActive, connClosed, false},     // a deliberate close goes through closing
		{connDraining, connActive, false},   // retiring is not undone
		{connClosing, connExited, false},    // an end after a close is closed
		{connClosing, connDraining, false},
		{connExited, connActive, false}, // a crashed session never serves again
		{connExited, connClosing, false},
		{connClosed, connExited, false},
		{connClosed, connActive, false},
		{connState(99), connActive, false},
	}
	listed := make(map[[2]connState]bool)
	for _, tt := range tests {
		listed[[2]connState{tt.from, tt.to}] = true
	}
	// Every pair not listed is refused.
	for _, from := range states {
		for _, to := range states {
			if !listed[[2]connState{from, to}] {
				tests = append(tests, struct {
					from, to connState
					ok       bool
				}{from, to, false})
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.from.String()+"→"+tt.to.String(), func(t *testing.T) {
			refused, after := tryTransition(tt.from, tt.to)
			switch {
			case tt.ok && refused != nil:
				t.Fatalf("refused: %v", refused)
			case tt.ok && after != tt.to:
				t.Fatalf("state after = %v, want %v", after, tt.to)
			case !tt.ok && refused == nil:
				t.Fatalf("allowed, want refused")
			case !tt.ok && after != tt.from:
				t.Fatalf("refused, but state changed to %v", after)
			}
		})
	}
}

func TestConnStateString(t *testing.T) {
	for s, want := range map[connState]string{connActive: "active", connExited: "exited", connState(42): "connState(42)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(s), got, want)
		}
	}
}
