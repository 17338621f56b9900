// Package memory keeps what sandboxed code asks codebridge to remember across
// sessions and restarts: JSON values under keys (save_memory, load_memory, ...)
// and saved helpers, the source of Python functions that every new sandbox
// session defines (save_tool). Both live as files under the state directory,
// one file per entry, written atomically (a temporary file in the same
// directory, fsync, rename), so concurrent runs and several codebridge
// processes sharing the directory only ever see whole entries; the last write
// wins.
package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on what is stored.
const (
	MaxKey       = 128       // characters in a memory key
	MaxValue     = 1 << 20   // bytes of one memory's JSON value
	MaxTotal     = 64 << 20  // bytes of all memories' files together
	MaxToolName  = 64        // characters in a saved helper's name
	MaxSource    = 256 << 10 // bytes of a saved helper's source
	MaxMetadata  = 64 << 10  // bytes of a memory's metadata
	maxToolCount = 1000
)

// Error is a failure the sandbox sees as MCPError with Code.
type Error struct {
	Code string // bad_arguments, not_found, too_large, internal
	Msg  string
}

func (e *Error) Error() string   { return e.Msg }
func (e *Error) RPCCode() string { return e.Code }

func bad(format string, args ...any) error {
	return &Error{Code: "bad_arguments", Msg: fmt.Sprintf(format, args...)}
}

// Store is the memories and saved helpers under one directory.
type Store struct {
	dir string
}

// New returns the store under dir (e.g. the state directory); folders are
// made on first write.
func New(dir string) *Store { return &Store{dir: dir} }

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

// Memory is one stored value with what is known about it.
type Memory struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Bytes    int             `json:"bytes"`
	Updated  time.Time       `json:"updated"`
}

func (s *Store) memDir() string  { return filepath.Join(s.dir, "memory") }
func (s *Store) toolDir() string { return filepath.Join(s.dir, "tools") }

// checkKey validates a memory key: 1 to MaxKey printable characters.
func checkKey(key string) error {
	n := utf8.RuneCountInString(key)
	if n == 0 || n > MaxKey || !utf8.ValidString(key) {
		return bad("memory key must be 1 to %d characters, got %d", MaxKey, n)
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return bad("memory key %q has a non-printable character %U; use letters, digits and punctuation", key, r)
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

// Save stores value (JSON) under key, with optional metadata (JSON).
func (s *Store) Save(key string, value, metadata json.RawMessage) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) == 0 || !json.Valid(value) {
		return bad("memory %q: the value must be JSON (dicts, lists, strings, numbers, booleans, None)", key)
	}
	if len(value) > MaxValue {
		return &Error{Code: "too_large", Msg: fmt.Sprintf("memory %q is %d bytes of JSON, over the %d MiB limit of one memory: store less, or split it over several keys", key, len(value), MaxValue>>20)}
	}
	if len(metadata) > 0 && (string(metadata) == "null" || !json.Valid(metadata)) {
		metadata = nil
	}
	if len(metadata) > MaxMetadata {
		return &Error{Code: "too_large", Msg: fmt.Sprintf("metadata of memory %q is %d bytes, over the %d KiB limit", key, len(metadata), MaxMetadata>>10)}
	}
	rec, err := json.Marshal(Memory{Key: key, Value: value, Metadata: metadata, Bytes: len(value), Updated: time.Now().UTC()})
	if err != nil {
		return err
	}
	total, err := s.total(s.keyFile(key))
	if err != nil {
		return err
	}
	if total+int64(len(rec)) > MaxTotal {
		return &Error{Code: "too_large", Msg: fmt.Sprintf("saving memory %q would make all memories %d bytes, over the %d MiB total: delete_memory() what is no longer needed", key, total+int64(len(rec)), MaxTotal>>20)}
	}
	return writeAtomic(s.keyFile(key), rec)
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
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || filepath.Join(s.memDir(), e.Name()) == except {
			continue
		}
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n, nil
}

// Load returns the memory under key; ok is false when there is none.
func (s *Store) Load(key string) (m Memory, ok bool, err error) {
	if err := checkKey(key); err != nil {
		return Memory{}, false, err
	}
	b, err := os.ReadFile(s.keyFile(key))
	if errors.Is(err, os.ErrNotExist) {
		return Memory{}, false, nil
	}
	if err != nil {
		return Memory{}, false, fmt.Errorf("reading memory %q: %w", key, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Memory{}, false, fmt.Errorf("memory %q is damaged (%s): delete it with 'codebridge memory delete': %w", key, s.keyFile(key), err)
	}
	return m, true, nil
}

// Delete removes the memory under key and reports whether it existed.
func (s *Store) Delete(key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	return remove(s.keyFile(key))
}

// List returns every memory, without values, sorted by key.
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
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.memDir(), e.Name()))
		if err != nil {
			continue // deleted meanwhile
		}
		var m Memory
		if json.Unmarshal(b, &m) != nil || s.keyFile(m.Key) != filepath.Join(s.memDir(), e.Name()) {
			continue // not a memory of ours
		}
		m.Value = nil
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Tool is a saved helper.
type Tool struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Source      string    `json:"source"`
	Updated     time.Time `json:"updated"`
}

func checkToolName(name string) error {
	if name == "" || len(name) > MaxToolName {
		return bad("a saved helper's name must be a Python identifier of 1 to %d characters, got %q", MaxToolName, name)
	}
	for i, r := range name {
		if !(r == '_' || r < 128 && unicode.IsLetter(r) || i > 0 && r < 128 && unicode.IsDigit(r)) {
			return bad("a saved helper's name must be a Python identifier (letters, digits, _; not starting with a digit), got %q", name)
		}
	}
	return nil
}

func (s *Store) toolFile(name string) string { return filepath.Join(s.toolDir(), name+".json") }

// SaveTool stores a helper's source under name.
func (s *Store) SaveTool(t Tool) error {
	if err := checkToolName(t.Name); err != nil {
		return err
	}
	if strings.TrimSpace(t.Source) == "" {
		return bad("saved helper %q has no source", t.Name)
	}
	if len(t.Source) > MaxSource {
		return &Error{Code: "too_large", Msg: fmt.Sprintf("saved helper %q is %d bytes of source, over the %d KiB limit", t.Name, len(t.Source), MaxSource>>10)}
	}
	if tools, err := s.Tools(); err != nil {
		return err
	} else if len(tools) >= maxToolCount {
		return &Error{Code: "too_large", Msg: fmt.Sprintf("there are already %d saved helpers: delete_saved_tool() some first", len(tools))}
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
	return remove(s.toolFile(name))
}

// Tools returns every saved helper, sorted by name. A damaged file is skipped.
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
		if !ok || e.IsDir() || checkToolName(name) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.toolDir(), e.Name()))
		if err != nil {
			continue
		}
		var t Tool
		if json.Unmarshal(b, &t) != nil || t.Name != name {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// writeAtomic replaces path with data: readers see the old file or the new
// one, never part of one.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func remove(path string) (bool, error) {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
