package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// lanesEnv configures server-everything, with get-env denied by its
// policy, and saves its tool list (servers --tools), as a person who has
// used it once has; it returns codebridge's environment.
func lanesEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{
		"command": testenv.NPMBin(t, "mcp-server-everything"), "tools": map[string]any{"deny": []string{"get-env"}}}})
	env := bridgeEnv(t, dir, extra...)
	if _, stderr, code := runCLI(t, env, "", "servers", "--tools"); code != 0 {
		t.Fatalf("servers --tools: exit %d\n%s", code, stderr)
	}
	return env
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestToolsLaneHTTP: a request to /mcp?codemode=false is served the tools
// lane: server-everything's tools are listed under everything__* from its
// saved tool list, without starting it; a call starts it and returns its
// result; a tool its policy denies is not listed and is refused with the
// message code gets from run_python on the same codebridge; a client
// without an MCP session (codemode=off) calls it too.
func TestToolsLaneHTTP(t *testing.T) {
	b := startHTTP(t, lanesEnv(t))
	pid := b.Cmd.Process.Pid
	cs, err := dialHTTP(b.URL+"?codemode=false", b.Token, nil, withSession)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
	}
	if !names["everything__echo"] || !names["everything__get-sum"] || names["everything__get-env"] || names["run_python"] || len(names) < 10 {
		t.Errorf("tools/list of the tools lane: %v; want everything's tools but get-env, and no run_python", names)
	}
	if running := serversBelow(pid); len(running) != 0 {
		t.Errorf("listing the tools lane started %v", running)
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError || resultText(res) != "Echo: hi" {
		t.Fatalf("everything__echo: %v %q", err, resultText(res))
	}
	if running := serversBelow(pid); len(running) != 1 {
		t.Errorf("servers running after the call: %v, want everything", running)
	}

	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "everything__get-env"})
	if err != nil || !res.IsError {
		t.Fatalf("everything__get-env: %v %+v; want it refused", err, res)
	}
	// A client without an MCP session (MCP 2026-07-28) too.
	sessionless, err := dialHTTP(b.URL+"?codemode=off", b.Token, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sessionless.Close()
	echoed, err := sessionless.CallTool(t.Context(), &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "no session"}})
	if err != nil || echoed.IsError || resultText(echoed) != "Echo: no session" {
		t.Errorf("everything__echo without an MCP session: %v %q", err, resultText(echoed))
	}

	code := b.goClient(t, b.Token)
	out := mustRun(t, code, `
try:
    await call_tool("everything", "get-env", {})
except MCPError as e:
    print(e.code + ": " + e.message)
`)
	if got, want := resultText(res), strings.TrimSuffix(out, "\n"); got != want || !strings.HasPrefix(got, "policy_denied: ") {
		t.Errorf("the tools lane refused get-env with\n  %q\nand run_python's code got\n  %q\nwant the same policy_denied refusal", got, want)
	}
}

// TestToolsLaneInspectorCLI: the MCP Inspector's CLI, at the URL with
// ?codemode=false, lists server-everything's tools, calls one, reads one
// of its resources and gets one of its prompts, each through the tools
// lane.
func TestToolsLaneInspectorCLI(t *testing.T) {
	inspector := testenv.NPMBin(t, "mcp-inspector")
	b := startHTTP(t, lanesEnv(t))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(inspector, append([]string{"--cli", b.URL + "?codemode=false", "--transport", "http", "--header", "Authorization: Bearer " + b.Token}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("--method", "tools/list"); !strings.Contains(out, `"name": "everything__echo"`) {
		t.Errorf("tools/list lacks everything__echo:\n%s", out)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool `json:"isError"`
	}
	out := run("--method", "tools/call", "--tool-name", "everything__get-sum", "--tool-arg", "a=2", "b=40")
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "42") {
		t.Errorf("tools/call everything__get-sum: %v\n%s", err, out)
	}
	out = run("--method", "resources/read", "--uri", "demo://resource/static/document/architecture.md")
	if !strings.Contains(out, `"mimeType": "text/markdown"`) || !strings.Contains(out, "Architecture") {
		t.Errorf("resources/read:\n%s", out)
	}
	out = run("--method", "prompts/get", "--prompt-name", "everything__args-prompt", "--prompt-args", "city=Paris", "state=TX")
	if !strings.Contains(out, "What's weather in Paris, TX?") {
		t.Errorf("prompts/get everything__args-prompt:\n%s", out)
	}
}

// TestSearchLaneHTTP: with the search lane, find_tools finds
// server-everything's echo by what it does, from its saved tool list, and
// call_tool calls it.
func TestSearchLaneHTTP(t *testing.T) {
	b := startHTTP(t, lanesEnv(t, "MCP_BRIDGE_LANE=search"))
	cs := b.goClient(t, b.Token)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "find_tools", Arguments: map[string]any{"query": "echo back a message", "limit": 3}})
	if err != nil || res.IsError {
		t.Fatalf("find_tools: %v %+v", err, res)
	}
	var found struct {
		Results []struct{ Server, Tool string }
	}
	if err := json.Unmarshal([]byte(resultText(res)), &found); err != nil || len(found.Results) == 0 || found.Results[0].Tool != "echo" {
		t.Fatalf("find_tools: %v %s; want echo first", err, resultText(res))
	}
	if running := serversBelow(b.Cmd.Process.Pid); len(running) != 0 {
		t.Errorf("find_tools started %v", running)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
		"server": found.Results[0].Server, "tool": found.Results[0].Tool, "arguments": map[string]any{"message": "found"}}})
	if err != nil || res.IsError || resultText(res) != "Echo: found" {
		t.Errorf("call_tool: %v %q", err, resultText(res))
	}
}
