package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// writeServers writes an mcpServers file into dir.
func writeServers(t testing.TB, dir, file string, servers map[string]any) {
	t.Helper()
	raw, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+file+".tmp")
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil { // as editors save
		t.Fatal(err)
	}
}

// npmServers configures the real npm servers the tests use.
func npmServers(t testing.TB) map[string]any {
	t.Helper()
	return map[string]any{
		"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything"), "description": "MCP reference test server"},
		"memory": map[string]any{"command": testenv.NPMBin(t, "mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"files": map[string]any{"command": testenv.NPMBin(t, "mcp-server-filesystem"), "args": []string{t.TempDir()}},
	}
}

// mustRun runs code and fails the test on any error, returning stdout.
func mustRun(t testing.TB, cs *mcp.ClientSession, code string, extra ...any) string {
	t.Helper()
	args := map[string]any{"code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	r := runPython(t, cs, args)
	if r.IsError {
		t.Fatalf("run failed:\n%s", r.Text)
	}
	return r.Out.Stdout
}

func TestSandboxAPIEndToEnd(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "servers.json", npmServers(t))
	cs, _ := session(t, bridgeEnv(t, dir))

	t.Run("discover without starting", func(t *testing.T) {
		out := mustRun(t, cs, "print(discovered_servers())\nprint([s['alias'] for s in discovered_servers(detailed=True)])")
		if out != "('everything', 'files', 'memory')\n['everything', 'files', 'memory']\n" {
			t.Errorf("got %q", out)
		}
	})
	t.Run("one-step hydration and full docs", func(t *testing.T) {
		out := mustRun(t, cs, `
doc = await query_tool_docs("everything", "get-sum", detail="full")
print(doc["signature"])
print(sorted(doc["inputSchema"]["properties"]))
summary = query_tool_docs_sync("everything")
print(len(summary) > 5, "inputSchema" in summary[0])
`)
		if out != "get_sum(*, a: float, b: float) -> Any\n['a', 'b']\nTrue False\n" {
			t.Errorf("got %q", out)
		}
	})
	t.Run("search", func(t *testing.T) {
		out := mustRun(t, cs, `
hits = await search_tool_docs("sum of two numbers", limit=3)
print(hits[0]["server"], hits[0]["tool"], hits[0]["score"] > 0)
`)
		if out != "everything get-sum True\n" {
			t.Errorf("got %q", out)
		}
	})
	t.Run("calls", func(t *testing.T) {
		out := mustRun(t, cs, `
print(await call_tool("everything", "get-sum", {"a": 2, "b": 40}))
print(await mcp_everything.echo(message="hi"))
print(call_tool_sync("everything", "echo", {"message": "sync"}))
from mcp import runtime
print(await runtime.call_tool("everything", "get_sum", {"a": 1, "b": 1}))
r = await call_tool("everything", "get-structured-content", {"location": "New York"})
print(type(r).__name__, "temperature" in r)
`)
		for _, want := range []string{"42", "Echo: hi", "Echo: sync", "2", "dict True"} {
			if !strings.Contains(out, want) {
				t.Errorf("output %q lacks %q", out, want)
			}
		}
	})
	t.Run("memory create then read", func(t *testing.T) {
		out := mustRun(t, cs, `
await mcp_memory.create_entities(entities=[{"name": "codebridge", "entityType": "project", "observations": ["written in Go"]}])
g = await mcp_memory.read_graph()
print([e["name"] for e in g["entities"]], g["entities"][0]["observations"])
`)
		if out != "['codebridge'] ['written in Go']\n" {
			t.Errorf("got %q", out)
		}
	})
	t.Run("gather runs calls concurrently", func(t *testing.T) {
		out := mustRun(t, cs, `
import asyncio, time
start = time.monotonic()
await asyncio.gather(*(mcp_everything.trigger_long_running_operation(duration=2, steps=2) for _ in range(3)))
print(round(time.monotonic() - start, 2))
`)
		secs, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if err != nil {
			t.Fatalf("got %q", out)
		}
		t.Logf("3 concurrent 2-second tool calls took %.2f s", secs)
		if secs >= 6 { // one after another they cannot take less
			t.Errorf("3 two-second calls took %.2f s: they ran one after another", secs)
		}
	})
	t.Run("2 MB round trip", func(t *testing.T) {
		out := mustRun(t, cs, `
big = "x" * (2 * 1024 * 1024)
r = await mcp_everything.echo(message=big)
print(len(r), r.endswith("x" * 100))
`)
		if out != fmt.Sprintf("%d True\n", 2*1024*1024+len("Echo: ")) {
			t.Errorf("got %q", out)
		}
	})
	t.Run("resource links", func(t *testing.T) {
		out := mustRun(t, cs, `
r = await mcp_everything.get_resource_links(count=2)
links = [b for b in r if isinstance(b, dict) and b.get("type") == "resource_link"]
print(len(links), all("uri" in l for l in links))
raw = await call_tool("everything", "get-resource-links", {"count": 1}, raw=True)
print(sorted(raw)[:1])
`)
		if !strings.HasPrefix(out, "2 True\n['content']") {
			t.Errorf("got %q", out)
		}
	})
	// The calls' own errors, when they are made: the names and arguments
	// come from variables, which the check before a run does not follow
	// (TestArgumentCheckEndToEnd tests that check).
	errCases := []struct{ name, code, want string }{
		{"unknown server", `await call_tool("everythin", "echo", {"message": "x"})`, `did you mean "everything"`},
		{"unknown tool", `await getattr(mcp_everything, "ecko")(message="x")`, `did you mean "echo"`},
		{"bad arguments", "args = {\"a\": \"two\", \"b\": 1}\nawait call_tool(\"everything\", \"get-sum\", args)", "expected number"},
		{"missing argument, caught in the sandbox", "args = {\"a\": 1}\nawait call_tool(\"everything\", \"get-sum\", args)", "is missing the required argument 'b'; nothing was sent. Its signature:\n    get_sum(*, a: float, b: float) -> Any"},
		{"tool error", `await call_tool("files", "read_text_file", {"path": "/definitely/not/here"})`, "path outside allowed directories"},
	}
	for _, tt := range errCases {
		t.Run("error: "+tt.name, func(t *testing.T) {
			r := runPython(t, cs, map[string]any{"code": tt.code})
			if !r.IsError || !strings.Contains(r.Text, "MCPError") || !strings.Contains(r.Text, tt.want) {
				t.Errorf("want MCPError containing %q, got:\n%s", tt.want, r.Text)
			}
		})
	}
	t.Run("error: unknown name in servers", func(t *testing.T) {
		r := runPython(t, cs, map[string]any{"code": "print(1)", "servers": []string{"memroy"}})
		if !r.IsError || !strings.Contains(r.Text, `did you mean "memory"`) {
			t.Errorf("got %s", r.Text)
		}
	})
	t.Run("reference README example runs unchanged", func(t *testing.T) {
		code, err := os.ReadFile(filepath.Join("testdata", "inspect_available_servers.py"))
		if err != nil {
			t.Fatal(err)
		}
		out := mustRun(t, cs, string(code), "servers", []string{"everything"})
		for _, want := range []string{"Discovered: ('everything', 'files', 'memory')", "Loaded metadata: (", "Selectable via RPC: (", "get_sum → Returns the sum of two numbers"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestDocumentedHelpersExist: every function the tool description, the manual
// resource and capability_summary() name is callable inside the sandbox, and
// every helper the sandbox offers is named in the manual.
func TestDocumentedHelpersExist(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	cs, _ := session(t, bridgeEnv(t, dir))
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	manual, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "codebridge://manual"})
	if err != nil {
		t.Fatal(err)
	}
	summary := mustRun(t, cs, "print(capability_summary())")
	// Free-standing calls only: not methods (".call("), not a proxy's tools.
	called := regexp.MustCompile(`(?:^|[^.\w])([a-z_][a-z_0-9]*)\(`)
	notHelpers := map[string]bool{
		"print": true, "len": true, "range": true, "dict": true, "help": true, // Python builtins
		"get_sum": true, // the manual's example of a signature line
	}
	sources := map[string]string{
		"tool description":     tools.Tools[0].Description,
		"manual":               manual.Contents[0].Text,
		"capability_summary()": summary,
	}
	for source, text := range sources {
		names := map[string]bool{}
		for _, m := range called.FindAllStringSubmatch(text, -1) {
			if !notHelpers[m[1]] && !strings.HasPrefix(m[1], "mcp_") {
				names[m[1]] = true
			}
		}
		if len(names) < 4 {
			t.Fatalf("%s names only %v", source, names)
		}
		var list []string
		for n := range names {
			list = append(list, fmt.Sprintf("%q", n))
		}
		out := mustRun(t, cs, fmt.Sprintf(`
from mcp import runtime
missing = [n for n in [%s] if not callable(globals().get(n)) or not callable(getattr(runtime, n, None))]
print(missing)
`, strings.Join(list, ", ")))
		if out != "[]\n" {
			t.Errorf("%s names helpers the sandbox lacks: %s", source, out)
		}
	}
	// The other direction: nothing the sandbox exports is missing from the manual.
	out := mustRun(t, cs, "from mcp import runtime\nprint(' '.join(n for n in runtime.__all__ if callable(getattr(runtime, n))))")
	for _, name := range strings.Fields(out) {
		if !strings.Contains(manual.Contents[0].Text, name) {
			t.Errorf("runtime.%s is not in the manual", name)
		}
	}
}

// TestProgressForwarded: progress from a downstream tool reaches the MCP client
// as progress on its run_python request, when the client asked for progress.
func TestProgressForwarded(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "progress"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req.Params)
		},
	})
	cmd := exec.Command(binary(t))
	cmd.Env = bridgeEnv(t, dir)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
		"code": `print(await mcp_everything.trigger_long_running_operation(duration=1, steps=4))`}}
	params.SetProgressToken("run-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v\ncodebridge stderr:\n%s", err, res, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("got %d progress notifications, want at least 3: %+v", len(got), got)
	}
	for i, p := range got {
		if p.ProgressToken != "run-1" || !strings.Contains(p.Message, "everything.trigger-long-running-operation") {
			t.Errorf("notification %d = %+v, want token run-1 and a message naming the tool", i, p)
		}
		if i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("progress does not increase: %v then %v", got[i-1].Progress, p.Progress)
		}
	}
	t.Logf("last progress message: %q", got[len(got)-1].Message)
}

// TestConcurrentRunsTakeTurns: calls an agent makes at once on its session
// run one after another in its one interpreter (as cells of a notebook), each
// with its own tool traffic: no run sees another's replies, and no run's
// code interleaves with another's.
func TestConcurrentRunsTakeTurns(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	cs, _ := session(t, bridgeEnv(t, dir))
	mustRun(t, cs, `await mcp_everything.echo(message="warm")
trace = []`)
	const runs = 3
	var wg sync.WaitGroup
	outs := make([]string, runs)
	for i := range runs {
		wg.Go(func() {
			outs[i] = mustRun(t, cs, fmt.Sprintf(`
import asyncio
trace.append("start%d")
replies = await asyncio.gather(*(mcp_everything.echo(message="run%d-%%d" %% k) for k in range(50)))
assert replies == ["Echo: run%d-%%d" %% k for k in range(50)], replies
await asyncio.sleep(0.2)
trace.append("end%d")
print("run%d ok")
`, i, i, i, i, i))
		})
	}
	wg.Wait()
	for i, out := range outs {
		if out != fmt.Sprintf("run%d ok\n", i) {
			t.Errorf("run %d printed %q", i, out)
		}
	}
	out := mustRun(t, cs, `print(all(trace[k][5:] == trace[k+1][3:] for k in range(0, len(trace), 2)), len(trace))`)
	if out != "True 6\n" {
		t.Errorf("runs interleaved or missing: %q", out)
	}
}
