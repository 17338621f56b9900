package setup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunscWrapper(t *testing.T) {
	got := string(runscWrapper("/usr/bin/runsc"))
	want := "#!/bin/sh\n" + gvisorHeader + "exec /usr/bin/runsc --network=none --oci-seccomp --host-uds=open \"$@\"\n"
	if got != want {
		t.Errorf("wrapper:\n%s\nwant:\n%s", got, want)
	}
	if got := podmanRunsc("/w/runsc"); got != "[engine.runtimes]\nrunsc = [\"/w/runsc\"]\n" {
		t.Errorf("containers.conf: %q", got)
	}
}

// TestWithRunsc: runsc joins daemon.json's runtimes, keeping every other key;
// the same entry again changes nothing; another runsc entry is not touched.
func TestWithRunsc(t *testing.T) {
	want := map[string]any{"path": "/usr/bin/runsc", "runtimeArgs": []string{"--network=none", "--oci-seccomp", "--host-uds=open"}}
	read := func(text string) map[string]any {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	out, changed, err := withRunsc(read(`{"log-level": "warn", "runtimes": {"kata": {"path": "/k"}}}`), want)
	if err != nil || !changed {
		t.Fatalf("withRunsc = %v, %v", changed, err)
	}
	merged := read(string(out))
	if merged["log-level"] != "warn" || jsonText(merged["runtimes"].(map[string]any)["kata"]) != `{"path":"/k"}` ||
		jsonText(merged["runtimes"].(map[string]any)["runsc"]) != jsonText(want) {
		t.Errorf("merged daemon.json:\n%s", out)
	}
	if _, changed, err := withRunsc(merged, want); changed || err != nil {
		t.Errorf("again: changed %v, %v; want nothing to do", changed, err)
	}
	// gVisor's own 'runsc install' registers it without arguments.
	_, _, err = withRunsc(read(`{"runtimes": {"runsc": {"path": "/usr/local/bin/runsc"}}}`), want)
	if err == nil || !strings.Contains(err.Error(), "without all of codebridge's flags") {
		t.Errorf("another runsc entry: %v", err)
	}
}

// TestWriteOwn: setup writes its files with consent, rewrites its own, and
// leaves a file of the same name it did not write alone.
func TestWriteOwn(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	asked := 0
	s := &setup{Options: Options{Out: &out, Ask: func(string) bool { asked++; return true }}}
	path := filepath.Join(dir, "sub", "runsc")
	data := []byte(gvisorHeader + "v1\n")
	if err := s.writeOwn(path, data, 0o755, "the wrapper"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("written: %v, %v", fi, err)
	}
	if err := s.writeOwn(path, data, 0o755, "the wrapper"); err != nil || asked != 1 {
		t.Errorf("same content again: %v, asked %d times; want no question", err, asked)
	}
	if err := s.writeOwn(path, []byte(gvisorHeader+"v2\n"), 0o755, "the wrapper"); err != nil || asked != 2 {
		t.Errorf("our file, new content: %v", err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexec mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := s.writeOwn(path, data, 0o755, "the wrapper")
	if b, _ := os.ReadFile(path); err == nil || string(b) != "#!/bin/sh\nexec mine\n" || !strings.Contains(out.String(), "was not written by codebridge") {
		t.Errorf("someone else's file: %v, now %q", err, b)
	}
	s.Ask = func(string) bool { return false }
	if err := s.writeOwn(filepath.Join(dir, "other"), data, 0o644, "x"); !errors.Is(err, ErrNeedsConsent) {
		t.Errorf("no consent: %v", err)
	}
}

func TestRuntimeFlag(t *testing.T) {
	if err := Run(t.Context(), Options{Runtime: "kata"}); err == nil || !strings.Contains(err.Error(), "prepares runsc (gVisor) only") {
		t.Errorf("Run with --runtime kata = %v", err)
	}
}
