//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	cs, stderr, cmd := sessionProc(t, bridgeEnv(t, dir))
	if out := mustRun(t, cs, "print(discovered_servers())"); out != "('keep',)\n" {
		t.Fatalf("start: %q", out)
	}
	// waitFor runs code until it prints want: the reload has been applied.
	waitFor := func(code, want string) {
		t.Helper()
		start := time.Now()
		var out string
		defer func() {
			if t.Failed() {
				t.Logf("%q last printed %q", code, out)
			}
		}()
		testenv.Eventually(t, fmt.Sprintf("%q prints %q", code, want), func() bool {
			out = mustRun(t, cs, code)
			return out == want
		})
		t.Logf("%q printed %q %v after the edit", code, want, time.Since(start).Round(time.Millisecond))
	}

	writeServers(t, dir, "b.json", map[string]any{"added": map[string]any{"command": everything, "description": "first"}})
	waitFor("print(discovered_servers())", "('added', 'keep')\n")
	if out := mustRun(t, cs, `print(await mcp_added.echo(message="new"))`); !strings.Contains(out, "Echo: new") {
		t.Errorf("added server call: %q", out)
	}
	pid := serverPID(t, cmd.Process.Pid)

	writeServers(t, dir, "b.json", map[string]any{"added": map[string]any{"command": everything, "description": "second"}})
	waitFor(`print([s["description"] for s in discovered_servers(detailed=True) if s["name"] == "added"])`, "['second']\n")

	// A broken edit (saved whole, as editors do): once codebridge has
	// reported it, the servers are as they were.
	broken := filepath.Join(dir, ".a.json.tmp")
	if err := os.WriteFile(broken, []byte(`{"mcpServers": {"keep": {"command": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(broken, filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "codebridge reports the broken a.json", func() bool {
		for line := range strings.Lines(stderr.String()) {
			if strings.Contains(line, "config problem") && strings.Contains(line, "a.json") {
				return true
			}
		}
		return false
	})
	if out := mustRun(t, cs, `print(discovered_servers()); print(await mcp_keep.echo(message="still"))`); !strings.Contains(out, "('added', 'keep')") || !strings.Contains(out, "Echo: still") {
		t.Errorf("a broken edit disturbed the servers: %q", out)
	}

	if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	waitFor("print(discovered_servers())", "('keep',)\n")
	testenv.Eventually(t, fmt.Sprintf("the removed server's process %d has exited", pid), func() bool { return !processAlive(pid) })
}

// serverPID returns the newest mcp-server-everything process below the
// codebridge process bridge: the server that was just started. Only
// codebridge's descendants are looked at, so other tests' servers on this
// machine cannot be mistaken for it.
func serverPID(t testing.TB, bridge int) int {
	t.Helper()
	var newest int
	var newestStart uint64
	for _, pid := range descendants(bridge) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
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
		t.Fatalf("no mcp-server-everything process below codebridge (pid %d)", bridge)
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

// leftBehind returns the processes of pids, started by a codebridge that
// has exited, that are still alive, after giving a Podman API service among
// them the time to exit by itself: codebridge processes share the service
// they start, which exits once none has used it for its idle time (10 s).
func leftBehind(t *testing.T, pids []int) []int {
	t.Helper()
	var alive, services []int
	for _, p := range pids {
		if !processAlive(p) {
			continue
		}
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.Contains(string(cmdline), "\x00system\x00service\x00") {
			services = append(services, p)
			continue
		}
		alive = append(alive, p)
	}
	testenv.Eventually(t, "the podman services codebridge started exit once idle", func() bool {
		return !slices.ContainsFunc(services, processAlive)
	})
	return alive
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
// SIGINT, SIGTERM), it exits by itself and none of the processes it started
// (downstream servers, a Podman service) are left. How long it takes is only
// logged.
func TestNoOrphans(t *testing.T) {
	t.Parallel() // it waits, mostly: for servers to start and Podman services to idle out
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
			t.Parallel()
			dir := t.TempDir()
			writeServers(t, dir, "servers.json", npmServers(t))
			cmd := exec.Command(binary(t))
			cmd.Env = bridgeEnv(t, dir)
			client := mcp.NewClient(&mcp.Implementation{Name: "orphans"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: shutdownGrace}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			mustRun(t, cs, `await mcp_everything.echo(message="x"); await mcp_memory.read_graph(); await mcp_files.list_allowed_directories()`)
			kids := descendants(cmd.Process.Pid)
			want := 4 // three servers and the Podman service at least
			if testenv.Engine() == "docker" {
				want = 3 // Docker's daemon is not codebridge's
			}
			if len(kids) < want {
				t.Fatalf("expected %d processes (servers, a Podman service) below codebridge, found %v", want, kids)
			}
			stopped := time.Now()
			if err := end.stop(cs, cmd.Process); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "codebridge exits after "+end.name, func() bool { return !processAlive(cmd.Process.Pid) })
			t.Logf("codebridge exited %v after %s", time.Since(stopped).Round(time.Millisecond), end.name)
			if alive := leftBehind(t, kids); len(alive) > 0 {
				t.Fatalf("processes left after codebridge exited: %v", alive)
			}
		})
	}
}

// TestConcurrentCallsOfOneSession: twenty concurrent run_python calls from
// one client all run, one after another in their session, with default
// settings: a call waiting for its session's turn is not refused as busy.
func TestConcurrentCallsOfOneSession(t *testing.T) {
	requirePodman(t)
	b := startBridge(t, bridgeEnv(t, t.TempDir()))
	mustRun(t, b.cs, "n = 0")
	var wg sync.WaitGroup
	results := make([]runResult, 20)
	for i := range results {
		wg.Go(func() { results[i] = runPython(t, b.cs, map[string]any{"code": "n += 1\nprint('ok')"}) })
	}
	wg.Wait()
	for i, r := range results {
		if r.IsError || r.Out.Stdout != "ok\n" {
			t.Errorf("call %d: %s", i, r.Text)
		}
	}
	if out := mustRun(t, b.cs, "print(n)"); out != "20\n" {
		t.Errorf("n = %q after 20 calls, want 20", out)
	}
	b.sigterm(t)
}
