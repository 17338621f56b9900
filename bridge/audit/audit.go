// Package audit records the tool calls that sandboxed code makes, and its
// reads of resources and gets of prompts: one JSON line per call ([Record])
// in calls.jsonl, in the audit folder of the state directory. The file is
// rotated by size (calls.jsonl.1 is the newest old one) and written under
// the folder's lock ([dirlock]), so the runs of one
// codebridge and several codebridge processes sharing a state directory
// append whole lines and rotate once. A record never waits for that lock on
// the call's path: it is queued for the [Log]'s writer instead (see
// [Log.Record]). Arguments and results are recorded by size only, unless
// [Options.Contents] asks for them.
package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
)

// FileName is the current log's name in the folder; rotated ones add .1, .2, ...
const FileName = "calls.jsonl"

// Defaults of [Options].
const (
	DefaultMaxSize = 10 << 20
	DefaultKeep    = 5
)

// Outcomes of a call besides the error codes codebridge gives the sandbox
// (policy_denied, declined, unknown_tool, bad_arguments, server_failed, timeout, ...).
// They are [observe]'s, which the call trace and the metrics name too.
const (
	OutcomeOK        = observe.OutcomeOK        // the tool returned a result
	OutcomeToolError = observe.OutcomeToolError // the tool returned a result marked isError
	OutcomeCancelled = observe.OutcomeCancelled // the run ended (time limit, client, crash) while the call was in progress
)

// KindPin marks a record that is not a tool call but a change to the tools
// code may use (bridge/manifest's pins); its Outcome is OutcomeQuarantined,
// OutcomeApproved or OutcomeDenied, and Error says what changed.
const KindPin = "pin"

// KindResource and KindPrompt mark a read of a resource and a get of a
// prompt by code; their Tool is the resource's URI or the prompt's name, and
// their outcomes are those of a tool call.
const (
	KindResource = "resource"
	KindPrompt   = "prompt"
)

// KindSignIn marks a sign-in to a server that code's request needed,
// through the agent's client (URL-mode elicitation); its Confirm is the
// person's answer (accept, decline, cancel, no answer), its Outcome ok or
// auth_required, and Error why it failed.
const KindSignIn = "sign_in"

// KindMemorySave, KindMemoryDelete, KindToolSave and KindToolDelete mark a
// change code made to what codebridge keeps across sessions: a memory saved
// or deleted (Tool is its key), a saved helper saved or deleted (Tool is
// its name; a saved helper runs in every later session). ArgBytes is the
// size of the value or source, which Arguments holds with
// [Options.Contents]; Outcome is ok or the error's code, and Confirm, for a
// helper saved under MCP_BRIDGE_CONFIRM_SAVE_TOOL, the person's answer.
const (
	KindMemorySave   = "memory_save"
	KindMemoryDelete = "memory_delete"
	KindToolSave     = "tool_save"
	KindToolDelete   = "tool_delete"
)

// Outcomes of a [KindPin] record.
const (
	OutcomeQuarantined = "quarantined" // a tool's definition changed since it was pinned (or it is new, under MCP_BRIDGE_QUARANTINE_NEW): it is hidden and refused
	OutcomeApproved    = "approved"    // a person accepted a tool's current definition (codebridge tools approve)
	OutcomeDenied      = "denied"      // a person refused it: it stays quarantined (codebridge tools deny, the dashboard)
)

// Record is one tool call, as one line of the log.
type Record struct {
	Time       time.Time `json:"time"` // when the call began, UTC, RFC 3339 with nanoseconds
	Session    string    `json:"session"`
	Run        int       `json:"run"`
	Server     string    `json:"server"` // the configured name, or what the code asked for if it is unknown
	Tool       string    `json:"tool"`   // or the URI of a KindResource record, the name of a KindPrompt one
	DurationMS float64   `json:"duration_ms"`
	// Outcome is ok, tool_error, cancelled, or the code of the error the
	// code got (policy_denied, declined, unknown_server, unknown_tool,
	// bad_arguments, server_failed, timeout, internal).
	Outcome string `json:"outcome"`
	// Confirm is, for a call the policy asks the person to approve, what
	// they answered (allow once, allow for this session, remembered,
	// decline, cancel, no answer, cannot ask); empty when none was needed.
	// For a KindSignIn record, the answer to the sign-in question.
	Confirm     string          `json:"confirm,omitempty"`
	Error       string          `json:"error,omitempty"` // codebridge's message for an error, shortened
	ArgBytes    int             `json:"argument_bytes"`
	ResultBytes int             `json:"result_bytes"`
	Arguments   json.RawMessage `json:"arguments,omitempty"` // only with Options.Contents
	Result      json.RawMessage `json:"result,omitempty"`    // only with Options.Contents
	Kind        string          `json:"kind,omitempty"`      // "" for a tool call, or KindPin, KindResource, KindPrompt, KindSignIn, KindMemorySave, ...
}

// maxError bounds Record.Error, in bytes.
const maxError = 300

// Options configure a [Log].
type Options struct {
	MaxSize  int64        // rotate before the file would grow past this many bytes; 0 means DefaultMaxSize
	Keep     int          // rotated files kept; negative means DefaultKeep, 0 none
	Contents bool         // also record arguments and results
	Logger   *slog.Logger // every record at debug level, write failures as warnings; nil discards
}

// Queue bounds: records waiting for the writer while the folder's lock is
// busy; past either, a record is dropped and counted ([Log.Dropped]).
const (
	maxQueue      = 1024
	maxQueueBytes = 16 << 20
)

// dropWarnEvery is how often, at most, dropped records are reported.
const dropWarnEvery = time.Minute

// errBusy says the folder's lock was held and the write was not waited for.
var errBusy = errors.New("audit folder busy")

// Log appends records to the files in one folder.
//
// [Log.Record] never waits for the folder's lock: when the lock is free and
// nothing is queued it writes at once; when another process holds the lock
// (perhaps a stopped one) it queues the record for the Log's writer goroutine
// and returns. The writer runs while records are queued; [Log.Close] waits
// for it, within its context.
type Log struct {
	dir  string
	opts Options

	mu      sync.Mutex // protects following, and orders this process's writes
	failing bool       // the last write failed (and was reported)
	// Kept open between writes, which cost a lock, a stat and a write.
	lock *dirlock.File
	f    *os.File    // the current file as last opened, or nil
	fi   os.FileInfo // f's, to tell when another process rotated it

	qmu         sync.Mutex // protects following; taken after mu, never before it
	queue       [][]byte   // encoded records waiting for the writer, oldest first
	queueBytes  int
	writerDone  chan struct{}      // closed when the running writer returns; nil when none runs
	stopWriter  context.CancelFunc // ends the running writer's wait for the lock
	closed      bool               // Close was called: records are dropped
	dropped     int64              // records dropped since New
	dropWarned  int64              // dropped when last reported
	lastDropLog time.Time
}

// Dir is the audit folder of a state directory.
func Dir(stateDir string) string { return filepath.Join(stateDir, "audit") }

// New returns the log in dir; the folder and file are made on the first write.
// Call [Log.Close] when done, so queued records are written.
func New(dir string, opts Options) *Log {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Keep < 0 {
		opts.Keep = DefaultKeep
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Log{dir: dir, opts: opts}
}

// Path is the current file.
func (l *Log) Path() string { return filepath.Join(l.dir, FileName) }

// Contents reports whether arguments and results are recorded.
func (l *Log) Contents() bool { return l.opts.Contents }

// Record writes r, or queues it when the folder's lock is busy, and logs it
// at debug level; it does not wait for the lock. A failed write is logged as
// a warning, once until writes succeed again; a record that finds the queue
// full (or the Log closed) is dropped, counted in [Log.Dropped] and reported
// at most once a minute: the call itself goes on.
func (l *Log) Record(r Record) {
	if !l.opts.Contents {
		r.Arguments, r.Result = nil, nil
	}
	r.Time = r.Time.UTC()
	r.Error = shorten(r.Error)
	l.opts.Logger.Debug("tool call", "session", r.Session, "run", r.Run, "server", r.Server, "tool", r.Tool,
		"outcome", r.Outcome, "confirm", r.Confirm, "duration_ms", r.DurationMS, "argument_bytes", r.ArgBytes, "result_bytes", r.ResultBytes)
	line, err := encode(r)
	if err != nil {
		l.mu.Lock()
		l.report(err)
		l.mu.Unlock()
		return
	}
	// Write at once if no other process holds the folder's lock and no
	// record waits before this one; else leave it to the writer.
	l.mu.Lock()
	defer l.mu.Unlock()
	l.qmu.Lock()
	idle := len(l.queue) == 0 && !l.closed
	l.qmu.Unlock()
	if idle {
		_, err := l.writeLines(context.Background(), [][]byte{line}, false)
		if !errors.Is(err, errBusy) {
			l.report(err)
			return
		}
	}
	l.enqueue(line)
}

// report logs a write's failure once until writes succeed again. The caller
// holds mu.
func (l *Log) report(err error) {
	switch {
	case err != nil && !l.failing:
		l.opts.Logger.Warn("cannot write the audit log; tool calls go on unrecorded until it works again: fix the folder's permissions or free space, or resume or stop the process that holds its lock", "path", l.Path(), "err", err)
	case err == nil && l.failing:
		l.opts.Logger.Info("writing the audit log again", "path", l.Path())
	}
	l.failing = err != nil
}

// enqueue queues line for the writer, starting it if none runs, or drops it
// when the queue is full or the Log closed.
func (l *Log) enqueue(line []byte) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.closed || len(l.queue) >= maxQueue || l.queueBytes+len(line) > maxQueueBytes {
		l.dropped++
		if now := time.Now(); now.Sub(l.lastDropLog) >= dropWarnEvery {
			l.opts.Logger.Warn("audit records dropped: the audit log's queue is full (or the log is closed), as another process holds the audit folder's lock or the disk is slow; find the holder with 'fuser -v' on the lock",
				"lock", filepath.Join(l.dir, ".lock"), "dropped", l.dropped-l.dropWarned, "dropped_total", l.dropped)
			l.lastDropLog, l.dropWarned = now, l.dropped
		}
		return
	}
	l.queue = append(l.queue, line)
	l.queueBytes += len(line)
	if l.writerDone == nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		l.writerDone, l.stopWriter = done, cancel
		go l.drain(ctx, done)
	}
}

// drain is the writer: while records are queued, it waits for the
// folder's lock through a lock file of its own, without holding mu (at most
// dirlock.DefaultWait, less when ctx ends), then writes all that is queued.
func (l *Log) drain(ctx context.Context, done chan struct{}) {
	defer close(done)
	var wait *dirlock.File
	defer func() {
		if wait != nil {
			wait.Close()
		}
	}()
	for {
		var err error
		if wait == nil {
			wait, err = dirlock.Open(l.dir)
		}
		if err == nil {
			err = wait.Lock(ctx)
		}
		l.mu.Lock()
		l.qmu.Lock()
		batch := l.queue
		l.qmu.Unlock()
		n, written := 0, 0
		if err == nil {
			written, err = l.appendLines(batch)
			n = written
			wait.Unlock()
			if err != nil || runtime.GOOS == "windows" {
				l.closeFile()
			}
		}
		if errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
			// The folder was removed: the rest waits for a lock in a new one.
			if wait != nil {
				wait.Close()
				wait = nil
			}
		} else {
			n = len(batch) // written, or lost with err
		}
		l.report(err)
		l.qmu.Lock()
		l.dropped += int64(n - written)
		for _, line := range batch[:n] {
			l.queueBytes -= len(line)
		}
		l.queue = l.queue[n:]
		last := len(l.queue) == 0
		if last {
			l.queue, l.writerDone, l.stopWriter = nil, nil, nil
		}
		l.qmu.Unlock()
		l.mu.Unlock()
		if last {
			return
		}
	}
}

// Dropped is how many records were dropped since [New]: queued ones whose
// wait for the folder's lock ran out, and those that found the queue full
// or the Log closed.
func (l *Log) Dropped() int64 {
	if l == nil {
		return 0
	}
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return l.dropped
}

// Close writes what is queued, waiting at most until ctx ends, and closes
// the files; later records are dropped. When ctx ends first, what was still
// queued is lost and the error says how much. Close of a nil Log does nothing.
func (l *Log) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.qmu.Lock()
	l.closed = true
	done, stop := l.writerDone, l.stopWriter
	l.qmu.Unlock()
	var err error
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			before := l.Dropped()
			stop()
			<-done // it stops waiting for the lock at once
			if lost := l.Dropped() - before; lost > 0 {
				err = fmt.Errorf("closing the audit log %s: %w before %d queued records were written; they are lost", l.Path(), context.Cause(ctx), lost)
			}
		}
	}
	l.mu.Lock()
	l.close()
	l.mu.Unlock()
	return err
}

func encode(r Record) ([]byte, error) {
	line, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the audit record: %w", err)
	}
	return append(line, '\n'), nil
}

// Write appends r as one line now, rotating first if the file would grow
// past the size limit. Unlike [Log.Record] it waits for the folder's lock
// (at most dirlock.DefaultWait), and this process's records wait behind it.
func (l *Log) Write(r Record) error {
	line, err := encode(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.writeLines(context.Background(), [][]byte{line}, true)
	return err
}

// writeLines appends lines under the folder's lock, waiting for it until ctx
// ends if wait is set, else failing with errBusy when it is held. It returns
// how many were written. The caller holds mu.
func (l *Log) writeLines(ctx context.Context, lines [][]byte, wait bool) (int, error) {
	n, err := l.write(ctx, lines, wait)
	if errors.Is(err, fs.ErrNotExist) {
		// The folder was removed since the last write: start afresh in a new one.
		l.close()
		var m int
		m, err = l.write(ctx, lines[n:], wait)
		n += m
	}
	if (err != nil && !errors.Is(err, errBusy)) || runtime.GOOS == "windows" { // there, an open file cannot be renamed by another process
		l.close()
	}
	return n, err
}

// write appends lines under the folder's lock and returns how many it
// wrote. The caller holds mu.
func (l *Log) write(ctx context.Context, lines [][]byte, wait bool) (int, error) {
	if l.lock == nil {
		lock, err := dirlock.Open(l.dir)
		if err != nil {
			return 0, err
		}
		l.lock = lock
	}
	if wait {
		if err := l.lock.Lock(ctx); err != nil {
			return 0, err
		}
	} else if ok, err := l.lock.TryLock(); err != nil {
		return 0, err
	} else if !ok {
		return 0, errBusy
	}
	defer l.lock.Unlock()
	return l.appendLines(lines)
}

// appendLines appends lines and returns how many it wrote. The caller holds
// mu and the folder's lock.
func (l *Log) appendLines(lines [][]byte) (int, error) {
	for i, line := range lines {
		if err := l.appendLine(line); err != nil {
			return i, err
		}
	}
	return len(lines), nil
}

// appendLine appends one line, rotating first if the file would grow past
// the size limit. The caller holds mu and the folder's lock.
func (l *Log) appendLine(line []byte) error {
	path := l.Path()
	info, err := os.Stat(path)
	if err == nil && info.Size() > 0 && info.Size()+int64(len(line)) > l.opts.MaxSize {
		l.closeFile()
		if err := l.rotate(); err != nil {
			return err
		}
	} else if l.f != nil && (err != nil || !os.SameFile(info, l.fi)) {
		l.closeFile() // another process rotated or removed it
	}
	if l.f == nil {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		l.f, l.fi = f, fi
	}
	_, err = l.f.Write(line)
	return err
}

// closeFile closes the current file. The caller holds mu.
func (l *Log) closeFile() {
	if l.f != nil {
		l.f.Close()
		l.f, l.fi = nil, nil
	}
}

// close closes the file and the lock, to be opened again on the next write.
// The caller holds mu.
func (l *Log) close() {
	l.closeFile()
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
	}
}

// rotate shifts calls.jsonl to .1, .1 to .2, ..., dropping the oldest. The
// caller holds the folder's lock.
func (l *Log) rotate() error {
	path := l.Path()
	if l.opts.Keep == 0 {
		return os.Remove(path)
	}
	if err := os.Remove(rotated(path, l.opts.Keep)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for i := l.opts.Keep - 1; i >= 1; i-- {
		if err := os.Rename(rotated(path, i), rotated(path, i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, rotated(path, 1))
}

func rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }

// shorten keeps the first line of msg, at most maxError bytes of it.
func shorten(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	if len(msg) <= maxError {
		return msg
	}
	cut := maxError
	for cut > 0 && !utf8Start(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Files lists the log files in dir, oldest first: the rotated ones by
// number, highest first, then the current one.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type file struct {
		path string
		n    int // 0 for the current file
	}
	var files []file
	for _, e := range entries {
		name := e.Name()
		if name == FileName {
			files = append(files, file{filepath.Join(dir, name), 0})
			continue
		}
		if num, ok := strings.CutPrefix(name, FileName+"."); ok {
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				files = append(files, file{filepath.Join(dir, name), n})
			}
		}
	}
	// Oldest first: highest number first, the current file (0) last.
	slices.SortFunc(files, func(a, b file) int { return b.n - a.n })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out, nil
}

// Tail returns the last n records in dir (all when n <= 0) that keep accepts
// (all when keep is nil), oldest first. Lines that are not records, such as
// one cut short by a crash, are counted in skipped.
func Tail(dir string, n int, keep func(*Record) bool) (recs []Record, skipped int, err error) {
	files, err := Files(dir)
	if err != nil {
		return nil, 0, err
	}
	for _, path := range files {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // rotated away since the listing
		}
		if err != nil {
			return nil, skipped, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 256<<20) // a line with contents can be as big as a call
		for sc.Scan() {
			if len(strings.TrimSpace(sc.Text())) == 0 {
				continue
			}
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Time.IsZero() {
				skipped++
				continue
			}
			if keep != nil && !keep(&r) {
				continue
			}
			recs = append(recs, r)
			if n > 0 && len(recs) > 2*n {
				recs = append(recs[:0], recs[len(recs)-n:]...)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, skipped, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	if n > 0 && len(recs) > n {
		recs = recs[len(recs)-n:]
	}
	return recs, skipped, nil
}
