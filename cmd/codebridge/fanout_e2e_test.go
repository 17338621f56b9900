package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fanoutServerEnv, set in its environment to a file's path, makes the test
// binary a stdio MCP server with one tool, work(i), that takes about 50 ms
// and writes to that file the most calls it has had in flight at once,
// each time that rises: what the server saw, for a test to read.
const fanoutServerEnv = "CODEBRIDGE_TEST_FANOUT_SERVER"

// runFanoutServer serves work on stdin and stdout until stdin closes.
func runFanoutServer() {
	var mu sync.Mutex
	in, peak := 0, 0
	s := mcp.NewServer(&mcp.Implementation{Name: "fanout-test", Version: "1"}, nil)
	type workArgs struct {
		I int `json:"i"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "work", Description: "Works on item i for a moment."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a workArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			in++
			if in > peak {
				peak = in
				_ = os.WriteFile(os.Getenv(fanoutServerEnv), []byte(strconv.Itoa(peak)), 0o644)
			}
			mu.Unlock()
			defer func() {
				mu.Lock()
				in--
				mu.Unlock()
			}()
			select { // the server's pace, not a test's assertion
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("done %d", a.I)}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fanout server:", err)
	}
}

// fanoutCode fires 200 calls of work on server at once from one run and
// prints how many succeeded and the first errors.
const fanoutCode = `
import asyncio
rs = await asyncio.gather(*[mcp_%s.work(i=i) for i in range(200)], return_exceptions=True)
errs = [r for r in rs if isinstance(r, BaseException)]
print("ok", len(rs) - len(errs), "errors", [str(e) for e in errs[:3]])
`

// TestFanOutLimitsEndToEnd: through a real codebridge, sandbox and
// downstream server, 200 concurrent calls from one run to a server whose
// entry says "maxConcurrency": 2 all complete, and the server had at most
// 2 of them, and at some moment 2, in flight at once; a server without the
// field gets MCP_BRIDGE_SERVER_CONCURRENCY (4 here) the same way. The
// sandbox serves a run's requests 64 at a time, so at most 62 wait in the
// server's queue, which holds 256 or more by default: none is refused.
func TestFanOutLimitsEndToEnd(t *testing.T) {
	requirePodman(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, files := t.TempDir(), t.TempDir()
	peakFile := func(server string) string { return filepath.Join(files, server) }
	writeServers(t, dir, "fan.json", map[string]any{
		"narrow": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{fanoutServerEnv: peakFile("narrow")},
			"maxConcurrency": 2},
		"wide": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{fanoutServerEnv: peakFile("wide")}},
	})
	cs, _ := session(t, bridgeEnv(t, dir, "MCP_BRIDGE_SERVER_CONCURRENCY=4"))
	for server, want := range map[string]int{"narrow": 2, "wide": 4} {
		t.Run(server, func(t *testing.T) {
			out := mustRun(t, cs, fmt.Sprintf(fanoutCode, server), "timeout", 120)
			if !strings.HasPrefix(out, "ok 200 errors []") {
				t.Errorf("want all 200 calls to succeed; the run printed %q", out)
			}
			raw, err := os.ReadFile(peakFile(server))
			if err != nil {
				t.Fatalf("the server recorded no calls: %v", err)
			}
			if peak, _ := strconv.Atoi(string(raw)); peak != want {
				t.Errorf("the server had at most %d calls in flight at once, want %d (its limit, reached)", peak, want)
			}
		})
	}
}

// TestCallsPerRunCapEndToEnd: with MCP_BRIDGE_MAX_CALLS_PER_RUN=5, a run's
// sixth tool call raises MCPError too_many_calls with the cap's text, and
// the next run of the session may call again.
func TestCallsPerRunCapEndToEnd(t *testing.T) {
	requirePodman(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeServers(t, dir, "fan.json", map[string]any{
		"fan": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{fanoutServerEnv: filepath.Join(t.TempDir(), "peak")}},
	})
	cs, _ := session(t, bridgeEnv(t, dir, "MCP_BRIDGE_MAX_CALLS_PER_RUN=5"))
	out := mustRun(t, cs, `
from mcp import MCPError
for i in range(6):
    try:
        await mcp_fan.work(i=i)
    except MCPError as e:
        print(i, e.code, e.message)
`)
	const want = "5 too_many_calls this run has made 5 tool calls, the most a run may make (MCP_BRIDGE_MAX_CALLS_PER_RUN), so this one was not sent: " +
		"batch the work into fewer calls (a tool that takes many items at once), or go on in the next run; " +
		"the person running codebridge can raise MCP_BRIDGE_MAX_CALLS_PER_RUN\n"
	if out != want {
		t.Errorf("the run printed\n%q\nwant\n%q", out, want)
	}
	if out := mustRun(t, cs, "print(await mcp_fan.work(i=9))"); !strings.Contains(out, "done 9") {
		t.Errorf("the next run's first call: %q", out)
	}
}
