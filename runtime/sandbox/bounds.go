package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// Machine is what [DefaultBounds] sizes the limits for: the memory and cores
// of the machine the containers run on.
type Machine struct {
	Memory int64 // bytes; 0 when unknown
	Cores  int
}

// Bounds are a manager's limits: [Options.MaxSessions] and [Options.MaxRuns].
type Bounds struct {
	Sandboxes int // live sandboxes (sessions holding a container) at most
	Runs      int // runs executing at once, at most
}

// Figures behind [DefaultBounds].
const (
	// RunsPerCore is how many runs execute at once per core. Runs are
	// mostly short or waiting on a tool call, so a core serves several; more
	// would only queue inside the kernel instead of fairly in [slots].
	RunsPerCore = 4
	// IdleSandboxMemory is what a live sandbox costs while it waits for its
	// next run, rounded up: 13.5 MB measured (container 12.7, conmon 0.3,
	// codebridge 0.25; minimal image, Podman 4.3.1 + runc).
	IdleSandboxMemory = 16 << 20
	// PreloadMemory is what a session that imported the data libraries
	// ahead of its first run costs on top (65 MB measured in all).
	PreloadMemory = 64 << 20
	// reserveMin is the least memory left to the system and the engine.
	reserveMin = 512 << 20
	// MaxBound caps either bound, whatever the machine.
	MaxBound = 65536
)

// DefaultBounds sizes the limits for machine m, whose containers each have
// memory limit limit (bytes) and cost idle bytes while they wait between runs
// (IdleSandboxMemory, plus PreloadMemory when sessions preload):
//
//	usable    = m.Memory - max(m.Memory/8, 512 MiB)   the rest is the system's
//	runs      = min(RunsPerCore*m.Cores, usable/2/limit)
//	sandboxes = max(runs, (usable - runs*limit) / idle)
//
// A running sandbox may grow to its limit, so the runs may take at most half
// of what is usable even at their limits; the sandboxes waiting between runs
// cost what they hold, so they share the rest at their measured size rather
// than at a limit none of them reaches while idle. When they do hold more
// (data a session kept), the engine's out-of-memory killer ends the largest
// container, whose session reports it; lower the bounds on such a machine.
// Both are at least 1 and at most MaxBound; an unknown memory bounds runs by
// the cores alone and sandboxes by as many.
func DefaultBounds(m Machine, limit, idle int64) Bounds {
	cores := max(m.Cores, 1)
	runs := RunsPerCore * cores
	if m.Memory <= 0 || limit <= 0 || idle <= 0 {
		runs = min(runs, MaxBound)
		return Bounds{Sandboxes: runs, Runs: runs}
	}
	usable := max(m.Memory-max(m.Memory/8, reserveMin), 0)
	runs = int(min(int64(runs), usable/2/limit, MaxBound))
	runs = max(runs, 1)
	sandboxes := int(min(max(usable-int64(runs)*limit, 0)/idle, MaxBound))
	return Bounds{Sandboxes: max(sandboxes, runs), Runs: runs}
}

// IdleMemory is what a live sandbox is taken to cost between runs, for
// [DefaultBounds]: more when sessions preload the data libraries.
func IdleMemory(preload bool) int64 {
	if preload {
		return IdleSandboxMemory + PreloadMemory
	}
	return IdleSandboxMemory
}

// LocalMachine is this machine: its memory (MemTotal of /proc/meminfo on
// Linux; 0 elsewhere, where [DefaultBounds] then goes by the cores) and the
// cores this process may use. A remote Podman's machine is not asked: set the
// bounds on it.
func LocalMachine() Machine {
	return Machine{Memory: memTotal("/proc/meminfo"), Cores: runtime.NumCPU()}
}

// memTotal reads MemTotal from a meminfo file; 0 when it cannot.
func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:"))
		if !ok {
			continue
		}
		num, unit, _ := bytes.Cut(bytes.TrimSpace(rest), []byte(" "))
		kb, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || string(unit) != "kB" {
			return 0
		}
		return kb << 10
	}
	return 0
}
