package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultBounds(t *testing.T) {
	const (
		gib  = int64(1) << 30
		mib  = int64(1) << 20
		lim  = 512 * mib
		idle = int64(IdleSandboxMemory)
		data = int64(IdleSandboxMemory + PreloadMemory)
	)
	tests := []struct {
		name        string
		m           Machine
		limit, idle int64
		want        Bounds
	}{
		// usable 21 GiB; runs 8 by the cores; (21-4) GiB / 16 MiB sandboxes.
		{"this machine, minimal sessions", Machine{Memory: 24 * gib, Cores: 2}, lim, idle, Bounds{Sandboxes: 1088, Runs: 8}},
		{"this machine, preloading sessions", Machine{Memory: 24 * gib, Cores: 2}, lim, data, Bounds{Sandboxes: 217, Runs: 8}},
		// usable 7 GiB: runs by memory (7 GiB / 2 / 1 GiB = 3), not by 16 cores.
		{"memory bounds runs", Machine{Memory: 8 * gib, Cores: 16}, gib, idle, Bounds{Sandboxes: 256, Runs: 3}},
		// usable 512 MiB: not one run at its limit fits in half, yet one runs.
		{"tiny machine", Machine{Memory: gib, Cores: 1}, lim, idle, Bounds{Sandboxes: 1, Runs: 1}},
		{"less memory than the reserve", Machine{Memory: 256 * mib, Cores: 4}, lim, idle, Bounds{Sandboxes: 1, Runs: 1}},
		{"unknown memory", Machine{Cores: 4}, lim, idle, Bounds{Sandboxes: 16, Runs: 16}},
		{"unknown cores", Machine{Memory: 24 * gib}, lim, idle, Bounds{Sandboxes: 1216, Runs: 4}},
		{"huge machine", Machine{Memory: 4096 * gib, Cores: 100000}, 64 * mib, mib, Bounds{Sandboxes: MaxBound, Runs: 28672}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultBounds(tt.m, tt.limit, tt.idle); got != tt.want {
				t.Errorf("DefaultBounds(%+v, %d, %d) = %+v, want %+v", tt.m, tt.limit, tt.idle, got, tt.want)
			}
		})
	}
}

func TestMemTotal(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		want       int64
	}{
		{"linux", "MemTotal:       24589872 kB\nMemFree:         1234 kB\n", 24589872 << 10},
		{"missing", "MemFree: 1 kB\n", 0},
		{"odd unit", "MemTotal: 12 MB\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := memTotal(path); got != tt.want {
				t.Errorf("memTotal = %d, want %d", got, tt.want)
			}
		})
	}
	if got := memTotal(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("memTotal of no file = %d", got)
	}
}
