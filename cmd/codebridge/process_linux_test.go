//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// These tests follow codebridge's child processes through /proc.

// TestLiveReload edits the config folder under a running codebridge.
func TestLiveReload(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	everything := testenv.NPMBin(t, "mcp-server-everything")
	writeServers(t, dir, "a.json", map[string]any{"keep": map[string]any{"command": everything, "description": "kept"}})
	cs, _ := session(t, bridgeEnv(t, dir))
	if out := mustRun(t, cs, "print(discovered_servers())"); out != "('keep',)\n" {
		t.Fatalf("start: %q", out)
	}
	waitFor := func(code, want string) time.Duration {
		t.Helper()
		start := time.Now()
		var out string
		for time.Since(start) < 20*time.Second {
			if out = mustRun(t, cs, code); out == want {
				return time.Since(start)
			}
		}
		t.Fatalf("after 20 s, %q printed %q, want %q", code, out, want)
		return 0
	}

	writeServers(t, dir, "b.json", map[string]any{"added": map[string]any{"command": everything, "description": "first"}})
	took := waitFor("print(discovered_servers())", "('added', 'keep')\n")
	t.Logf("an added server was visible %v after the file was written", took)
	if out := mustRun(t, cs, `print(await mcp_added.echo(message="new"))`); !strings.Contains(out, "Echo: new") {
		t.Errorf("added server call: %q", out)
	}
	pid := serverPID(t, cs, "added")

	writeServers(t, dir, "b.json", map[string]any{"added": map[string]any{"command": everything, "description": "second"}})
	waitFor(`print([s["description"] for s in discovered_servers(detailed=True) if s["name"] == "added"])`, "['second']\n")

	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"mcpServers": {"keep": {"command": `), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if out := mustRun(t, cs, `print(discovered_servers()); print(await mcp_keep.echo(message="still"))`); !strings.Contains(out, "('added', 'keep')") || !strings.Contains(out, "Echo: still") {
		t.Errorf("a broken edit disturbed the servers: %q", out)
	}

	if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	waitFor("print(discovered_servers())", "('keep',)\n")
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if processAlive(pid) {
		t.Errorf("the removed server's process %d is still running", pid)
	}
}

// serverPID asks server-everything for its environment... it has no pid tool,
// so find the process by its command line among codebridge's descendants.
func serverPID(t testing.TB, cs *mcp.ClientSession, name string) int {
	t.Helper()
	// The server was just used; it is the newest mcp-server-everything process.
	var newest int
	var newestStart uint64
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "mcp-server-everything") {
			continue
		}
		fields := procStat(pid)
		if fields == nil {
			continue
		}
		start, _ := strconv.ParseUint(fields[19], 10, 64)
		if start >= newestStart {
			newest, newestStart = pid, start
		}
	}
	if newest == 0 {
		t.Fatalf("no mcp-server-everything process found for %s", name)
	}
	return newest
}

func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	fields := procStat(pid)
	return fields != nil && fields[0] != "Z"
}

// procStat returns the fields of /proc/PID/stat after the command name (state,
// ppid, ...), or nil if the process is gone.
func procStat(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
}

// descendants lists every process below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields := procStat(p)
		if fields == nil {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// TestNoOrphans: however codebridge is ended (its client closing stdin,
// SIGINT, SIGTERM), none of the processes it started (downstream servers, a
// Podman service) are left, and it exits promptly.
func TestNoOrphans(t *testing.T) {
	requirePodman(t)
	for _, end := range []struct {
		name string
		stop func(cs *mcp.ClientSession, p *os.Process) error
	}{
		{"stdin closed", func(cs *mcp.ClientSession, _ *os.Process) error { return cs.Close() }},
		{"SIGINT", func(_ *mcp.ClientSession, p *os.Process) error { return p.Signal(os.Interrupt) }},
		{"SIGTERM", func(_ *mcp.ClientSession, p *os.Process) error { return p.Signal(syscall.SIGTERM) }},
	} {
		t.Run(end.name, func(t *testing.T) {
			dir := t.TempDir()
			writeServers(t, dir, "servers.json", npmServers(t))
			cmd := exec.Command(binary(t))
			cmd.Env = bridgeEnv(t, dir)
			client := mcp.NewClient(&mcp.Implementation{Name: "orphans"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			mustRun(t, cs, `await mcp_everything.echo(message="x"); await mcp_memory.read_graph(); await mcp_files.list_allowed_directories()`)
			kids := descendants(cmd.Process.Pid)
			if len(kids) < 4 { // three servers and the Podman service at least
				t.Fatalf("expected servers and a Podman service below codebridge, found %v", kids)
			}
			stopped := time.Now()
			if err := end.stop(cs, cmd.Process); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for processAlive(cmd.Process.Pid) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if processAlive(cmd.Process.Pid) {
				t.Fatalf("codebridge still running 20 s after %s", end.name)
			}
			t.Logf("codebridge exited %v after %s", time.Since(stopped).Round(time.Millisecond), end.name)
			var alive []int
			for _, p := range kids {
				if processAlive(p) {
					alive = append(alive, p)
				}
			}
			if len(alive) > 0 {
				t.Fatalf("processes left after codebridge exited: %v", alive)
			}
		})
	}
}
