// Package manifest keeps each MCP server's tool list on disk, so codebridge
// can search and document a server's tools without starting it.
//
// A manifest is keyed by the server's definition (how it is started or
// reached, not its name, description or policy): a changed definition has no
// manifest until the server lists its tools again, so stale tools are never
// served for it. Files are written whole (a temporary file renamed over the
// old one), so concurrent codebridge processes and crashes leave either the
// old manifest or the new one. An unreadable or corrupt file counts as no
// manifest.
package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// Store is a folder of manifests. Its methods are safe for concurrent use,
// also by several processes.
type Store struct{ dir string }

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

// Key identifies what a definition starts or reaches: transport, command,
// arguments, environment, working directory, URL and headers.
func Key(srv *discovery.Server) string {
	raw, _ := json.Marshal(struct {
		Transport discovery.Transport
		Command   string
		Args      []string
		Env       map[string]string // encoding/json sorts map keys
		Cwd       string
		URL       string
		Headers   map[string]string
	}{srv.Transport, srv.Command, srv.Args, srv.Env, srv.Cwd, srv.URL, srv.Headers})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

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
	raw, err := os.ReadFile(s.path(srv.Name))
	if err != nil {
		return nil, false
	}
	var m Manifest
	if json.Unmarshal(raw, &m) != nil || m.Server != srv.Name || m.Key != Key(srv) || m.Tools == nil {
		return nil, false
	}
	return &m, true
}

// Save records tools as srv's tool list, listed now. Callers save each fresh
// listing (a server's first in a process, and after tools/list_changed), not
// every use of a cached one.
func (s *Store) Save(srv *discovery.Server, tools []*mcp.Tool) error {
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	raw, err := json.Marshal(Manifest{Server: srv.Name, Key: Key(srv), Written: time.Now().UTC(), Tools: tools})
	if err != nil {
		return fmt.Errorf("encoding the tool list of %s: %w", srv.Name, err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, ".manifest-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(raw)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), s.path(srv.Name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
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
