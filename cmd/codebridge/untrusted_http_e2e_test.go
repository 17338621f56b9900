//go:build linux

package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// echoServer is an MCP server with one tool, echo; with huge, also one
// that answers (through testenv.HugeAnswers) a 1 GiB body.
func echoServer(huge bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	type args struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the message."},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Message}}}, nil, nil
		})
	if huge {
		mcp.AddTool(s, &mcp.Tool{Name: "huge", Description: "Answers a gigabyte."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "never"}}}, nil, nil
			})
	}
	return s
}

// TestRedirectKeepsHeadersEndToEnd: an HTTP server at 127.0.0.1 that
// answers 307, 308 or 301 with the address of a second loopback host
// (127.0.0.2, or localhost) gets none of its configured headers sent
// there; code's call fails saying the redirect was not followed.
func TestRedirectKeepsHeadersEndToEnd(t *testing.T) {
	requirePodman(t)
	const token = "Bearer e2e-redirect-token"
	var mu sync.Mutex
	var leaked []string
	record := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			for _, name := range []string{"Authorization", "X-Team-Key"} {
				if v := r.Header.Get(name); v != "" {
					leaked = append(leaked, r.Host+" "+r.Method+" "+name)
				}
			}
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(false) }, nil)
	other := testenv.ServeOn(t, "127.0.0.2:0", record(mcpHandler))
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	named := testenv.ServeOn(t, "127.0.0.1:0", record(mcpHandler)) // reached as localhost
	_, namedPort, _ := net.SplitHostPort(named.Listener.Addr().String())
	targets := map[int]string{
		http.StatusTemporaryRedirect: "http://127.0.0.2:" + port,
		http.StatusPermanentRedirect: "http://127.0.0.2:" + port,
		http.StatusMovedPermanently:  "http://localhost:" + namedPort,
	}
	servers := map[string]any{}
	for code, to := range targets {
		home := testenv.ServeOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to+r.URL.Path, code)
		}))
		servers["moved"+strconv.Itoa(code)] = map[string]any{"url": home.URL + "/mcp",
			"headers": map[string]string{"Authorization": token, "X-Team-Key": "team-key-123456"}}
	}
	dir := t.TempDir()
	writeServers(t, dir, "moved.json", servers)
	cs, _ := session(t, bridgeEnv(t, dir))
	out := mustRun(t, cs, `
for name in ["moved301", "moved307", "moved308"]:
    try:
        await call_tool(name, "echo", {"message": "hi"})
        print(name, "called")
    except MCPError as e:
        print(name, e.code, e.message)`)
	for _, name := range []string{"moved301", "moved307", "moved308"} {
		line := lineOf(out, name+" ")
		if !strings.Contains(line, "redirected to") || !strings.Contains(line, `set its "url"`) {
			t.Errorf("%s: %q, want a failure that says the redirect was not followed", name, line)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("configured headers reached another host: %q", leaked)
	}
}

// lineOf is the first line of out that starts with prefix.
func lineOf(out, prefix string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestHugeHTTPAnswerEndToEnd: an HTTP server answering a call with a 1 GiB
// JSON body leaves codebridge's peak RSS under 200 MB; the call fails with
// an error naming the limit, and the next run calls the server again.
func TestHugeHTTPAnswerEndToEnd(t *testing.T) {
	requirePodman(t)
	var written atomic.Int64
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(true) },
		&mcp.StreamableHTTPOptions{JSONResponse: true})
	srv := testenv.ServeOn(t, "127.0.0.1:0", testenv.HugeAnswers(handler, 1<<30, &written))
	dir := t.TempDir()
	writeServers(t, dir, "big.json", map[string]any{"big": map[string]any{"url": srv.URL}})
	cs, _, cmd := sessionProc(t, bridgeEnv(t, dir))
	out := mustRun(t, cs, `
try:
    await call_tool("big", "huge", {})
    print("called")
except MCPError as e:
    print(e.code, e.message)`)
	if !strings.Contains(out, "over 16 MiB") {
		t.Errorf("the huge answer: %q, want an error naming the limit", out)
	}
	if out := mustRun(t, cs, `print(await call_tool("big", "echo", {"message": "after"}))`); out != "echo: after\n" {
		t.Errorf("the next run: %q", out)
	}
	if w := written.Load(); w > 64<<20 {
		t.Errorf("codebridge read %d MiB of the answer", w>>20)
	}
	peak := peakRSS(t, cmd.Process.Pid)
	t.Logf("codebridge's peak RSS: %d MB; it read %d MiB of the 1024 MiB answer", peak>>20, written.Load()>>20)
	if peak > 200<<20 {
		t.Errorf("codebridge's peak RSS is %d MB, want under 200", peak>>20)
	}
}

// peakRSS is the peak resident set size of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// TestSIGHUPStopsCleanly: a hang-up (the terminal closed) stops codebridge
// as SIGTERM does, leaving no container or process behind.
func TestSIGHUPStopsCleanly(t *testing.T) {
	t.Parallel()
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "echo.json", map[string]any{})
	b := startBridge(t, bridgeEnv(t, dir))
	if out := mustRun(t, b.cs, "print(1)"); out != "1\n" {
		t.Fatalf("print(1): %q", out)
	}
	b.stopWith(t, syscall.SIGHUP)
}
