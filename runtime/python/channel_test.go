package python

import (
	"context"
	"maps"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// socketPython runs the sandbox's command on this host with its stream on a
// unix socket ([ChannelEnv]), as a container on a local Podman has it.
func socketPython(t *testing.T) Stream {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	argv := Command()
	cmd := exec.Command(testenv.Python(t), argv[1:]...)
	cmd.Env = append(slices.Clone(testenv.PythonEnv), ChannelEnv+"="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestChannelReaders: replies reach the thread that waits for them (a
// blocking call in the main thread or in other threads, awaits in the run's
// event loop, all at once), and the time limit interrupts code that waits for
// a reply, in a blocking call or an await, or computes, with the session
// kept. Both ways the sandbox reads the channel are run: by the waiting
// threads themselves, a watcher thread woken by a signal when none waits
// (the default), and by the watcher alone, where that signal cannot be set
// up; each over pipes (a container's stdin and stdout) and over a unix
// socket, whose reads are not cut at a pipe's 64 KiB.
func TestChannelReaders(t *testing.T) {
	noSignals := maps.Clone(sandboxFiles)
	const setown = "F_SETOWN_EX, F_OWNER_TID = 15, 0"
	if !strings.Contains(noSignals["codebridge_runner.py"], setown) {
		t.Fatalf("codebridge_runner.py no longer has %q", setown)
	}
	noSignals["codebridge_runner.py"] = strings.Replace(noSignals["codebridge_runner.py"], setown, "F_SETOWN_EX, F_OWNER_TID = -1, 0", 1)
	for _, tt := range []struct {
		name    string
		files   map[string]string
		signals string
		socket  bool
	}{
		{"signals", nil, "True", false},
		{"signals/socket", nil, "True", true},
		{"watcher-only", noSignals, "False", false},
		{"watcher-only/socket", noSignals, "False", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Stream
			if tt.socket {
				s = socketPython(t)
			} else {
				s = testenv.LocalPython(t, Command())
			}
			it := Start(s, protocol.Init{Files: tt.files}, Limits{InterruptGrace: time.Minute})
			t.Cleanup(func() { it.Close() })
			h := &toolHost{call: func(ctx context.Context, tool string, args map[string]any) (any, error) {
				if tool == "block" {
					<-ctx.Done() // until the run ends
					return nil, ctx.Err()
				}
				return map[string]any{"structuredContent": args["message"]}, nil
			}}
			run := func(code string, timeout time.Duration) *Result {
				t.Helper()
				res, err := it.Run(t.Context(), Program{Code: code, Servers: testServers}, h, timeout)
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				return res
			}
			res := run(`
import asyncio, threading, mcp
print(mcp._channel.channel.signals)
print(call_tool_sync("mem", "echo", {"message": "main"}))
got = []
def worker(i):
    for j in range(20):
        got.append(call_tool_sync("mem", "echo", {"message": i * 100 + j}))
threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for th in threads:
    th.start()
awaited = await asyncio.gather(*(call_tool("mem", "echo", {"message": i}) for i in range(50)))
for th in threads:
    th.join()
print(sorted(got) == sorted(i * 100 + j for i in range(4) for j in range(20)), awaited == list(range(50)))
big = "x" * (3 << 20)
print(len(await call_tool("mem", "echo", {"message": big})), len(call_tool_sync("mem", "echo", {"message": big})))
`, time.Minute)
			if res.Error != nil || res.Stdout != tt.signals+"\nmain\nTrue True\n3145728 3145728\n" {
				t.Fatalf("run = %q, %+v", res.Stdout, res.Error)
			}
			for _, code := range []string{
				"x = 1\ncall_tool_sync('mem', 'block')",
				"x = 2\nawait call_tool('mem', 'block')",
				"x = 3\nwhile True: pass",
			} {
				res := run(code, 300*time.Millisecond)
				if res.Error == nil || res.Error.Kind != protocol.FailTimeout || !strings.Contains(res.Error.Message, "variables are kept") {
					t.Errorf("%q: error %+v, want an interrupted run", code, res.Error)
				}
			}
			if res := run("print(x, call_tool_sync('mem', 'echo', {'message': 'after'}))", time.Minute); res.Stdout != "3 after\n" {
				t.Errorf("after the interrupts: %q, %+v", res.Stdout, res.Error)
			}
		})
	}
}
