package discovery

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fakeFS stands in for fsnotify inside a synctest bubble: it records what is
// watched; events are sent by the test.
type fakeFS struct {
	mu      sync.Mutex // protects watched
	watched map[string]bool
}

func (f *fakeFS) Add(name string) error {
	if _, err := os.Stat(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched[name] = true
	return nil
}

func (f *fakeFS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.watched, name)
	return nil
}

// watching returns the watched paths, sorted.
func (f *fakeFS) watching() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.watched))
}

// loopHarness runs a watcher's loop on fake events and counts loads and
// applies.
type loopHarness struct {
	t      *testing.T
	dir    string
	fs     *fakeFS
	events chan fsnotify.Event
	errs   chan error
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex // protects following: the loop writes, the test reads
	loads   int
	applied []*Config
}

func startLoop(t *testing.T, dir string, opts WatchOptions) *loopHarness {
	t.Helper()
	h := &loopHarness{
		t: t, dir: dir, fs: &fakeFS{watched: map[string]bool{}},
		events: make(chan fsnotify.Event), errs: make(chan error), done: make(chan error, 1),
	}
	w := newWatcher(dir, opts, h.fs, func(c *Config) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.applied = append(h.applied, c)
	})
	load := w.load
	w.load = func(prev *Config) *Config {
		h.mu.Lock()
		h.loads++
		h.mu.Unlock()
		return load(prev)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h.cancel = cancel
	go func() { h.done <- w.run(ctx, h.events, h.errs) }()
	t.Cleanup(h.stop)
	synctest.Wait()
	return h
}

func (h *loopHarness) stop() {
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("run returned %v, want nil", err)
	}
	h.done <- nil // let a second stop return
}

func (h *loopHarness) event(name string, op fsnotify.Op) {
	h.events <- fsnotify.Event{Name: filepath.Join(h.dir, name), Op: op}
}

// counts returns the number of loads and the snapshots applied so far.
func (h *loopHarness) counts() (int, []*Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loads, slices.Clone(h.applied)
}

func (h *loopHarness) check(wantLoads, wantApplied int) {
	h.t.Helper()
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loads != wantLoads || len(h.applied) != wantApplied {
		h.t.Fatalf("at %v: %d loads and %d applies, want %d and %d", time.Now().Format("15:04:05.000"), h.loads, len(h.applied), wantLoads, wantApplied)
	}
}

func server(name, command string) string {
	return fmt.Sprintf(`{"mcpServers": {%q: {"command": %q}}}`, name, command)
}

func TestLoopDebouncesBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v0")})
		h := startLoop(t, dir, WatchOptions{Debounce: 100 * time.Millisecond})
		h.check(1, 1) // the initial snapshot
		if got := h.fs.watching(); !slices.Equal(got, []string{dir}) {
			t.Fatalf("watching %v, want %s", got, dir)
		}

		for i := range 50 {
			writeFiles(t, dir, map[string]string{"a.json": server("a", fmt.Sprint("v", i+1))})
			h.event("a.json", fsnotify.Write)
			time.Sleep(10 * time.Millisecond)
		}
		// 10ms after the last event: quiet for 89ms more still waits.
		time.Sleep(89 * time.Millisecond)
		h.check(1, 1)
		time.Sleep(2 * time.Millisecond)
		h.check(2, 2)
		_, applied := h.counts()
		if got := applied[1].Server("a").Command; got != "v50" {
			t.Errorf("after the burst a runs %q, want v50", got)
		}
	})
}

func TestLoopMaxDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		h := startLoop(t, dir, WatchOptions{Debounce: 100 * time.Millisecond, MaxDelay: time.Second})
		h.check(1, 1)
		start := time.Now()
		// A change every 50ms for 2.5s never leaves 100ms of quiet.
		for i := 0; time.Since(start) < 2500*time.Millisecond; i++ {
			writeFiles(t, dir, map[string]string{"a.json": server("a", fmt.Sprint("v", i))})
			h.event("a.json", fsnotify.Write)
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		if loads, _ := h.counts(); loads < 3 || loads > 4 {
			t.Errorf("%d loads during 2.5s of constant changes, want one per MaxDelay (3 or 4 with the initial one)", loads)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		_, applied := h.counts()
		if got := applied[len(applied)-1].Server("a").Command; got != "v49" {
			t.Errorf("after the changes stop a runs %q, want v49", got)
		}
	})
}

func TestLoopIgnoresNoise(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v0")})
		h := startLoop(t, dir, WatchOptions{})
		h.check(1, 1)
		for _, name := range []string{".a.json.swp", "4913", "a.json~", ".#a.json", "notes.txt", "sub/x.json"} {
			h.event(name, fsnotify.Create|fsnotify.Write)
		}
		h.events <- fsnotify.Event{Name: filepath.Join(filepath.Dir(dir), "other.json"), Op: fsnotify.Write}
		time.Sleep(time.Second)
		h.check(1, 1)

		// chmod or a rewrite with the same content: read again, nothing applied.
		h.event("a.json", fsnotify.Chmod)
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v0")})
		h.event("a.json", fsnotify.Write)
		time.Sleep(time.Second)
		h.check(2, 1)

		// An fsnotify error (say, a lost queue) makes it read again.
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v1")})
		h.errs <- fsnotify.ErrEventOverflow
		time.Sleep(time.Second)
		h.check(3, 2)
	})
}

func TestLoopInitial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v0")})
		initial := Load(dir, nil, Options{})
		h := startLoop(t, dir, WatchOptions{Initial: initial})
		h.check(1, 0) // read again after watching, unchanged: no apply

		// Initial is the prev of the first reload: a broken file keeps a.
		writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers":`})
		h.event("a.json", fsnotify.Write)
		time.Sleep(time.Second)
		h.check(2, 1)
		_, applied := h.counts()
		if applied[0].Server("a") != initial.Server("a") || len(applied[0].Problems) != 1 {
			t.Errorf("broken file: servers %v, problems %v", applied[0].Names(), applied[0].Problems)
		}
	})
}

func TestLoopStopsWithPendingReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		h := startLoop(t, dir, WatchOptions{})
		h.check(1, 1)
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v0")})
		h.event("a.json", fsnotify.Create)
		h.stop() // returns although a reload is pending
		time.Sleep(time.Second)
		h.check(1, 1)
	})
}

func TestLoopFollowsMissingFolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "home", "MCPs")
		h := startLoop(t, dir, WatchOptions{})
		h.check(1, 1)
		if got := h.fs.watching(); !slices.Equal(got, []string{root}) {
			t.Fatalf("watching %v, want only %s", got, root)
		}
		// Noise in the parent is ignored.
		h.events <- fsnotify.Event{Name: filepath.Join(root, "other"), Op: fsnotify.Create}
		time.Sleep(time.Second)
		h.check(1, 1)

		// mkdir -p home/MCPs and a file in it; only "home" is announced.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dir, map[string]string{"a.json": server("a", "v0")})
		h.events <- fsnotify.Event{Name: filepath.Join(root, "home"), Op: fsnotify.Create}
		time.Sleep(time.Second)
		h.check(2, 2)
		if got := h.fs.watching(); !slices.Equal(got, []string{dir}) {
			t.Fatalf("watching %v, want only %s", got, dir)
		}
		if _, applied := h.counts(); applied[1].Server("a") == nil {
			t.Fatalf("folder created: servers %v, want a", applied[1].Names())
		}

		// The folder is deleted: back to the parent, no servers.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		h.events <- fsnotify.Event{Name: dir, Op: fsnotify.Remove}
		time.Sleep(time.Second)
		h.check(3, 3)
		_, applied := h.counts()
		if got := h.fs.watching(); !slices.Equal(got, []string{filepath.Join(root, "home")}) || len(applied[2].Servers) != 0 {
			t.Fatalf("folder deleted: watching %v, servers %v", got, applied[2].Names())
		}
	})
}
