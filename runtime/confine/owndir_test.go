//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnDir: a state folder others may write to, or that belongs to
// another user, is refused with the command that fixes it.
func TestOwnDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := OwnDir(filepath.Join(base, "new", "state")); err != nil {
		t.Errorf("OwnDir of a new folder: %v", err)
	}
	if err := OwnDir(mk("private", 0o700)); err != nil {
		t.Errorf("OwnDir of a 0700 folder: %v", err)
	}
	if err := OwnDir(mk("readable", 0o755)); err != nil {
		t.Errorf("OwnDir of a 0755 folder: %v", err)
	}
	for _, mode := range []os.FileMode{0o770, 0o777, 0o702} {
		d := mk("open"+mode.String(), mode)
		err := OwnDir(d)
		if err == nil || !strings.Contains(err.Error(), "chmod go-w "+d) {
			t.Errorf("OwnDir of a %v folder: %v; want a refusal naming 'chmod go-w %s'", mode, err, d)
		}
	}
	if os.Getuid() == 0 {
		d := mk("other", 0o700)
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := OwnDir(d); err == nil || !strings.Contains(err.Error(), "chown") {
			t.Errorf("OwnDir of a folder of uid 65534: %v; want a refusal naming chown", err)
		}
	}
}
