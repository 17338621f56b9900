package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions configure [Watch].
type WatchOptions struct {
	Options // how each snapshot is loaded

	// Initial is the snapshot the caller already has from [Load]. Watch
	// calls apply only for snapshots that differ from it. Nil means Watch
	// loads the first snapshot itself and passes it to apply.
	Initial *Config

	// Debounce is how long the folder must stay quiet after a change before
	// it is read again, so that an editor's burst of writes and renames gives
	// one reload. Zero means 100ms.
	Debounce time.Duration

	// MaxDelay bounds how long a reload waits while changes keep coming.
	// Zero means 1s.
	MaxDelay time.Duration

	// Logger receives the watcher's own troubles (a lost event queue, a
	// folder that cannot be watched). Nil means discard.
	Logger *slog.Logger
}

const (
	defaultDebounce = 100 * time.Millisecond
	defaultMaxDelay = time.Second
)

// Watch follows dir and calls apply with a new [Config] whenever what the
// folder defines changes: servers, or problems, so a file that breaks is
// reported. Each snapshot is loaded with the previous one as prev, so a
// broken file keeps its last good servers (see [Load]).
//
// dir is watched as a folder, not file by file, so editors that save by
// writing a temporary file and renaming it over the original are seen. A dir
// that does not exist yet is fine: Watch follows its nearest existing parent
// until it appears, and goes back to that when dir is deleted. A file that is
// a symbolic link is read through the link, but an edit of its target outside
// dir is only seen at the next change in dir.
//
// apply is called from Watch's goroutine, one call at a time, never after ctx
// is done; while it runs, changes queue up and are coalesced. Watch returns
// nil once ctx is done and everything it started has stopped, or an error if
// the file watcher cannot be started.
func Watch(ctx context.Context, dir string, opts WatchOptions, apply func(*Config)) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w (on Linux, raise fs.inotify.max_user_instances or max_user_watches)", dir, err)
	}
	defer fw.Close() // waits for fsnotify's reader goroutine
	w := newWatcher(dir, opts, fw, apply)
	return w.run(ctx, fw.Events, fw.Errors)
}

// watchList is the part of *fsnotify.Watcher that the watcher drives.
type watchList interface {
	Add(name string) error
	Remove(name string) error
}

// watcher is the state of one Watch call; it is used by one goroutine only.
type watcher struct {
	dir      string
	opts     Options
	initial  *Config
	debounce time.Duration
	maxDelay time.Duration
	log      *slog.Logger
	fs       watchList
	apply    func(*Config)
	load     func(prev *Config) *Config

	watched string  // what fs watches: dir, or its nearest existing parent
	cur     *Config // the last snapshot given to apply (or Initial)
}

func newWatcher(dir string, opts WatchOptions, fs watchList, apply func(*Config)) *watcher {
	w := &watcher{
		dir:      filepath.Clean(dir),
		opts:     opts.Options,
		initial:  opts.Initial,
		debounce: opts.Debounce,
		maxDelay: opts.MaxDelay,
		log:      opts.Logger,
		fs:       fs,
		apply:    apply,
	}
	if w.debounce <= 0 {
		w.debounce = defaultDebounce
	}
	if w.maxDelay <= 0 {
		w.maxDelay = defaultMaxDelay
	}
	w.maxDelay = max(w.maxDelay, w.debounce)
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.load = func(prev *Config) *Config { return Load(w.dir, prev, w.opts) }
	return w
}

// run is the watcher's loop: it turns events into debounced reloads.
func (w *watcher) run(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error) error {
	// Watch first, then read, so that no change falls between the two.
	w.arm()
	w.cur = w.initial
	w.reload(ctx, w.initial == nil)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		pending    bool      // a reload is scheduled
		burstStart time.Time // when the first change of the pending reload came
	)
	schedule := func() {
		now := time.Now()
		if !pending {
			pending, burstStart = true, now
		}
		// Wait for quiet, but not past MaxDelay from the burst's start.
		timer.Reset(max(0, min(w.debounce, burstStart.Add(w.maxDelay).Sub(now))))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("watching %s: the file watcher stopped unexpectedly", w.dir)
			}
			switch w.classify(ev) {
			case ignore:
			case structural:
				w.arm()
				schedule()
			case change:
				schedule()
			}
		case err, ok := <-errs:
			if !ok {
				return fmt.Errorf("watching %s: the file watcher stopped unexpectedly", w.dir)
			}
			// Most likely fsnotify.ErrEventOverflow: changes may have been
			// missed, so read the folder again.
			w.log.Warn("watching MCP server folder", "dir", w.dir, "err", err)
			schedule()
		case <-timer.C:
			pending = false
			w.arm()
			w.reload(ctx, false)
		}
	}
}

// reload reads the folder and calls apply if the snapshot changed (or force).
func (w *watcher) reload(ctx context.Context, force bool) {
	cfg := w.load(w.cur)
	if !force && cfg.Equal(w.cur) {
		return
	}
	w.cur = cfg
	if ctx.Err() != nil {
		return
	}
	w.apply(cfg)
}

type eventKind int

const (
	ignore     eventKind = iota
	change               // a config file changed: reload after the debounce
	structural           // dir or a parent came or went: move the watch, then reload
)

func (w *watcher) classify(ev fsnotify.Event) eventKind {
	name := filepath.Clean(ev.Name)
	if w.watched != w.dir {
		// Waiting for dir: only dir or a folder on the way to it matters.
		if name == w.dir || strings.HasPrefix(w.dir, name+string(filepath.Separator)) {
			return structural
		}
		return ignore
	}
	if name == w.dir {
		return structural // dir itself removed, renamed or chmod-ed
	}
	if filepath.Dir(name) == w.dir && isConfigName(filepath.Base(name)) {
		return change
	}
	return ignore // editor temp files, swap files, subfolders
}

// isConfigName reports whether Load reads a file of that name.
func isConfigName(base string) bool {
	return !strings.HasPrefix(base, ".") && filepath.Ext(base) == ".json"
}

// arm points the watch at dir if it exists, else at its nearest existing
// parent.
func (w *watcher) arm() {
	for range 100 { // bounded: each round needs a folder created concurrently
		target := nearestDir(w.dir)
		if target == "" {
			w.log.Error("watching MCP server folder: no parent folder exists", "dir", w.dir)
			return
		}
		if w.watched != "" && w.watched != target {
			_ = w.fs.Remove(w.watched) // fails if the folder is gone already
			w.watched = ""
		}
		// Add even when target is what we watch: if it was deleted and
		// re-created, this watches the new folder.
		if err := w.fs.Add(target); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed meanwhile: look again
			}
			w.log.Error("watching MCP server folder: changes will not be seen", "dir", target, "err", err)
			return
		}
		w.watched = target
		// A folder created after nearestDir looked and before Add would send
		// no event: look again until nothing moved.
		if nearestDir(w.dir) == target {
			return
		}
	}
}

// nearestDir returns dir if it is a folder, else its nearest parent that is,
// or "" if none is.
func nearestDir(dir string) string {
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
