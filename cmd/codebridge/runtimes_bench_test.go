package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// BenchmarkRuntimes compares OCI runtimes on Podman under the same load: one
// codebridge per runtime of $CODEBRIDGE_BENCH_RUNTIMES (default runc,runsc),
// and each iteration measures every runtime in turn, so that a machine
// whose load changes (a shared one) skews none of them more than another.
// It reports each runtime's median, in milliseconds (microseconds for a tool
// call), as RUNTIME-p50-ms:
//
//   - cold-container: print(1) in a container started for the run, through
//     an MCP client (sessions off, no warm container): a container's start
//     as a caller pays it;
//   - live-session: print(1) in a live session, through an MCP client;
//   - podman-run: podman --runtime RUNTIME run --rm with the sandbox's
//     flags, print(1): the reference bridge's way;
//   - tool-call: one tool call from code, the mean of 100 sequential echo
//     calls to server-everything timed inside the sandbox.
//
// scripts/bench.sh runtimes runs it; docs/engines.md has the figures.
func BenchmarkRuntimes(b *testing.B) {
	requirePodman(b)
	runtimes := strings.Split(cmp.Or(os.Getenv("CODEBRIDGE_BENCH_RUNTIMES"), "runc,runsc"), ",")
	print1 := func(b *testing.B, env ...string) func() time.Duration {
		cs, _ := session(b, bridgeEnv(b, b.TempDir(), env...))
		runPython(b, cs, map[string]any{"code": "print(1)"}) // first contact with Podman
		return func() time.Duration {
			start := time.Now()
			r := runPython(b, cs, map[string]any{"code": "print(1)"})
			if r.IsError || r.Out.Stdout != "1\n" {
				b.Fatalf("unexpected result: %s", r.Text)
			}
			return time.Since(start)
		}
	}
	b.Run("cold-container", func(b *testing.B) {
		pairedRuntimes(b, runtimes, "p50-ms", func(rt string) func() time.Duration {
			return print1(b, "MCP_BRIDGE_RUNTIME="+rt, "MCP_BRIDGE_SESSIONS=0", "MCP_BRIDGE_WARM_CONTAINERS=0")
		})
	})
	b.Run("live-session", func(b *testing.B) {
		pairedRuntimes(b, runtimes, "p50-ms", func(rt string) func() time.Duration {
			return print1(b, "MCP_BRIDGE_RUNTIME="+rt)
		})
	})
	b.Run("podman-run", func(b *testing.B) {
		pairedRuntimes(b, runtimes, "p50-ms", func(rt string) func() time.Duration {
			args := []string{"--runtime", rt, "run", "--rm", "-i", "--read-only", "--network", "none", "--cap-drop", "ALL",
				"--security-opt", "no-new-privileges", "--user", "65534:65534", "--memory", "512m", "--memory-swap", "512m",
				"--pids-limit", "128", "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=64m", "--init",
				testenv.Image(), "python3", "-c", "print(1)"}
			return func() time.Duration {
				start := time.Now()
				out, err := exec.Command("podman", args...).CombinedOutput()
				if err != nil || string(out) != "1\n" {
					b.Fatalf("podman --runtime %s run: %v: %s", rt, err, out)
				}
				return time.Since(start)
			}
		})
	})
	b.Run("tool-call", func(b *testing.B) {
		pairedRuntimes(b, runtimes, "p50-us", func(rt string) func() time.Duration {
			dir := b.TempDir()
			writeServers(b, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(b, "mcp-server-everything")}})
			cs, _ := session(b, bridgeEnv(b, dir, "MCP_BRIDGE_RUNTIME="+rt, "MCP_BRIDGE_LOG_LEVEL=info"))
			mustRun(b, cs, `await call_tool("everything", "echo", {"message": "warm"})`)
			return func() time.Duration { return toolCallMean(b, cs, 100) }
		})
	})
}

// pairedRuntimes sets up one measurement per runtime, then on each
// iteration takes one of each, in turn, and reports each runtime's median
// as RUNTIME-unit (unit p50-ms or p50-us).
func pairedRuntimes(b *testing.B, runtimes []string, unit string, setup func(runtime string) func() time.Duration) {
	measure := make([]func() time.Duration, len(runtimes))
	for i, rt := range runtimes {
		measure[i] = setup(rt)
	}
	times := make([][]time.Duration, len(runtimes))
	for b.Loop() {
		for i := range runtimes {
			times[i] = append(times[i], measure[i]())
		}
	}
	for i, rt := range runtimes {
		p50, _ := quantiles(times[i])
		if unit == "p50-us" {
			p50 *= 1000
		}
		b.ReportMetric(p50, rt+"-"+unit)
	}
	b.ReportMetric(0, "ns/op") // the sum over runtimes means nothing
}

// toolCallMean is the mean time of n sequential echo calls to
// server-everything (configured as "everything") made by code in cs's
// sandbox, timed inside it.
func toolCallMean(b *testing.B, cs *mcp.ClientSession, n int) time.Duration {
	out := mustRun(b, cs, fmt.Sprintf(`
import time
start = time.perf_counter()
for i in range(%d):
    await call_tool("everything", "echo", {"message": "x"})
print(int((time.perf_counter() - start) * 1e6 / %d))
`, n, n), "timeout", 120)
	us, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		b.Fatalf("output %q", out)
	}
	return time.Duration(us) * time.Microsecond
}
