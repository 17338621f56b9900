// Package audit records the tool calls that sandboxed code makes, and its
// reads of resources and gets of prompts: one JSON line per call ([Record])
// in calls.jsonl, in the audit folder of the state directory. The file is
// rotated by size (calls.jsonl.1 is the newest old one) and written under
// the folder's lock ([dirlock]), so the runs of one
// codebridge and several codebridge processes sharing a state directory
// append whole lines and rotate once. Arguments and results are recorded by
// size only, unless [Options.Contents] asks for them.
package audit

import (
	"bufio"
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
const (
	OutcomeOK        = "ok"         // the tool returned a result
	OutcomeToolError = "tool_error" // the tool returned a result marked isError
	OutcomeCancelled = "cancelled"  // the run ended (time limit, client, crash) while the call was in progress
)

// KindPin marks a record that is not a tool call but a change to the tools
// code may use (bridge/manifest's pins); its Outcome is OutcomeQuarantined or
// OutcomeApproved, and Error says what changed.
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

// Log appends records to the files in one folder.
type Log struct {
	dir  string
	opts Options

	mu      sync.Mutex // protects following, and orders this process's writes
	failing bool       // the last write failed (and was reported)
	// Kept open between writes, which cost a lock, a stat and a write.
	lock *dirlock.File
	f    *os.File    // the current file as last opened, or nil
	fi   os.FileInfo // f's, to tell when another process rotated it
}

// Dir is the audit folder of a state directory.
func Dir(stateDir string) string { return filepath.Join(stateDir, "audit") }

// New returns the log in dir; the folder and file are made on the first write.
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

// Record writes r and logs it at debug level. A failed write is logged as a
// warning, once until writes succeed again: the call itself goes on.
func (l *Log) Record(r Record) {
	if !l.opts.Contents {
		r.Arguments, r.Result = nil, nil
	}
	r.Time = r.Time.UTC()
	r.Error = shorten(r.Error)
	l.opts.Logger.Debug("tool call", "session", r.Session, "run", r.Run, "server", r.Server, "tool", r.Tool,
		"outcome", r.Outcome, "confirm", r.Confirm, "duration_ms", r.DurationMS, "argument_bytes", r.ArgBytes, "result_bytes", r.ResultBytes)
	err := l.Write(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil && !l.failing:
		l.opts.Logger.Warn("cannot write the audit log; tool calls go on unrecorded until it works again: fix the folder's permissions or free space", "path", l.Path(), "err", err)
	case err == nil && l.failing:
		l.opts.Logger.Info("writing the audit log again", "path", l.Path())
	}
	l.failing = err != nil
}

// Write appends r as one line, rotating first if the file would grow past
// the size limit.
func (l *Log) Write(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the audit record: %w", err)
	}
	line = append(line, '\n')

	l.mu.Lock()
	defer l.mu.Unlock()
	err = l.write(line)
	if errors.Is(err, fs.ErrNotExist) {
		// The folder was removed since the last write: start afresh in a new one.
		l.close()
		err = l.write(line)
	}
	if err != nil || runtime.GOOS == "windows" { // there, an open file cannot be renamed by another process
		l.close()
	}
	return err
}

// write appends line under the folder's lock. The caller holds mu.
func (l *Log) write(line []byte) error {
	if l.lock == nil {
		lock, err := dirlock.Open(l.dir)
		if err != nil {
			return err
		}
		l.lock = lock
	}
	if err := l.lock.Lock(); err != nil {
		return err
	}
	defer l.lock.Unlock()
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
