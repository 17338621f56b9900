package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// These tests use the real file system and fsnotify. Their timeouts only
// bound a failure; nothing asserts how fast a reload is.

const waitLimit = 30 * time.Second

// watching runs Watch on dir until the test ends and returns the snapshots it
// applies.
func watching(t testing.TB, dir string, opts WatchOptions) <-chan *Config {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *Config, 100)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, dir, opts, func(c *Config) {
			select {
			case ch <- c:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch returned %v, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Watch did not return %v after its context was cancelled", waitLimit)
		}
	})
	return ch
}

// await returns the first snapshot from ch for which ok is true, skipping
// intermediate ones (an editor's save may be seen half-way).
func await(t testing.TB, ch <-chan *Config, what string, ok func(*Config) bool) *Config {
	t.Helper()
	deadline := time.After(waitLimit)
	var last *Config
	for {
		select {
		case c := <-ch:
			if ok(c) {
				return c
			}
			last = c
		case <-deadline:
			t.Fatalf("no snapshot with %s within %v; last: servers %v, problems %v", what, waitLimit, last.Names(), last.Problems)
			return nil
		}
	}
}

// next returns the next snapshot from ch.
func next(t testing.TB, ch <-chan *Config) *Config {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(waitLimit):
		t.Fatalf("no snapshot within %v", waitLimit)
		return nil
	}
}

// writeAtomic writes a file as editors that save by rename do, so the
// watcher never sees it half-written.
func writeAtomic(t testing.TB, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func names(want ...string) func(*Config) bool {
	return func(c *Config) bool { return slices.Equal(c.Names(), want) }
}

func command(name, want string) func(*Config) bool {
	return func(c *Config) bool { s := c.Server(name); return s != nil && s.Command == want }
}

func TestWatchRealFolder(t *testing.T) {
	dir := t.TempDir()
	ch := watching(t, dir, WatchOptions{Debounce: 20 * time.Millisecond})
	await(t, ch, "no servers", names())

	writeFiles(t, dir, map[string]string{"a.json": server("a", "v1")})
	await(t, ch, "a added", command("a", "v1"))

	// Edit in place (truncate and write).
	writeFiles(t, dir, map[string]string{"a.json": server("a", "v2")})
	await(t, ch, "a edited in place", command("a", "v2"))

	// Edit the way many editors save: write a temporary file, rename it over.
	tmp := filepath.Join(dir, ".a.json.tmp")
	if err := os.WriteFile(tmp, []byte(server("a", "v3")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "a replaced by rename", command("a", "v3"))

	// A second file, then a broken edit of the first: a keeps v3, b stays.
	writeFiles(t, dir, map[string]string{"b.json": server("b", "b1")})
	await(t, ch, "b added", names("a", "b"))
	writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers": {"a": {"command": "v4",`})
	c := await(t, ch, "a problem", func(c *Config) bool { return len(c.Problems) == 1 })
	if !command("a", "v3")(c) || !command("b", "b1")(c) {
		t.Errorf("after a broken edit: a = %+v, b = %+v; want a at v3 and b unchanged", c.Server("a"), c.Server("b"))
	}
	writeFiles(t, dir, map[string]string{"a.json": server("a", "v5")})
	c = await(t, ch, "a fixed", command("a", "v5"))
	if len(c.Problems) != 0 {
		t.Errorf("problems after the fix: %v", c.Problems)
	}

	// Delete.
	writeFiles(t, dir, map[string]string{"a.json": ""})
	await(t, ch, "a deleted", names("b"))

	// chmod alone changes nothing: the next snapshot is the one of the edit
	// that follows it. (TestLoopIgnoresNoise checks the same on fake events
	// with its clock under control.)
	if err := os.Chmod(filepath.Join(dir, "b.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, dir, "c.json", server("c", "v1"))
	if c := next(t, ch); !names("b", "c")(c) {
		t.Errorf("after chmod and adding c: snapshot of servers %v, want [b c] (chmod produced a snapshot)", c.Names())
	}
}

func TestWatchFolderCreatedLaterAndRecreated(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "home", "user", "MCPs")
	ch := watching(t, dir, WatchOptions{Debounce: 20 * time.Millisecond})
	await(t, ch, "no servers", names())

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"a.json": server("a", "v1")})
	await(t, ch, "a in the new folder", command("a", "v1"))

	// Delete the folder, then make it again with other contents.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "folder gone", names())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"b.json": server("b", "b1")})
	await(t, ch, "b in the re-created folder", names("b"))

	// Replace the folder by renaming another over its place.
	other := filepath.Join(root, "home", "user", "MCPs.new")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, other, map[string]string{"c.json": server("c", "c1")})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, dir); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "c in the renamed folder", names("c"))
	writeFiles(t, dir, map[string]string{"c.json": server("c", "c2")})
	await(t, ch, "c edited in the renamed folder", command("c", "c2"))
}

// TestWatchBurst: after a burst of writes on the real file system, the last
// write is applied. How many snapshots a burst gives depends on how fast the
// writes come, which a test cannot know: TestLoopDebouncesBurst checks the
// debounce on a fake clock, and BenchmarkWatchBurst measures it here.
func TestWatchBurst(t *testing.T) {
	dir := t.TempDir()
	ch := watching(t, dir, WatchOptions{Debounce: 100 * time.Millisecond})
	await(t, ch, "no servers", names())

	const writes = 50
	for i := 1; i <= writes; i++ {
		writeFiles(t, dir, map[string]string{"a.json": server("a", fmt.Sprint("v", i))})
	}
	await(t, ch, "the last write", command("a", fmt.Sprint("v", writes)))
}

// BenchmarkWatchBurst measures how many snapshots a burst of 50 writes to one
// file gives with the default debounce (every write changes the content, so
// each reload is a snapshot), and how long the burst took.
//
//	go test -run XXX -bench WatchBurst -benchtime 10x ./discovery/
func BenchmarkWatchBurst(b *testing.B) {
	dir := b.TempDir()
	ch := watching(b, dir, WatchOptions{})
	await(b, ch, "no servers", names())
	const writes = 50
	var snapshots int
	var burst time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		for range writes {
			i++
			writeFiles(b, dir, map[string]string{"a.json": server("a", fmt.Sprint("v", i))})
		}
		burst += time.Since(start)
		last := command("a", fmt.Sprint("v", i))
		for done := false; !done; {
			select {
			case c := <-ch:
				snapshots++
				done = last(c)
			case <-time.After(waitLimit):
				b.Fatalf("no snapshot with v%d within %v", i, waitLimit)
			}
		}
	}
	b.ReportMetric(float64(snapshots)/float64(b.N), "snapshots/burst")
	b.ReportMetric(float64(burst.Microseconds())/1000/float64(b.N), "burst-ms")
}

func TestWatchWithInitialAppliesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.json": server("a", "v1")})
	initial := Load(dir, nil, Options{})
	ch := watching(t, dir, WatchOptions{Initial: initial, Debounce: 20 * time.Millisecond})
	// The first snapshot is the edit's: the unchanged folder gave none.
	// (TestLoopInitial checks the same on fake events.)
	writeAtomic(t, dir, "a.json", server("a", "v2"))
	if c := next(t, ch); !command("a", "v2")(c) {
		t.Errorf("first snapshot %v is not the edit's: the unchanged folder produced one", c.Names())
	}
}

// BenchmarkReloadLatency measures the time from a file write to apply being
// called with the new content, for several debounce settings. The default
// is 100ms; the rest is fsnotify delivery plus Load.
//
//	go test -run XXX -bench ReloadLatency -benchtime 20x ./discovery/
func BenchmarkReloadLatency(b *testing.B) {
	for _, debounce := range []time.Duration{time.Millisecond, 10 * time.Millisecond, defaultDebounce} {
		b.Run(fmt.Sprint("debounce=", debounce), func(b *testing.B) {
			dir := b.TempDir()
			// Some realistic company: ten files of three servers.
			for f := range 10 {
				content := fmt.Sprintf(`{"mcpServers": {"s%d_1": {"command": "x"}, "s%d_2": {"url": "http://h/${HOME}"}, "s%d_3": {"command": "y", "args": ["-y", "pkg"], "env": {"K": "${HOME}"}}}}`, f, f, f)
				writeFiles(b, dir, map[string]string{fmt.Sprintf("f%d.json", f): content})
			}
			ch := watching(b, dir, WatchOptions{Debounce: debounce})
			await(b, ch, "initial", func(c *Config) bool { return len(c.Servers) == 30 })
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				want := fmt.Sprint("v", i)
				start := time.Now()
				writeFiles(b, dir, map[string]string{"a.json": server("a", want)})
				await(b, ch, want, command("a", want))
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*9/10]), "p90-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			b.ReportMetric(ms(lat[len(lat)/2]-debounce), "p50-beyond-debounce-ms")
		})
	}
}
