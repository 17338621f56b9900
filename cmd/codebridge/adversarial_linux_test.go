package main

import (
	"strings"
	"syscall"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestAdversarial runs what a hostile model's code would try against one
// codebridge, in order. Each case checks that the attack is contained and
// explained, and that the next call works; at the end SIGTERM stops
// codebridge and none of its containers remain.
func TestAdversarial(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	cs, _, cmd := sessionProc(t, bridgeEnv(t, dir, "MCP_BRIDGE_MEMORY=128m", "MCP_BRIDGE_PIDS=64"))
	pid := cmd.Process.Pid
	mustRun(t, cs, `await mcp_everything.echo(message="warm")`)

	type check func(t *testing.T, r runResult)
	wantKind := func(kind string) check {
		return func(t *testing.T, r runResult) {
			if r.Out.Error == nil || r.Out.Error.Kind != kind {
				t.Errorf("want error kind %s, got %s", kind, r.Text)
			}
		}
	}
	wantEnded := func(reason string) check {
		return func(t *testing.T, r runResult) {
			if r.Out.Session == nil || r.Out.Session.Ended != reason {
				t.Errorf("want the session ended (%s), got %+v", reason, r.Out.Session)
			}
		}
	}
	wantStdout := func(sub string) check {
		return func(t *testing.T, r runResult) {
			if !strings.Contains(r.Out.Stdout, sub) {
				t.Errorf("stdout lacks %q: %s", sub, r.Text)
			}
		}
	}
	cases := []struct {
		name   string
		args   map[string]any
		checks []check
	}{
		{"fork bomb", map[string]any{"code": `
import os
n = 0
try:
    while True:
        if os.fork() == 0:
            import time; time.sleep(60); os._exit(0)
        n += 1
except OSError as e:
    print("stopped by", e.errno == 11 and "EAGAIN" or e, "after", n > 10)`, "timeout": 30},
			[]check{wantStdout("stopped by EAGAIN after True")}},
		{"memory bomb", map[string]any{"code": "b = [bytearray(1 << 20) for _ in range(1024)]"},
			[]check{wantKind("out_of_memory")}},
		{"fill /tmp", map[string]any{"code": `
try:
    with open("/tmp/fill", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
except OSError as e:
    print("errno", e.errno)
import os; os.remove("/tmp/fill")`}, []check{wantStdout("errno 28")}},
		{"200 MB of output", map[string]any{"code": "import sys\nfor _ in range(200):\n    sys.stdout.write('y' * (1 << 20))"},
			[]check{func(t *testing.T, r runResult) {
				if !r.Out.Truncated || r.Out.StdoutBytes != 200<<20 || !strings.Contains(r.Text, "[output truncated: 65536 of 209715200 bytes shown]") {
					t.Errorf("want truncation after 64 KiB of 200 MiB, got %d bytes, truncated %v", r.Out.StdoutBytes, r.Out.Truncated)
				}
			}}},
		{"daemon left running", map[string]any{"code": `
import subprocess
d = subprocess.Popen(["sh", "-c", "sleep 600"])
print("started", d.pid > 0)`}, []check{wantStdout("started True")}},
		{"5000 concurrent tool calls", map[string]any{"code": `
import asyncio
rs = await asyncio.gather(*(mcp_everything.echo(message=str(i)) for i in range(5000)), return_exceptions=True)
ok = sum(1 for i, r in enumerate(rs) if r == "Echo: %d" % i)
refused = sum(1 for r in rs if isinstance(r, MCPError) and r.code == "too_many_requests")
other = [r for r in rs if not isinstance(r, str) and not (isinstance(r, MCPError) and r.code == "too_many_requests")]
print("answered", ok + refused == 5000, "other", other[:3])`, "timeout": 120},
			[]check{wantStdout("answered True other []")}},
		{"20 MiB tool argument", map[string]any{"code": `
try:
    await mcp_everything.echo(message="z" * (20 << 20))
except MCPError as e:
    print(e.code, "MCP_BRIDGE_MAX_ARGUMENT_SIZE" in e.message)
print(await mcp_everything.echo(message="still alive"))`},
			[]check{wantStdout("bad_arguments True\nEcho: still alive")}},
		{"timeout of 1e10", map[string]any{"code": "print('ok')", "timeout": 1e10},
			[]check{wantStdout("ok")}},
		{"ignores SIGINT at the time limit", map[string]any{"code": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", "timeout": 1},
			[]check{wantKind("timeout"), wantEnded("timeout")}},
		{"garbage on the protocol channel", map[string]any{"code": `
import os
for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    if fd > 2:
        try:
            os.write(fd, b"Z\xff\xff\xff\xffgarbage")
        except OSError:
            pass
import time; time.sleep(30)`, "timeout": 60},
			[]check{wantKind("protocol"), wantEnded("protocol_error")}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			r := runPython(t, cs, tt.args)
			for _, c := range tt.checks {
				c(t, r)
			}
			if out := mustRun(t, cs, "print(1)"); out != "1\n" {
				t.Errorf("the next call printed %q", out)
			}
		})
	}

	// SIGTERM still stops codebridge, which leaves nothing behind.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cs.Close() // waits for the process, which SIGTERM ends
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("codebridge did not exit on SIGTERM: %v", cmd.ProcessState)
	}
	if left := containersOf(t, pid); len(left) != 0 {
		t.Errorf("containers left after SIGTERM: %v", left)
	}
}
