//go:build linux

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// BenchmarkSoak runs b.N calls on one codebridge: nine in ten benign (print,
// a tool call), every tenth hostile, in turn: a memory bomb, code that
// ignores its interrupt at a 1-second limit, a 50 MiB output flood, a fork
// bomb, garbage on the protocol channel. Each hostile call must fail as it
// should and every benign call must succeed. It reports the benign calls'
// p50/p95, codebridge's resident memory (before, after, peak) and open files
// (before, after), the most containers it had while running (sampled after
// each hostile call), and its containers after it exits (none).
//
//	go test ./cmd/codebridge -run '^$' -bench Soak -benchtime 200x
func BenchmarkSoak(b *testing.B) {
	requirePodman(b)
	dir := b.TempDir()
	writeServers(b, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(b, "mcp-server-everything")}})
	cs, _, cmd := sessionProc(b, bridgeEnv(b, dir, "MCP_BRIDGE_MEMORY=128m", "MCP_BRIDGE_PIDS=64"))
	pid := cmd.Process.Pid
	mustRun(b, cs, `await mcp_everything.echo(message="warm")`)
	rss0, _, fds0 := procMem(b, pid)
	if err := resetPeak(pid); err != nil {
		b.Logf("cannot reset codebridge's peak memory (%v): the peak includes its start", err)
	}

	hostile := []struct {
		args map[string]any
		ok   func(r runResult) bool // the attack was contained and explained
	}{
		{map[string]any{"code": "b = [bytearray(1 << 20) for _ in range(1024)]"},
			func(r runResult) bool { return r.Out.Error != nil && r.Out.Error.Kind == "out_of_memory" }},
		{map[string]any{"code": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", "timeout": 1},
			func(r runResult) bool { return r.Out.Error != nil && r.Out.Error.Kind == "timeout" }},
		{map[string]any{"code": "import sys\nfor _ in range(50):\n    sys.stdout.write('y' * (1 << 20))"},
			func(r runResult) bool { return !r.IsError && r.Out.Truncated && r.Out.StdoutBytes == 50<<20 }},
		{map[string]any{"code": `
import os
try:
    while True:
        if os.fork() == 0:
            os._exit(0)
except OSError:
    pass
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
print("contained")`},
			func(r runResult) bool { return r.Out.Stdout == "contained\n" }},
		{map[string]any{"code": protocolGarbage(`b"Z\xff\xff\xff\xffgarbage"`)},
			func(r runResult) bool { return r.Out.Error != nil && r.Out.Error.Kind == "protocol" }},
	}
	benign := []string{"print(1)", `print(await mcp_everything.echo(message="hi"))`}
	var ds []time.Duration
	most := 0
	i := 0
	for b.Loop() {
		i++
		if i%10 == 0 {
			h := hostile[(i/10-1)%len(hostile)]
			if r := runPython(b, cs, h.args); !h.ok(r) {
				b.Errorf("hostile call %d (%.40q...) was not contained as expected: %s", i, h.args["code"], r.Text)
			}
			b.StopTimer()
			most = max(most, len(containersOf(b, pid)))
			b.StartTimer()
			continue
		}
		code := benign[i%len(benign)]
		start := time.Now()
		r := runPython(b, cs, map[string]any{"code": code})
		ds = append(ds, time.Since(start))
		if r.IsError || !strings.HasSuffix(r.Out.Stdout, "1\n") && !strings.HasSuffix(r.Out.Stdout, "Echo: hi\n") {
			b.Fatalf("benign call %d %q failed: %s", i, code, r.Text)
		}
	}
	b.StopTimer()
	rss1, peak, fds1 := procMem(b, pid)
	// A session a hostile call ended is removed in the background: wait for
	// that, then at most the live session's container and a warm one remain.
	running := len(containersOf(b, pid))
	for deadline := time.Now().Add(time.Minute); running > 2 && time.Now().Before(deadline); running = len(containersOf(b, pid)) {
		time.Sleep(100 * time.Millisecond)
	}
	if running > 2 {
		b.Errorf("%d containers of codebridge after the soak, want at most a session's and a warm one", running)
	}
	cs.Close() // waits for codebridge to exit
	left := len(containersLeft(b, pid))
	if left != 0 {
		b.Errorf("%d containers left after codebridge exited", left)
	}
	reportQuantiles(b, ds)
	b.ReportMetric(float64(rss0)/1024, "rss-before-MiB")
	b.ReportMetric(float64(rss1)/1024, "rss-after-MiB")
	b.ReportMetric(float64(peak)/1024, "rss-peak-MiB")
	b.ReportMetric(float64(fds0), "fds-before")
	b.ReportMetric(float64(fds1), "fds-after")
	b.ReportMetric(float64(most), "containers-max")
	b.ReportMetric(float64(running), "containers-at-end")
	b.ReportMetric(float64(left), "containers-after-exit")
}
