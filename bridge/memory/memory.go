// Package memory keeps what sandboxed code asks codebridge to remember across
// sessions and restarts: JSON values under keys (save_memory, load_memory, ...)
// and saved helpers, the source of Python functions that every new sandbox
// session defines (save_tool).
//
// Both live as files under the state directory, one file per entry
// (memory/<sha256 of the key>.json, tools/<name>.json), each written
// atomically: a temporary file in the same directory, fsync, rename. Readers
// take no lock and see a whole old entry or a whole new one. Writers (save,
// delete) hold an exclusive lock on the folder's .lock file (flock on Unix,
// LockFileEx on Windows) while they check limits and revisions and rename, so
// several runs and several codebridge processes sharing a state directory
// keep the total limits, and a conditional save ([Store.SaveIf], which
// update_memory uses) never loses a concurrent update.
package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codebridge-mcp/codebridge/bridge/atomicfile"
	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Limits on what is stored, and the defaults of [Limits].
const (
	MaxKey       = 128       // characters in a memory key
	MaxValue     = 1 << 20   // bytes of one memory's JSON value
	MaxTotal     = 64 << 20  // bytes of all memories' files together
	MaxMetadata  = 64 << 10  // bytes of a memory's metadata
	MaxToolName  = 64        // characters in a saved helper's name
	MaxSource    = 256 << 10 // bytes of one saved helper's source
	MaxSources   = 4 << 20   // bytes of all saved helpers' source (every new session receives it)
	maxToolCount = 1000
)

// Limits bound what a [Store] keeps; a zero field means its default above.
type Limits struct {
	Value   int   // bytes of one memory's JSON value (MaxValue)
	Total   int64 // bytes of all memories' files together (MaxTotal)
	Source  int   // bytes of one saved helper's source (MaxSource)
	Sources int   // bytes of all saved helpers' source together (MaxSources)
}

// Error is a failure the sandbox sees as MCPError with Code: bad_arguments,
// too_large, conflict or internal. Msg is what the sandbox sees, and never
// names a path on the host; Err, the cause, may, and is for the log.
type Error struct {
	Code protocol.Code
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// RPCCode implements [protocol.CodedError].
func (e *Error) RPCCode() protocol.Code { return e.Code }

func bad(format string, args ...any) error {
	return &Error{Code: protocol.CodeBadArguments, Msg: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &Error{Code: protocol.CodeTooLarge, Msg: fmt.Sprintf(format, args...)}
}

// Store is the memories and saved helpers under one directory. Its methods
// may be called concurrently, also by other processes on the same directory.
type Store struct {
	dir    string
	limits Limits
}

// New returns the store under dir (e.g. the state directory) with the
// default limits; folders are made on first write.
func New(dir string) *Store { return NewWithLimits(dir, Limits{}) }

// NewWithLimits is [New] with other limits.
func NewWithLimits(dir string, l Limits) *Store {
	if l.Value <= 0 {
		l.Value = MaxValue
	}
	if l.Total <= 0 {
		l.Total = MaxTotal
	}
	if l.Source <= 0 {
		l.Source = MaxSource
	}
	if l.Sources <= 0 {
		l.Sources = MaxSources
	}
	return &Store{dir: dir, limits: l}
}

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

// Memory is one stored value with what is known about it; it is also the
// format of a memory's file.
type Memory struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Bytes    int             `json:"bytes"` // of Value
	Created  time.Time       `json:"created"`
	Updated  time.Time       `json:"updated"`
	// Rev counts the saves of the key since it was last absent: 1 for the
	// first. A missing key has revision 0.
	Rev int64 `json:"rev"`
}

func (s *Store) memDir() string  { return filepath.Join(s.dir, "memory") }
func (s *Store) toolDir() string { return filepath.Join(s.dir, "tools") }

// checkKey validates a memory key: 1 to MaxKey printable characters.
func checkKey(key string) error {
	if !utf8.ValidString(key) {
		return bad("memory key %q is not valid UTF-8", key)
	}
	if n := utf8.RuneCountInString(key); n == 0 || n > MaxKey {
		return bad("memory key must be 1 to %d characters, got %d", MaxKey, n)
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return bad("memory key %q has a non-printable character %U; use letters, digits, spaces and punctuation", key, r)
		}
	}
	return nil
}

// keyFile is the file of a key: a hash of it, so no key can name a path or
// be too long for a file name; the key itself is in the file.
func (s *Store) keyFile(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.memDir(), hex.EncodeToString(sum[:])+".json")
}

// Save stores value (JSON) under key, with optional metadata (JSON),
// replacing what the key held.
func (s *Store) Save(key string, value, metadata json.RawMessage) error {
	return s.save(key, value, metadata, -1)
}

// SaveIf is [Store.Save] on the condition that the key's revision is still
// rev (0: nothing is stored under it); otherwise it changes nothing and
// fails with code "conflict". Load, compute, SaveIf, and on conflict start
// again is a read-modify-write that loses no concurrent update.
func (s *Store) SaveIf(key string, value, metadata json.RawMessage, rev int64) error {
	if rev < 0 {
		return bad("memory %q: revision %d is negative", key, rev)
	}
	return s.save(key, value, metadata, rev)
}

// save stores a memory; ifRev >= 0 makes it conditional (see SaveIf).
func (s *Store) save(key string, value, metadata json.RawMessage, ifRev int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) == 0 || !json.Valid(value) {
		return bad("memory %q: the value must be JSON (dicts, lists, strings, numbers, booleans, None)", key)
	}
	if len(value) > s.limits.Value {
		return tooLarge("memory %q is %s of JSON, over the %s limit of one memory: store less, or split it over several keys",
			key, size(int64(len(value))), size(int64(s.limits.Value)))
	}
	if string(metadata) == "null" {
		metadata = nil
	}
	if len(metadata) > 0 && !json.Valid(metadata) {
		return bad("metadata of memory %q must be JSON", key)
	}
	if len(metadata) > MaxMetadata {
		return tooLarge("metadata of memory %q is %s, over the %s limit", key, size(int64(len(metadata))), size(MaxMetadata))
	}

	unlock, err := dirlock.Lock(s.memDir())
	if err != nil {
		return err
	}
	defer unlock()
	path := s.keyFile(key)
	old, found, err := readMemory(path)
	if err != nil {
		found = false // a damaged file is replaced
	}
	now := time.Now().UTC()
	m := Memory{Key: key, Value: value, Metadata: metadata, Bytes: len(value), Created: now, Updated: now, Rev: 1}
	if found {
		m.Created, m.Rev = old.Created, old.Rev+1
	}
	if ifRev >= 0 && ifRev != m.Rev-1 {
		return &Error{Code: protocol.CodeConflict, Msg: fmt.Sprintf("memory %q changed meanwhile (revision %d, expected %d): load it again and retry", key, m.Rev-1, ifRev)}
	}
	rec, err := json.Marshal(m)
	if err != nil {
		return err
	}
	total, err := s.total(path)
	if err != nil {
		return err
	}
	if total+int64(len(rec)) > s.limits.Total {
		return tooLarge("saving memory %q would make all memories %s, over the %s total: delete_memory() what is no longer needed",
			key, size(total+int64(len(rec))), size(s.limits.Total))
	}
	return writeAtomic(path, rec)
}

// total is the size of every memory's file except the one at except.
func (s *Store) total(except string) (int64, error) {
	entries, err := os.ReadDir(s.memDir())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing memories: %w", err)
	}
	var n int64
	for _, e := range entries {
		if !isEntry(e) || filepath.Join(s.memDir(), e.Name()) == except {
			continue
		}
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n, nil
}

// isEntry tells a stored entry's file from the lock and temporary files.
func isEntry(e os.DirEntry) bool {
	return !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".")
}

// readMemory reads a memory's file; found is false when there is none.
func readMemory(path string) (m Memory, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Memory{}, false, nil
	}
	if err != nil {
		return Memory{}, false, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Memory{}, false, err
	}
	// Files written before revisions and creation times were kept.
	m.Rev = max(m.Rev, 1)
	if m.Created.IsZero() {
		m.Created = m.Updated
	}
	return m, true, nil
}

// Load returns the memory under key; found is false when there is none.
func (s *Store) Load(key string) (m Memory, found bool, err error) {
	if err := checkKey(key); err != nil {
		return Memory{}, false, err
	}
	m, found, err = readMemory(s.keyFile(key))
	if err != nil {
		return Memory{}, false, &Error{Code: protocol.CodeInternal, Err: fmt.Errorf("reading %s: %w", s.keyFile(key), err),
			Msg: fmt.Sprintf("memory %q is damaged on the host and cannot be read: delete_memory(%q) in code, or codebridge memory delete on the host, removes it", key, key)}
	}
	return m, found, nil
}

// Exists reports whether a memory is stored under key.
func (s *Store) Exists(key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	_, err := os.Stat(s.keyFile(key))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the memory under key and reports whether it existed.
func (s *Store) Delete(key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	return removeLocked(s.memDir(), s.keyFile(key))
}

// List returns every memory, without values, sorted by key. Files that are
// not whole memories are skipped.
func (s *Store) List() ([]Memory, error) {
	entries, err := os.ReadDir(s.memDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing memories: %w", err)
	}
	var out []Memory
	for _, e := range entries {
		if !isEntry(e) {
			continue
		}
		path := filepath.Join(s.memDir(), e.Name())
		m, found, err := readMemory(path)
		if err != nil || !found || s.keyFile(m.Key) != path {
			continue // deleted meanwhile, damaged, or not a memory of ours
		}
		m.Value = nil
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Memory) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Tool is a saved helper: the source of a Python function (or class) that
// every new sandbox session defines as a global named Name.
type Tool struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`         // the docstring, unless the agent gave one
	Signature   string    `json:"signature,omitempty"` // e.g. "clean(rows, drop_empty=True)"
	Source      string    `json:"source"`
	Updated     time.Time `json:"updated"`
}

// keywords are Python's reserved words: not valid names of a global.
var keywords = []string{
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
	"elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
	"not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
}

// checkToolName validates a saved helper's name: an ASCII Python identifier
// that is not a keyword, so it is also a safe file name.
func checkToolName(name string) error {
	if name == "" || len(name) > MaxToolName {
		return bad("a saved helper's name must be a Python identifier of 1 to %d characters, got %q", MaxToolName, name)
	}
	for i, r := range name {
		if !(r == '_' || r < 128 && unicode.IsLetter(r) || i > 0 && r < 128 && unicode.IsDigit(r)) {
			return bad("a saved helper's name must be a Python identifier (ASCII letters, digits, _; not starting with a digit), got %q", name)
		}
	}
	if slices.Contains(keywords, name) {
		return bad("a saved helper cannot be named %q: it is a Python keyword", name)
	}
	return nil
}

func (s *Store) toolFile(name string) string { return filepath.Join(s.toolDir(), name+".json") }

// SaveTool stores a helper's source under t.Name, replacing one of that name.
// The name must not be reserved (a builtin, one of codebridge's globals) and
// the source must be one def of that name ([CheckSource]): it runs in every
// later session, so this check is made here, not in the sandbox.
func (s *Store) SaveTool(t Tool) error {
	if len(t.Source) > s.limits.Source {
		return tooLarge("saved helper %q is %s of source, over the %s limit of one helper", t.Name, size(int64(len(t.Source))), size(int64(s.limits.Source)))
	}
	if err := CheckTool(t.Name, t.Source); err != nil {
		return err
	}
	unlock, err := dirlock.Lock(s.toolDir())
	if err != nil {
		return err
	}
	defer unlock()
	tools, err := s.Tools()
	if err != nil {
		return err
	}
	count, sources := 0, len(t.Source)
	for _, o := range tools {
		if o.Name != t.Name {
			count++
			sources += len(o.Source)
		}
	}
	if count >= maxToolCount {
		return tooLarge("there are already %d saved helpers, the most codebridge keeps: delete_saved_tool() some first", count)
	}
	if sources > s.limits.Sources {
		return tooLarge("saving helper %q would make all saved helpers %s of source, over the %s total (every new session defines them): delete_saved_tool() some first",
			t.Name, size(int64(sources)), size(int64(s.limits.Sources)))
	}
	t.Updated = time.Now().UTC()
	rec, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return writeAtomic(s.toolFile(t.Name), rec)
}

// DeleteTool removes a saved helper and reports whether it existed.
func (s *Store) DeleteTool(name string) (bool, error) {
	if err := checkToolName(name); err != nil {
		return false, err
	}
	return removeLocked(s.toolDir(), s.toolFile(name))
}

// Tools returns every saved helper, sorted by name. A damaged file is
// skipped, and so is a helper [CheckTool] refuses (saved by an older
// codebridge): new sessions do not define it; DeleteTool still removes it.
func (s *Store) Tools() ([]Tool, error) {
	entries, err := os.ReadDir(s.toolDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing saved helpers: %w", err)
	}
	var out []Tool
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !isEntry(e) || checkToolName(name) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.toolDir(), e.Name()))
		if err != nil {
			continue
		}
		var t Tool
		if json.Unmarshal(b, &t) != nil || t.Name != name || CheckTool(t.Name, t.Source) != nil {
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// writeAtomic replaces path with data ([atomicfile.Replace]), making its
// folder first.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return atomicfile.Replace(path, data, 0o600)
}

// removeLocked removes path under dir's lock and reports whether it existed.
func removeLocked(dir, path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil // nothing to do: no need to make the folder for its lock
	}
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	err = os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	atomicfile.SyncDir(dir)
	return true, nil
}

// size formats n bytes for a message: "1 MiB", "64 KiB", "900 bytes",
// "1048577 bytes (1.0 MiB)".
func size(n int64) string {
	for _, u := range []struct {
		unit string
		div  int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.div {
			if n%u.div == 0 {
				return fmt.Sprintf("%d %s", n/u.div, u.unit)
			}
			return fmt.Sprintf("%d bytes (%.1f %s)", n, float64(n)/float64(u.div), u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
