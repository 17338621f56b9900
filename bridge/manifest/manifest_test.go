package manifest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

func server(name string, args ...string) *discovery.Server {
	return &discovery.Server{Name: name, Transport: discovery.Stdio, Command: "node", Args: args, Env: map[string]string{"A": "1", "B": "2"}}
}

func tools(names ...string) []*mcp.Tool {
	out := make([]*mcp.Tool, len(names))
	for i, n := range names {
		out[i] = &mcp.Tool{Name: n, Description: "does " + n, InputSchema: map[string]any{"type": "object"}}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "manifests"))
	srv := server("files/κ", "server.js")
	if _, ok := s.Load(srv); ok {
		t.Fatal("a manifest before any Save")
	}
	if err := s.Save(srv, tools("read", "write")); err != nil {
		t.Fatal(err)
	}
	m, ok := s.Load(srv)
	if !ok || len(m.Tools) != 2 || m.Tools[1].Name != "write" || m.Tools[0].Description != "does read" || m.Written.IsZero() {
		t.Fatalf("Load after Save = %+v, %v", m, ok)
	}
	// The same definition under another description or policy: same manifest.
	same := *srv
	same.Description, same.Source = "other words", "/elsewhere.json"
	if _, ok := s.Load(&same); !ok {
		t.Error("a description change lost the manifest")
	}
	// A definition that starts something else: none.
	for _, changed := range []*discovery.Server{server("files/κ", "server.js", "--root", "/"), func() *discovery.Server {
		c := server("files/κ", "server.js")
		c.Env["B"] = "3"
		return c
	}()} {
		if _, ok := s.Load(changed); ok {
			t.Errorf("a changed definition (%v %v) still has the old manifest", changed.Args, changed.Env)
		}
	}
	// Another server's name never reads this file.
	if _, ok := s.Load(server("files_κ", "server.js")); ok {
		t.Error("a server with a similar name read this manifest")
	}
	// No tools is a manifest too.
	empty := server("empty")
	if err := s.Save(empty, nil); err != nil {
		t.Fatal(err)
	}
	if m, ok := s.Load(empty); !ok || len(m.Tools) != 0 {
		t.Errorf("Load of an empty list = %+v, %v", m, ok)
	}
}

func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := New(dir)
	srv := server("x")
	if err := s.Save(srv, tools("a")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path("x"), []byte(`{"server": "x", "tools": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Load(srv); ok {
		t.Error("a truncated file loaded")
	}
	if err := s.Save(srv, tools("b")); err != nil {
		t.Fatal(err)
	}
	if m, ok := s.Load(srv); !ok || m.Tools[0].Name != "b" {
		t.Errorf("Save over a corrupt file: %+v, %v", m, ok)
	}
}

// TestConcurrentSaves: writers in parallel (several codebridge processes do
// the same through the file system) leave one whole manifest and no
// temporary files.
func TestConcurrentSaves(t *testing.T) {
	dir := t.TempDir()
	srv := server("x")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			s := New(dir)
			names := []string{"a", "b", "c", "d"}[:1+i%4]
			if err := s.Save(srv, tools(names...)); err != nil {
				t.Error(err)
			}
			if _, ok := s.Load(srv); !ok {
				t.Error("a reader saw no whole manifest during the writes")
			}
		})
	}
	wg.Wait()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 || entries[0].Name() != secretFile {
		t.Errorf("files left: %v; want the key and the one manifest", entries)
	}
}

// TestKeyMadeAtOnce: stores (processes) that save at the same moment on a
// new folder make one key between them, and none finds it half-written.
func TestKeyMadeAtOnce(t *testing.T) {
	for range 100 {
		dir := t.TempDir()
		srv := server("x")
		var wg sync.WaitGroup
		stores := make([]*Store, 6)
		for i := range stores {
			stores[i] = New(dir)
			wg.Go(func() {
				if err := stores[i].Save(srv, tools("a")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for i, s := range stores {
			if _, ok := s.Load(srv); !ok {
				t.Fatalf("store %d: the manifest was saved with another key than the folder's", i)
			}
		}
	}
}

// TestKeyIsSecret: the definition's key is an HMAC with the folder's own
// secret, made 0600 on the first save: a manifest that leaked from one
// folder is no verifier of a definition (its tokens) anywhere else, and is
// not used there.
func TestKeyIsSecret(t *testing.T) {
	a, b := New(t.TempDir()), New(t.TempDir())
	srv := server("x")
	srv.Env["API_TOKEN"] = "hunter2"
	for _, s := range []*Store{a, b} {
		if err := s.Save(srv, tools("t")); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(filepath.Join(s.dir, secretFile))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("the secret: %v, %v; want a 0600 file", info, err)
		}
	}
	ma, _ := a.Load(srv)
	mb, _ := b.Load(srv)
	if ma == nil || mb == nil || ma.Key == mb.Key {
		t.Fatalf("two folders keyed the same definition alike: %+v %+v", ma, mb)
	}
	raw, err := os.ReadFile(a.path(srv.Name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.path(srv.Name), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := New(b.dir).Load(srv); ok {
		t.Error("a manifest copied from another folder was used")
	}
	// Without its secret a folder's manifests are not used.
	if err := os.Remove(filepath.Join(a.dir, secretFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok := New(a.dir).Load(srv); ok {
		t.Error("a manifest was used after its folder's secret was removed")
	}
}

// TestPrune: only the manifests of servers still configured are kept, with
// the temporary file of a write in progress; an old leftover goes.
func TestPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	s := New(dir)
	if removed, err := s.Prune(nil); err != nil || removed != nil {
		t.Fatalf("Prune before any Save = %v, %v", removed, err)
	}
	kept, gone := server("kept", "a.js"), server("gone", "b.js")
	for _, srv := range []*discovery.Server{kept, gone} {
		if err := s.Save(srv, tools("t")); err != nil {
			t.Fatal(err)
		}
	}
	fresh, old := filepath.Join(dir, ".manifest-fresh"), filepath.Join(dir, ".manifest-old")
	for _, f := range []string{fresh, old} {
		if err := os.WriteFile(f, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	removed, err := s.Prune([]*discovery.Server{kept})
	if err != nil || len(removed) != 1 || removed[0] != "gone" {
		t.Fatalf("Prune = %v, %v; want [gone]", removed, err)
	}
	if _, ok := s.Load(kept); !ok {
		t.Error("the manifest of a configured server was removed")
	}
	if _, ok := s.Load(gone); ok {
		t.Error("the manifest of a removed server is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a write in progress lost its temporary file: %v", err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("an hour-old temporary file is still there: %v", err)
	}
}

// A manifest read once is decoded once while its file stays the same, and
// read again when a Save replaces it, even within the file system's time
// granularity.
func TestLoadKeepsDecodedList(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "manifests"))
	srv := server("files", "server.js")
	if err := s.Save(srv, tools("read")); err != nil {
		t.Fatal(err)
	}
	first, ok := s.Load(srv)
	if !ok {
		t.Fatal("no manifest after Save")
	}
	again, _ := s.Load(srv)
	if again != first {
		t.Error("the same file was decoded again")
	}
	if err := s.Save(srv, tools("read", "write")); err != nil {
		t.Fatal(err)
	}
	now, ok := s.Load(srv)
	if !ok || len(now.Tools) != 2 || now == first {
		t.Fatalf("Load after a second Save = %+v, %v; want the new list of 2 tools", now, ok)
	}
	if err := os.Remove(s.path(srv.Name)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Load(srv); ok {
		t.Error("a removed manifest still loads from the cache")
	}
}
