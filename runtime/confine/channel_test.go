package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestSweepChannels(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ours := strconv.Itoa(os.Getpid()) + "-"
	old, fresh := filepath.Join(dir, ours+"1"), filepath.Join(dir, ours+"2")
	deadOwner, unnamed := filepath.Join(dir, strconv.Itoa(dead.Process.Pid)+"-3"), filepath.Join(dir, "x4")
	for _, d := range []string{old, fresh, deadOwner, unnamed} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hoursAgo := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, hoursAgo, hoursAgo); err != nil {
		t.Fatal(err)
	}
	if err := SweepChannels(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{old, deadOwner, unnamed} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s was kept: %v", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a live process's new folder was removed: %v", err)
	}
	if err := SweepChannels(filepath.Join(dir, "none")); err != nil {
		t.Errorf("sweeping a missing folder: %v", err)
	}
}
