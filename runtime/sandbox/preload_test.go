//go:build unix

package sandbox

import (
	"sync"
	"testing"
	"time"
)

// TestBoundsFollowImage: a default bound on live sessions counts what a
// preload costs until an interpreter says its image has none of the modules
// to preload (the minimal image); then nothing more is preloaded and the
// bound is the one without a preload, said once to OnBounds. A bound the
// operator set stays as it was (the preload still stops); an image that has
// some of them changes nothing.
func TestBoundsFollowImage(t *testing.T) {
	const memory = 512 << 20
	tests := []struct {
		name       string
		preload    []string
		max        int
		wantAdapts bool
		wantOff    bool // no more preloads
	}{
		{"image has none", []string{"codebridge_no_such_a", "codebridge_no_such_b.plot"}, 0, true, true},
		{"image has some", []string{"json", "codebridge_no_such_a"}, 0, false, false},
		{"bound set", []string{"codebridge_no_such_a"}, 5, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var told []int
			m := newManager(t, newFakeEngine(t), Options{Memory: memory, Preload: tt.preload, MaxSessions: tt.max,
				OnBounds: func(n int) { mu.Lock(); told = append(told, n); mu.Unlock() }})
			before := m.MaxSessions()
			want := tt.max
			if want == 0 {
				want = defaultSessions(memory, true)
			}
			if before != want {
				t.Fatalf("bound before any run = %d, want %d", before, want)
			}
			for _, s := range []string{"a", "a", "b"} {
				if r := run(t, m, s, "print(1)", time.Minute); r.Stdout != "1\n" {
					t.Fatalf("run: %q %+v", r.Stdout, r.Error)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !tt.wantAdapts {
				if m.MaxSessions() != before || len(told) != 0 || m.noPreload.Load() != tt.wantOff {
					t.Errorf("bound %d (was %d), told %v, preloading off %v: want it unchanged, preloading off %v", m.MaxSessions(), before, told, m.noPreload.Load(), tt.wantOff)
				}
				return
			}
			after := defaultSessions(memory, false)
			if m.MaxSessions() != after || len(told) != 1 || told[0] != after || !m.noPreload.Load() {
				t.Errorf("bound %d, told %v, preloading off %v: want %d told once, and no more preloads", m.MaxSessions(), told, m.noPreload.Load(), after)
			}
			if LocalMachine().Memory > 0 && after <= before {
				t.Errorf("bound without a preload %d is not above %d", after, before)
			}
		})
	}
}
