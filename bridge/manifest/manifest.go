// Package manifest keeps each MCP server's tool list on disk, so codebridge
// can search and document a server's tools without starting it.
//
// A manifest is keyed by the server's definition (how it is started or
// reached, not its name, description or policy): a changed definition has no
// manifest until the server lists its tools again, so stale tools are never
// served for it. The key is an HMAC with a random secret kept in the folder
// (.key, 0600), not a plain hash: a definition's environment and headers
// often hold tokens, and a plain hash of them would let anyone who reads a
// manifest test guesses of a token offline. Files are written whole (a temporary file renamed over the
// old one), so concurrent codebridge processes and crashes leave either the
// old manifest or the new one. An unreadable or corrupt file counts as no
// manifest.
//
// Beside the manifests, [Pins] keep each server's tool definitions as they
// were first seen or last approved, by server name, so a tool whose
// definition changes later can be quarantined until a person approves it.
package manifest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/atomicfile"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// Store is a folder of manifests. Its methods are safe for concurrent use,
// also by several processes.
type Store struct {
	dir string

	mu      sync.Mutex
	secret  []byte                // the HMAC key, once read or made
	pins    map[string]cachedPins // pin files read, by server name
	lists   map[string]cachedList // manifests read, by path
	watch   *dirWatch             // the pins folder's, once it exists
	noWatch bool                  // a watch could not be made: every use looks at the file
	gen     int                   // bumped when watch reports a change
}

// Dir is the manifest folder in codebridge's state directory.
func Dir(stateDir string) string { return filepath.Join(stateDir, "manifests") }

// New returns the store in dir, which is created on the first Save.
func New(dir string) *Store { return &Store{dir: dir} }

// Manifest is a server's tool list as it was last listed.
type Manifest struct {
	Server  string      `json:"server"`
	Key     string      `json:"key"`
	Written time.Time   `json:"written"`
	Tools   []*mcp.Tool `json:"tools"`
}

// secretFile holds the folder's HMAC key.
const secretFile = ".key"

// key identifies what a definition starts or reaches: transport, command,
// arguments, environment, working directory, URL and headers. The folder's
// secret is made first if create is set; without it there is no key ("").
func (s *Store) key(srv *discovery.Server, create bool) (string, error) {
	secret, err := s.loadSecret(create)
	if err != nil || secret == nil {
		return "", err
	}
	raw, _ := json.Marshal(struct {
		Transport discovery.Transport
		Command   string
		Args      []string
		Env       map[string]string // encoding/json sorts map keys
		Cwd       string
		URL       string
		Headers   map[string]string
	}{srv.Transport, srv.Command, srv.Args, srv.Env, srv.Cwd, srv.URL, srv.Headers})
	mac := hmac.New(sha256.New, secret)
	mac.Write(raw)
	return hex.EncodeToString(mac.Sum(nil)), nil
}

// loadSecret returns the folder's HMAC key: read from .key, or, if create is
// set and there is none, made and written there. Processes making it at once
// (replicas on a shared state folder) agree: the file appears whole, once,
// and the others read that one.
func (s *Store) loadSecret(create bool) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secret != nil {
		return s.secret, nil
	}
	path := filepath.Join(s.dir, secretFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, err
		}
		if _, err := atomicfile.WriteNew(path, []byte(rand.Text()[:secretSize]), 0o600); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(path) // ours, or the one another process made first
	}
	switch {
	case err == nil && len(b) == secretSize:
		s.secret = b
		return b, nil
	case !create:
		return nil, nil // no usable secret: no manifest applies
	}
	return nil, fmt.Errorf("the manifest key %s is unusable (%d bytes, %v): remove it; the saved tool lists are then made again", path, len(b), err)
}

// secretSize is the length of the HMAC key: 26 base32 characters of
// crypto/rand.Text carry 130 bits.
const secretSize = 26

// path is the file of the server called name: its name made safe for any
// file system, and a hash of the name so two names never share a file.
func (s *Store) path(name string) string {
	safe := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, name)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(s.dir, safe+"-"+hex.EncodeToString(sum[:4])+".json")
}

// Load returns the manifest of srv's current definition, if there is one.
func (s *Store) Load(srv *discovery.Server) (*Manifest, bool) {
	m, err := s.read(s.path(srv.Name))
	if err != nil || m.Server != srv.Name || m.Tools == nil {
		return nil, false
	}
	if key, err := s.key(srv, false); err != nil || key == "" || m.Key != key {
		return nil, false
	}
	return m, true
}

// cachedList is a manifest as decoded, with what tells that its file
// changed.
type cachedList struct {
	m    *Manifest
	info os.FileInfo
}

// read decodes the manifest at path, or returns the one decoded last time
// if the file is the same: every write renames a new file over the old, so
// another file, size or time is a change. A search over saved lists reads
// every server's; decoding 5,000 tools' schemas on each would cost more
// than the search. The manifest returned is shared: callers only read it.
func (s *Store) read(path string) (*Manifest, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	c, hit := s.lists[path]
	s.mu.Unlock()
	if hit && os.SameFile(c.info, info) && c.info.ModTime().Equal(info.ModTime()) && c.info.Size() == info.Size() {
		return c.m, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.lists == nil {
		s.lists = map[string]cachedList{}
	}
	s.lists[path] = cachedList{m: &m, info: info}
	s.mu.Unlock()
	return &m, nil
}

// Save records tools as srv's tool list, listed now. Callers save each fresh
// listing (a server's first in a process, and after tools/list_changed), not
// every use of a cached one.
func (s *Store) Save(srv *discovery.Server, tools []*mcp.Tool) error {
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	key, err := s.key(srv, true)
	if err != nil {
		return fmt.Errorf("saving the tool list of %s: %w", srv.Name, err)
	}
	raw, err := json.Marshal(Manifest{Server: srv.Name, Key: key, Written: time.Now().UTC(), Tools: tools})
	if err != nil {
		return fmt.Errorf("encoding the tool list of %s: %w", srv.Name, err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return writeFile(s.path(srv.Name), raw)
}

// Prune removes the manifests of servers not in keep, and leftovers of
// writes that never finished (temporary files over an hour old), and returns
// the names of the servers whose manifests it removed. A file it cannot read
// is removed too: Load would never use it.
func (s *Store) Prune(keep []*discovery.Server) ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	wanted := make(map[string]bool, len(keep))
	for _, srv := range keep {
		wanted[filepath.Base(s.path(srv.Name))] = true
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(s.dir, name)
		switch {
		case strings.HasPrefix(name, ".manifest-"):
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
				errs = append(errs, os.Remove(full))
			}
		case strings.HasSuffix(name, ".json") && !wanted[name]:
			var m Manifest
			if raw, err := os.ReadFile(full); err == nil && json.Unmarshal(raw, &m) == nil && m.Server != "" {
				removed = append(removed, m.Server)
			}
			errs = append(errs, os.Remove(full))
		}
	}
	return removed, errors.Join(errs...)
}
