//go:build unix

package sandbox

import (
	"errors"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// runBy runs code for owner in the session handle names, or, with handle
// "", in the session key names.
func runBy(t testing.TB, m *Manager, owner, key, handle, code string) *Result {
	t.Helper()
	res, err := m.Run(t.Context(), Request{Session: key, Handle: handle, Owner: owner, Program: python.Program{Code: code}, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("Run(%q): %v", code, err)
	}
	return res
}

// TestHandleContinuesSession: a handle reaches its session from a call that
// names no key, across resets, and only for the owner that created it: for
// anyone else, and for a made-up handle, it is unknown in the same way.
func TestHandleContinuesSession(t *testing.T) {
	m := newManager(t, newFakeEngine(t), Options{})
	r1 := runBy(t, m, "alice", "mcp-1", "", "x = 41")
	h := r1.Session.Handle
	if len(h) < 26 {
		t.Fatalf("handle %q: want at least 128 random bits", h)
	}
	if r := runBy(t, m, "alice", "", h, "print(x + 1)"); r.Stdout != "42\n" || r.Session.Handle != h || r.Session.ID != r1.Session.ID || r.Session.Run != 2 {
		t.Errorf("by handle: %q %+v %+v", r.Stdout, r.Error, r.Session)
	}
	// The key's next run shares it.
	if r := runBy(t, m, "alice", "mcp-1", "", "x += 1\nprint(x)"); r.Stdout != "42\n" {
		t.Errorf("by key after the handle: %q %+v", r.Stdout, r.Error)
	}
	for _, tt := range []struct{ name, owner, handle string }{
		{"another owner", "mallory", h},
		{"made up", "alice", "AAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"no owner", "", h},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runBy(t, m, tt.owner, "", tt.handle, "print(x)")
			if !errors.Is(r.Cause, ErrUnknownHandle) || r.Error == nil || r.Error.Message != ErrUnknownHandle.Error() || r.Stdout != "" || r.Session.Handle != "" {
				t.Errorf("got %q %+v %+v (cause %v), want the unknown-handle failure and nothing run", r.Stdout, r.Error, r.Session, r.Cause)
			}
		})
	}
	// A reset keeps the handle; the interpreter (ID) is new.
	r, err := m.Run(t.Context(), Request{Handle: h, Owner: "alice", Reset: true, Program: python.Program{Code: "print('x' in globals())"}, Timeout: time.Minute})
	if err != nil || r.Stdout != "False\n" || r.Session.Handle != h || r.Session.ID == r1.Session.ID || r.Session.Reason != ReasonReset {
		t.Errorf("reset by handle: %q %+v %v", r.Stdout, r.Session, err)
	}
	// Ending the key's session ends the handle.
	m.End(t.Context(), "mcp-1")
	if r := runBy(t, m, "alice", "", h, "pass"); !errors.Is(r.Cause, ErrUnknownHandle) {
		t.Errorf("after End: %+v %v", r.Error, r.Cause)
	}
}

// TestDetachedSessionForgotten: a session reachable by handle only is
// forgotten once it idles out, once evicted, and, detached later, at once
// when it holds no interpreter; a key's session that idled out keeps its
// handle.
func TestDetachedSessionForgotten(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		eng := newFakeEngine(t)
		m := newManager(t, eng, Options{IdleTimeout: 50 * time.Millisecond})
		detached, err := m.Run(t.Context(), Request{Session: "h-1", Detached: true, Owner: "o", Program: python.Program{Code: "x = 1"}, Timeout: time.Minute})
		if err != nil || detached.Session.Handle == "" {
			t.Fatalf("detached run: %+v %v", detached, err)
		}
		keyed := runBy(t, m, "o", "mcp-1", "", "x = 2")
		waitFor(t, func() bool { return eng.running() == 0 })
		waitFor(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.sessions["h-1"] == nil })
		if r := runBy(t, m, "o", "", detached.Session.Handle, "pass"); !errors.Is(r.Cause, ErrUnknownHandle) {
			t.Errorf("detached after idling out: %+v %v", r.Error, r.Cause)
		}
		if r := runBy(t, m, "o", "", keyed.Session.Handle, "print('x' in globals())"); r.Stdout != "False\n" || r.Session.Reason != ReasonIdle {
			t.Errorf("keyed after idling out: %q %+v %+v", r.Stdout, r.Error, r.Session)
		}
	})
	t.Run("evicted", func(t *testing.T) {
		m := newManager(t, newFakeEngine(t), Options{MaxSessions: 1})
		detached, err := m.Run(t.Context(), Request{Session: "h-1", Detached: true, Owner: "o", Program: python.Program{Code: "x = 1"}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		runBy(t, m, "o", "mcp-1", "", "x = 2") // evicts h-1
		if r := runBy(t, m, "o", "", detached.Session.Handle, "pass"); !errors.Is(r.Cause, ErrUnknownHandle) {
			t.Errorf("detached after eviction: %+v %v", r.Error, r.Cause)
		}
	})
	t.Run("detach", func(t *testing.T) {
		m := newManager(t, newFakeEngine(t), Options{})
		live := runBy(t, m, "o", "mcp-1", "", "x = 1")
		m.Detach(t.Context(), "mcp-1")
		if r := runBy(t, m, "o", "", live.Session.Handle, "print(x)"); r.Stdout != "1\n" {
			t.Errorf("a detached live session by handle: %q %+v", r.Stdout, r.Error)
		}
		// A session whose interpreter died holds none: detached, it goes at once.
		crashed := runBy(t, m, "o", "mcp-2", "", "import os\nos._exit(3)")
		if crashed.Session.Ended != ReasonCrash {
			t.Fatalf("crash: %+v", crashed.Session)
		}
		m.Detach(t.Context(), "mcp-2")
		if r := runBy(t, m, "o", "", crashed.Session.Handle, "pass"); !errors.Is(r.Cause, ErrUnknownHandle) {
			t.Errorf("an empty session detached: %+v", r.Error)
		}
	})
}
