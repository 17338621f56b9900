package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWriteNewAtOnce: of many writers at once, one creates the file, and no
// reader ever sees it empty or short.
func TestWriteNewAtOnce(t *testing.T) {
	for round := range 100 {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		const writers = 6
		var wg sync.WaitGroup
		created := make([]bool, writers)
		for i := range writers {
			wg.Go(func() {
				var err error
				if created[i], err = WriteNew(path, fmt.Appendf(nil, "writer %d's whole content", i), 0o600); err != nil {
					t.Error(err)
				}
				if b, err := os.ReadFile(path); err != nil || len(b) != len("writer 0's whole content") {
					t.Errorf("round %d: writer %d read %q, %v", round, i, b, err)
				}
			})
		}
		wg.Wait()
		n := 0
		for _, c := range created {
			if c {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d writers created the file, want 1", round, n)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v", fi.Mode(), err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".new-*")); len(left) > 0 {
			t.Fatalf("temporary files left: %v", left)
		}
	}
}

// TestReplace: Replace puts the new content in place of the old, with its
// mode, and leaves nothing else in the folder.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, data := range []string{"one", "two, longer"} {
		if err := Replace(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		info, _ := os.Stat(path)
		if err != nil || string(got) != data || info.Mode().Perm() != 0o600 {
			t.Errorf("after Replace(%q): %q, mode %v, %v", data, got, info.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %d files, want 1", len(entries))
	}
	if err := Replace(filepath.Join(dir, "no", "such"), nil, 0o600); err == nil {
		t.Error("Replace into a missing folder succeeded")
	}
}
