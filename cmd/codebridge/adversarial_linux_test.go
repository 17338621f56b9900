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

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/kube/kubetest"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// The adversarial suite: what a hostile or careless model's code would try,
// against the real binary, real Podman and real downstream servers. Every
// case checks that the attack is contained and explained, that codebridge's
// memory stayed bounded while it ran, that a following print(1) works (in
// the same session, or in a new one when the attack ended the session, whose
// container must then be gone), and at most one session and one warm
// container exist. At the end SIGTERM stops codebridge, which leaves no
// container and no process behind.

// testBridge is one codebridge under test with its MCP client.
type testBridge struct {
	cs       *mcp.ClientSession
	cmd      *exec.Cmd
	pid      int
	progress chan *mcp.ProgressNotificationParams // progress on run_python calls; extra ones are dropped
}

func startBridge(t *testing.T, env []string) *testBridge {
	t.Helper()
	b := &testBridge{progress: make(chan *mcp.ProgressNotificationParams, 16)}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		select {
		case b.progress <- req.Params:
		default:
		}
	}}
	b.cs, _, b.cmd = sessionProcWith(t, env, opts)
	b.pid = b.cmd.Process.Pid
	return b
}

// sandboxID is the short id of the container running the session now (its
// hostname), starting the session if needed.
func (b *testBridge) sandboxID(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, b.cs, "import socket\nprint(socket.gethostname())"))
}

// sigterm stops codebridge with SIGTERM, its client still connected, and
// checks that it exits by itself and leaves none of its containers or
// processes (downstream servers; its Podman service exits once idle) behind.
func (b *testBridge) sigterm(t *testing.T) { b.stopWith(t, syscall.SIGTERM) }

// stopWith is sigterm with another signal.
func (b *testBridge) stopWith(t *testing.T, sig syscall.Signal) {
	t.Helper()
	kids := descendants(b.pid)
	if err := b.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	// A hang guard: far longer than an orderly exit takes, far shorter than
	// the time limit of a run the tests leave in flight.
	deadline := time.Now().Add(90 * time.Second)
	for processAlive(b.pid) {
		if time.Now().After(deadline) {
			t.Fatalf("codebridge still running 90 s after %v", sig)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.cs.Close() // reaps the process
	if st := b.cmd.ProcessState; st == nil || !st.Exited() {
		t.Errorf("codebridge did not exit on %v: %v", sig, st)
	}
	if left := containersLeft(t, b.pid); len(left) != 0 {
		t.Errorf("containers left after %v: %v", sig, left)
	}
	for _, p := range leftBehind(t, kids) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		t.Errorf("process %d (%s) left after codebridge exited", p, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
}

// serverPIDs lists codebridge's descendant processes whose command line
// contains name: the downstream servers it started.
func (b *testBridge) serverPIDs(name string) []int {
	var pids []int
	for _, p := range descendants(b.pid) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err == nil && strings.Contains(string(cmdline), name) && processAlive(p) {
			pids = append(pids, p)
		}
	}
	return pids
}

// attack is one case of the suite.
type attack struct {
	name    string
	code    string
	timeout float64 // seconds; 0 leaves the default
	// run replaces code for a case of several steps; it returns the result
	// the checks apply to.
	run  func(t *testing.T, b *testBridge) runResult
	want func(t *testing.T, r runResult)
	// ends is why the attack ends its session ("" when the session lives on):
	// its container must go and the next run starts a new session saying so.
	ends string
	// then runs after the checks, e.g. to free what the attack holds.
	then string
}

// hostMiB is what any one attack may add to codebridge's peak memory: a few
// frames in flight and the capped output, far below what an unbounded copy
// of an attack's traffic would take.
const hostMiB = 48

func (b *testBridge) attack(t *testing.T, tt attack) {
	before := b.sandboxID(t)
	rss0, _, _ := procMem(t, b.pid)
	peakOK := resetPeak(b.pid) == nil
	var r runResult
	if tt.run != nil {
		r = tt.run(t, b)
	} else {
		args := map[string]any{"code": tt.code}
		if tt.timeout != 0 {
			args["timeout"] = tt.timeout
		}
		r = runPython(t, b.cs, args)
	}
	_, peak, _ := procMem(t, b.pid)
	tt.want(t, r)
	if r.Out.Session == nil || r.Out.Session.Ended != tt.ends {
		t.Errorf("session %+v, want ended %q", r.Out.Session, tt.ends)
	}
	if grew := (peak - rss0) >> 10; peakOK && grew > hostMiB {
		t.Errorf("codebridge's memory rose by %d MiB during the attack (from %d MiB), more than %d MiB", grew, rss0>>10, hostMiB)
	} else {
		t.Logf("codebridge's memory: %d MiB before, peak %d MiB", rss0>>10, peak>>10)
	}

	next := runPython(t, b.cs, map[string]any{"code": "print(1)"})
	if next.IsError || next.Out.Stdout != "1\n" {
		t.Errorf("print(1) after the attack: %s", next.Text)
	}
	switch s := next.Out.Session; {
	case s == nil || r.Out.Session == nil: // reported above
	case tt.ends != "":
		if !s.New || s.Reason != tt.ends || !strings.Contains(next.Text, "the previous one ended") {
			t.Errorf("after the session ended: %+v %q, want a new session saying why (%s)", s, next.Text, tt.ends)
		}
		containerGone(t, before)
	case s.New || s.ID != r.Out.Session.ID:
		t.Errorf("the attack's session did not live on: %+v then %+v", r.Out.Session, s)
	}
	if tt.then != "" {
		mustRun(t, b.cs, tt.then)
	}
	if ids := containersOf(t, b.pid); len(ids) > 2 {
		t.Errorf("%d containers of this codebridge, want at most a session's and a warm one: %v", len(ids), ids)
	}
}

func wantStdout(want string) func(*testing.T, runResult) {
	return func(t *testing.T, r runResult) {
		t.Helper()
		if r.IsError || r.Out.Stdout != want {
			t.Errorf("stdout %q, want %q; result:\n%s", r.Out.Stdout, want, r.Text)
		}
	}
}

// wantFailure checks the run failed with kind and a message containing msg.
func wantFailure(kind, msg string) func(*testing.T, runResult) {
	return func(t *testing.T, r runResult) {
		t.Helper()
		if !r.IsError || r.Out.Error == nil || r.Out.Error.Kind != kind || !strings.Contains(r.Out.Error.Message, msg) {
			t.Errorf("want a %s failure saying %q, got:\n%s", kind, msg, r.Text)
		}
	}
}

// protocolGarbage writes garbage to every descriptor above 2 that takes it:
// the runner's private copy of the protocol's stdout is among them.
func protocolGarbage(garbage string) string {
	return `import os, time
for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    if fd > 2:
        try:
            os.write(fd, ` + garbage + `)
        except OSError:
            pass
time.sleep(60)`
}

// TestAdversarial runs the attacks one after another against one codebridge.
func TestAdversarial(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	// 256m: enough for both 64 MiB tmpfs mounts to fill (their pages count
	// against the container's memory) with the interpreter beside them.
	b := startBridge(t, bridgeEnv(t, dir, "MCP_BRIDGE_MEMORY=256m", "MCP_BRIDGE_PIDS=64"))
	mustRun(t, b.cs, `await mcp_everything.echo(message="warm")`)
	_, _, fds0 := procMem(t, b.pid)

	// Under gVisor the memory limit is the whole sandbox's on the host:
	// gVisor's kernel has no OOM killer of its own to pick the biggest
	// process inside, so the host's kills the sandbox.
	childOOM := attack{name: "memory bomb in a child process", code: `
import subprocess, sys
print(subprocess.run([sys.executable, "-c", "b = b'x' * (1 << 30)"]).returncode)`,
		want: wantStdout("-9\n")} // the OOM killer takes the biggest process: the child
	if confine.GVisor(testenv.Runtime()) {
		childOOM.want, childOOM.ends = wantFailure("out_of_memory", "256 MiB"), "out_of_memory"
	}

	// The bombs and the 200 MB of output are about limits, not time: they
	// get the longest time limit, as under gVisor (where a fork costs a
	// stub process on the host) on a machine loaded with 50 runnable tasks
	// the fork bomb took more than the default 30 s.
	attacks := []attack{
		{name: "fork bomb", timeout: 120, code: `
import errno, os, subprocess
n = 0
try:
    while True:
        if os.fork() == 0:
            os._exit(0)
        n += 1
except OSError as e:
    err = errno.errorcode[e.errno]
while True:  # the zombies hold the pids until reaped
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
print(err, n > 10, subprocess.run(["true"]).returncode)`, want: wantStdout("EAGAIN True 0\n")},

		{name: "subprocess bomb", timeout: 120, code: `
import subprocess
procs = []
try:
    while True:
        procs.append(subprocess.Popen(["sleep", "600"]))
except OSError as e:
    print(type(e).__name__, len(procs) > 10)
for p in procs:
    p.kill()
    p.wait()
print(subprocess.run(["true"]).returncode)`, want: wantStdout("BlockingIOError True\n0\n")},

		{name: "thread bomb", timeout: 120, code: `
import threading
stop = threading.Event()
threads = []
try:
    while True:
        th = threading.Thread(target=stop.wait)
        th.start()
        threads.append(th)
except RuntimeError as e:
    print(e, len(threads) > 10)
stop.set()
for th in threads:
    th.join()`, want: wantStdout("can't start new thread True\n")},

		{name: "memory bomb", code: "b = [bytearray(1 << 20) for _ in range(1024)]",
			want: wantFailure("out_of_memory", "256 MiB"), ends: "out_of_memory"},

		childOOM,

		{name: "fill /tmp and /work", code: `
import errno
def fill(path):
    try:
        with open(path, "wb", buffering=0) as f:
            while True:
                f.write(b"x" * (1 << 20))
    except OSError as e:
        return errno.errorcode[e.errno]
print(fill("/tmp/fill"), fill("/work/fill"))`,
			want: wantStdout("ENOSPC ENOSPC\n"),
			then: "import os\nos.remove('/tmp/fill')\nos.remove('/work/fill')"}, // print(1) ran with both full

		{name: "file descriptors exhausted", code: `
import errno, os
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print(errno.errorcode[e.errno], len(fds) > 900)`,
			want: wantStdout("EMFILE True\n"),
			then: "for fd in fds:\n    os.close(fd)"}, // print(1) ran with none left

		// 6 s under runc, 17 s under gVisor, and over 30 s under gVisor on a
		// machine loaded with 40 runnable tasks.
		{name: "200 MB of output", timeout: 120, code: `
import os, sys
for _ in range(200):
    sys.stdout.write("y" * (1 << 20))
for _ in range(20):
    os.write(2, b"e" * (1 << 20))`,
			want: func(t *testing.T, r runResult) {
				if r.IsError || r.Out.StdoutBytes != 200<<20 || !r.Out.Truncated || len(r.Out.Stdout) > 65<<10 ||
					!strings.Contains(r.Text, "[output truncated: 65536 of 209715200 bytes shown]") {
					t.Errorf("stdout: %d bytes counted, %d returned, truncated %v", r.Out.StdoutBytes, len(r.Out.Stdout), r.Out.Truncated)
				}
				if r.Out.StderrBytes != 20<<20 || !r.Out.StderrTrunc || len(r.Out.Stderr) > 65<<10 {
					t.Errorf("stderr: %d bytes counted, %d returned, truncated %v", r.Out.StderrBytes, len(r.Out.Stderr), r.Out.StderrTrunc)
				}
			}},

		{name: "code left running prints between runs", run: func(t *testing.T, b *testBridge) runResult {
			mustRun(t, b.cs, `
import os, subprocess, threading
stop = threading.Event()
def tick():
    while not stop.wait(0.002):
        os.write(1, b"tick\n")  # one write: print writes "tick" and "\n" apart, and a run may end between them
ticker = threading.Thread(target=tick, daemon=True)
ticker.start()
sleeper = subprocess.Popen(["sleep", "600"])`)
			// Runs until output arrives between two of them (no run in
			// progress): it must come with the next run, marked as such.
			for i := 0; ; i++ {
				r := runPython(t, b.cs, map[string]any{"code": "pass"})
				if r.IsError {
					t.Fatalf("a run beside the ticking thread failed: %s", r.Text)
				}
				if bg := r.Out.Background; bg != "" {
					if !strings.HasPrefix(bg, "tick\n") || strings.Trim(bg, "tick\n") != "" && !strings.Contains(bg, "truncated") || len(bg) > 17<<10 {
						t.Errorf("background output %.200q... (%d bytes): want whole ticks, at most 16 KiB", bg, len(bg))
					}
					if !strings.HasPrefix(r.Text, "[output from code left running after the previous run]\ntick\n") {
						t.Errorf("background output is not marked: %.200q", r.Text)
					}
					break
				}
				if i == 500 {
					t.Fatal("500 runs and no output between them from the ticking thread")
				}
			}
			return runPython(t, b.cs, map[string]any{"code": "stop.set()\nticker.join()\nsleeper.kill()\nprint(sleeper.wait())"})
		}, want: func(t *testing.T, r runResult) {
			if r.IsError || !strings.HasSuffix(r.Out.Stdout, "\n-9\n") && r.Out.Stdout != "-9\n" {
				t.Errorf("stopping what was left running: %s", r.Text)
			}
		}},

		{name: "ignores SIGINT at the time limit", timeout: 1, code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
			want: wantFailure("timeout", "did not stop"), ends: "timeout"},
		{name: "swallows KeyboardInterrupt", timeout: 1, code: "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass",
			want: wantFailure("timeout", "did not stop"), ends: "timeout"},
		{name: "stuck in C (regex backtracking)", timeout: 1, code: "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
			want: wantFailure("timeout", "did not stop"), ends: "timeout"},

		{name: "5000 concurrent tool calls", run: func(t *testing.T, b *testBridge) runResult {
			// A call with progress keeps the run going while the client
			// checks that codebridge still answers it.
			params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"timeout": 120, "code": `
import asyncio
slow = asyncio.ensure_future(mcp_everything.trigger_long_running_operation(duration=2, steps=4))
rs = await asyncio.gather(*(mcp_everything.echo(message=str(i)) for i in range(5000)), return_exceptions=True)
ok = sum(1 for i, r in enumerate(rs) if r == "Echo: %d" % i)
# The sandbox refuses what it cannot queue; codebridge, the calls past the
# run's cap (1000, the slow call among them).
why = {"too_many_requests": "await some", "too_many_calls": "MCP_BRIDGE_MAX_CALLS_PER_RUN"}
refused = [r for r in rs if isinstance(r, MCPError) and r.code in why]
other = [r for r in rs if not isinstance(r, str) and not (isinstance(r, MCPError) and r.code in why)]
print("answered", ok + len(refused) == 5000, "explained", all(why[r.code] in r.message for r in refused), "capped", ok == 999, "other", other[:3])
await slow`}}
			params.SetProgressToken("gather")
			done := make(chan runResult, 1)
			go func() { done <- callRunPython(t, b.cs, params) }()
			select {
			case <-b.progress:
			case r := <-done:
				t.Fatalf("the run ended before any progress: %s", r.Text)
			}
			if _, err := b.cs.ListTools(t.Context(), nil); err != nil {
				t.Errorf("tools/list during the calls: %v", err)
			}
			return <-done
		}, want: wantStdout("answered True explained True capped True other []\n")},

		{name: "20 MiB tool argument", run: func(t *testing.T, b *testBridge) runResult {
			pids := b.serverPIDs("mcp-server-everything")
			r := runPython(t, b.cs, map[string]any{"code": `
try:
    await mcp_everything.echo(message="z" * (20 << 20))
except MCPError as e:
    print(e.code, "MCP_BRIDGE_MAX_ARGUMENT_SIZE" in e.message)
print(await mcp_everything.echo(message="still alive"))`})
			if now := b.serverPIDs("mcp-server-everything"); len(pids) != 1 || fmt.Sprint(now) != fmt.Sprint(pids) {
				t.Errorf("server-everything was %v before and is %v after: it must neither crash nor restart", pids, now)
			}
			return r
		}, want: wantStdout("bad_arguments True\nEcho: still alive\n")},

		{name: "garbage on the protocol channel", code: protocolGarbage(`b"Z\xff\xff\xff\xffgarbage"`),
			want: wantFailure("protocol", "the sandbox broke the frame protocol: unexpected frame kind"), ends: "protocol_error"},
		{name: "forged 4 GiB frame header", code: protocolGarbage(`b"O\xff\xff\xff\xff"`),
			want: wantFailure("protocol", "frame too large"), ends: "protocol_error"},
		{name: "malformed request frame", code: protocolGarbage(`b"Q\x00\x00\x00\x03{{{"`),
			want: wantFailure("protocol", "the sandbox broke the frame protocol: malformed request"), ends: "protocol_error"},
		{name: "torn frame header", timeout: 1, code: protocolGarbage(`b"O\x00"`), // the exit frame completes it
			want: wantFailure("protocol", "frame too large"), ends: "protocol_error"},
		{name: "protocol output replaced by /dev/null", timeout: 1, code: `
import fcntl, os
null = os.open("/dev/null", os.O_WRONLY)
for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    if fd > 2 and fd != null and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
        os.dup2(null, fd)
print("severed")`, // the socket of the stream is read and written through two fds: both are severed,
			// so the runner reads the end of its input and exits without an exit frame
			want: wantFailure("exit", "died with exit code 0 without reporting a result"), ends: "crashed"},

		{name: "dies between runs", run: func(t *testing.T, b *testBridge) runResult {
			// Code leaves a handler that exhausts memory on SIGUSR1, which
			// the test sends once the run is over.
			if kubetest.Enabled() {
				t.Skip("signals the container with podman kill; Kubernetes has no API that sends a pod's process a signal")
			}
			id := b.sandboxID(t)
			mustRun(t, b.cs, "import signal\nsignal.signal(signal.SIGUSR1, lambda *a: bytearray(1 << 30))")
			cli := testenv.EngineCLI(t)
			if out, err := exec.Command(cli, "kill", "--signal", "USR1", id).CombinedOutput(); err != nil {
				t.Fatalf("%s kill: %v %s", cli, err, out)
			}
			// Docker may have removed the container by the time it is asked.
			if out, err := exec.Command(cli, "wait", id).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such container") {
				t.Fatalf("%s wait: %v %s", cli, err, out)
			}
			r := runPython(t, b.cs, map[string]any{"code": "print('ran')"})
			containerGone(t, id)
			return r
		}, want: func(t *testing.T, r runResult) {
			wantStdout("ran\n")(t, r)
			if s := r.Out.Session; s == nil || !s.New || s.Reason != "out_of_memory" || !strings.Contains(r.Text, "the previous one ended (out of memory)") {
				t.Errorf("the run after the session died: %+v %q, want it in a new session that says why", s, r.Text)
			}
		}},

		{name: "timeout of 1e10", code: "print('ok')", timeout: 1e10, want: wantStdout("ok\n")},
	}
	if kubetest.Enabled() {
		// In a pod, the interpreter's stream passes through a proxy in its
		// own process (runtime/python's serve mode), so code that writes
		// garbage to every descriptor corrupts its own input too: the
		// interrupt at its time limit is lost, and the time limit ends the
		// session, not the protocol error.
		for i := range attacks {
			if attacks[i].name == "torn frame header" {
				attacks[i].want, attacks[i].ends = wantFailure("timeout", "did not stop when interrupted"), "timeout"
			}
		}
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) { b.attack(t, tt) })
	}

	t.Run("invalid timeouts", func(t *testing.T) {
		for _, timeout := range []float64{-1, 0} {
			r := runPython(t, b.cs, map[string]any{"code": "print(1)", "timeout": timeout})
			if r.Out.Error == nil || r.Out.Error.Kind != "invalid_input" || !strings.Contains(r.Text, "MCP_BRIDGE_MAX_TIMEOUT") {
				t.Errorf("timeout %v: %s", timeout, r.Text)
			}
		}
	})

	_, _, fds1 := procMem(t, b.pid)
	t.Logf("codebridge's open files: %d at the start, %d after the attacks", fds0, fds1)
	if fds1 > fds0+8 {
		t.Errorf("codebridge has %d open files after the attacks, %d before: a leak", fds1, fds0)
	}
	b.sigterm(t)
}

// TestAdversarialDownstream: downstream servers that crash or hang in the
// middle of a call, and time limits past the largest allowed.
func TestAdversarialDownstream(t *testing.T) {
	t.Parallel() // its cases wait for servers that crash or never answer
	requirePodman(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node.js 20+")
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "crashy_server.mjs"))
	dir := t.TempDir()
	writeServers(t, dir, "c.json", map[string]any{"crashy": map[string]any{"command": node, "args": []string{script}}})
	// The time limit is generous: a crashed server starts again within the
	// run, and node takes its time on a loaded machine. The caps have their
	// own codebridge below.
	b := startBridge(t, bridgeEnv(t, dir, "MCP_BRIDGE_MAX_TIMEOUT=120", "MCP_BRIDGE_TIMEOUT=120"))
	// "servers" starts the server before the code runs, outside its time limit.
	runPython(t, b.cs, map[string]any{"code": "pass", "servers": []string{"crashy"}})
	mustRun(t, b.cs, `await mcp_crashy.echo(message="warm")`)

	attacks := []attack{
		{name: "server crashes mid-call", code: `
pid = await mcp_crashy.pid()
try:
    await mcp_crashy.crash()
except MCPError as e:
    print(e.code, "crashing on purpose" in e.message, "started again" in e.message)
print(await mcp_crashy.echo(message="back"), await mcp_crashy.pid() != pid)`,
			want: wantStdout("server_failed True True\nEcho: back True\n")},
		{name: "server crashes under concurrent calls", code: `
import asyncio
rs = await asyncio.gather(mcp_crashy.crash(), *(mcp_crashy.echo(message=str(i)) for i in range(50)), return_exceptions=True)
print(all(isinstance(r, str) or isinstance(r, MCPError) and r.code == "server_failed" for r in rs), rs[0].code)
print(await mcp_crashy.echo(message="back"))`,
			want: wantStdout("True server_failed\nEcho: back\n")},
		{name: "server never answers", timeout: 1, code: "await mcp_crashy.hang()",
			want: func(t *testing.T, r runResult) {
				wantFailure("timeout", "interrupted")(t, r)
				if out := mustRun(t, b.cs, `print(await mcp_crashy.echo(message="free"))`); out != "Echo: free\n" {
					t.Errorf("the server after a call it never answered: %q", out)
				}
			}},
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) { b.attack(t, tt) })
	}
	b.sigterm(t)

	// The caps: whatever the run's own speed, a limit past the largest
	// allowed is cut to it, and the message says so. (Not through attack,
	// whose extra runs would each have to finish within 2 s.)
	capped := startBridge(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MAX_TIMEOUT=2", "MCP_BRIDGE_TIMEOUT=2"))
	for _, timeout := range []float64{1e10, 1e300} {
		r := runPython(t, capped.cs, map[string]any{"code": "import time\ntime.sleep(30)", "timeout": timeout})
		wantFailure("timeout", "timed out after 2 seconds")(t, r)
	}
	capped.sigterm(t)
}

// TestSIGTERMDuringToolCalls: SIGTERM while a run has thousands of tool calls
// in flight stops codebridge cleanly without waiting for the run's time limit
// (10 minutes here), and the client's call ends.
func TestSIGTERMDuringToolCalls(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	// No cap on the run's calls, so that thousands are still in flight.
	b := startBridge(t, bridgeEnv(t, dir, "MCP_BRIDGE_MAX_TIMEOUT=600", "MCP_BRIDGE_TIMEOUT=600", "MCP_BRIDGE_MAX_CALLS_PER_RUN=0"))
	mustRun(t, b.cs, `await mcp_everything.echo(message="warm")`)
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": `
import asyncio
await asyncio.gather(mcp_everything.trigger_long_running_operation(duration=600, steps=600),
                     *(mcp_everything.echo(message=str(i)) for i in range(5000)), return_exceptions=True)`}}
	params.SetProgressToken("sigterm")
	ended := make(chan error, 1)
	go func() {
		_, err := b.cs.CallTool(context.Background(), params)
		ended <- err
	}()
	<-b.progress
	b.sigterm(t)
	t.Logf("the interrupted call ended with: %v", <-ended)
}

// procMem returns a process's resident memory and its peak since the last
// [resetPeak], in KiB, and how many files it has open.
func procMem(t testing.TB, pid int) (rss, peak, fds int) {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatalf("reading codebridge's status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss, _ = strconv.Atoi(strings.Fields(v)[0])
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	entries, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return rss, peak, len(entries)
}

// resetPeak resets a process's peak resident memory (VmHWM) to its current.
func resetPeak(pid int) error {
	return os.WriteFile(filepath.Join("/proc", strconv.Itoa(pid), "clear_refs"), []byte("5"), 0)
}
