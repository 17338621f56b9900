package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// BenchmarkSoak runs b.N calls on one codebridge: mostly benign (print, a
// tool call), every tenth hostile (memory bomb, code that will not stop,
// an output flood, a fork bomb, garbage on the protocol channel). It reports
// the benign calls' p50/p95, codebridge's memory and open files before and
// after, and its containers while running and after it exits.
//
//	go test ./cmd/codebridge -run '^$' -bench Soak -benchtime 200x
func BenchmarkSoak(b *testing.B) {
	requirePodman(b)
	dir := b.TempDir()
	writeServers(b, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(b, "mcp-server-everything")}})
	cs, _, cmd := sessionProc(b, bridgeEnv(b, dir, "MCP_BRIDGE_MEMORY=128m", "MCP_BRIDGE_PIDS=64"))
	pid := cmd.Process.Pid
	mustRun(b, cs, `await mcp_everything.echo(message="warm")`)
	rss0, fds0 := procStats(b, pid)

	hostile := []map[string]any{
		{"code": "b = [bytearray(1 << 20) for _ in range(1024)]"},
		{"code": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", "timeout": 2},
		{"code": "import sys\nfor _ in range(50):\n    sys.stdout.write('y' * (1 << 20))"},
		{"code": "import os\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(30); os._exit(0)\nexcept OSError:\n    print('contained')", "timeout": 30},
		{"code": "import os\nfor fd in range(3, 64):\n    try: os.write(fd, b'Z\\xff\\xff\\xff\\xff')\n    except OSError: pass\nimport time; time.sleep(30)", "timeout": 60},
	}
	benign := []string{"print(1)", `print(await mcp_everything.echo(message="hi"))`}
	var ds []time.Duration
	i := 0
	for b.Loop() {
		i++
		if i%10 == 0 {
			runPython(b, cs, hostile[(i/10)%len(hostile)])
			continue
		}
		code := benign[i%len(benign)]
		start := time.Now()
		r := runPython(b, cs, map[string]any{"code": code})
		ds = append(ds, time.Since(start))
		if r.IsError {
			b.Fatalf("benign call %q failed: %s", code, r.Text)
		}
	}
	b.StopTimer()
	rss1, fds1 := procStats(b, pid)
	running := len(containersOf(b, pid))
	cs.Close() // waits for codebridge to exit
	reportQuantiles(b, ds)
	b.ReportMetric(float64(rss0)/1024, "rss-before-MiB")
	b.ReportMetric(float64(rss1)/1024, "rss-after-MiB")
	b.ReportMetric(float64(fds0), "fds-before")
	b.ReportMetric(float64(fds1), "fds-after")
	b.ReportMetric(float64(running), "containers-at-end")
	left := len(containersOf(b, pid))
	b.ReportMetric(float64(left), "containers-after-exit")
	if left != 0 {
		b.Errorf("%d containers left after codebridge exited", left)
	}
}

// procStats returns a process's resident memory in KiB and its open files.
func procStats(b *testing.B, pid int) (rssKiB, fds int) {
	b.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	entries, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return rssKiB, len(entries)
}
