package manifest

import (
	"syscall"
	"testing"
)

// TestLocalFS: a pin folder is watched on a local file system, not on one
// whose changes may come from another machine (or, as /proc, not from
// writes at all).
func TestLocalFS(t *testing.T) {
	dir := t.TempDir()
	if !localFS(dir) {
		var st syscall.Statfs_t
		syscall.Statfs(dir, &st)
		t.Errorf("the test's folder %s (file system %#x) is not taken for a local one", dir, st.Type)
	}
	if localFS("/proc") {
		t.Error("/proc is taken for a local file system")
	}
	if w := watchDir("/proc"); w != nil {
		t.Error("watchDir made a watch on /proc")
	}
}
