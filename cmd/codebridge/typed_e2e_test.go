package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypedToolsInSandbox: inside a real sandbox, help() on a tool shows its
// typed signature and docstring, and calls with a missing required argument
// or an unknown one fail before anything is sent, quoting the signature: the
// audit log, which records every call that reaches codebridge's call path,
// holds only the calls that were right.
func TestTypedToolsInSandbox(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	writeServers(t, dir, "servers.json", npmServers(t))
	state := t.TempDir()
	cs, _ := session(t, append(bridgeEnv(t, dir), "MCP_BRIDGE_STATE_DIR="+state))

	out := mustRun(t, cs, `help(mcp_everything.get_sum)`)
	for _, want := range []string{"get_sum(*, a: float, b: float) -> Any", "Returns the sum of two numbers", "a: First number"} {
		if !strings.Contains(out, want) {
			t.Errorf("help(mcp_everything.get_sum) lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, cs, `help(mcp_memory.create_entities)`)
	for _, want := range []string{"create_entities(*, entities: list[EntitiesItem]) -> CreateEntitiesResult", "Types:", "class EntitiesItem(TypedDict):", "observations: list[str]"} {
		if !strings.Contains(out, want) {
			t.Errorf("help(mcp_memory.create_entities) lacks %q:\n%s", want, out)
		}
	}

	// A proxy's tool function is typed once per run and kept: the same
	// object, typed, for each access in a run, and a new one in the next.
	if out := mustRun(t, cs, "f = mcp_everything.get_sum\nprint(f is mcp_everything.get_sum, mcp_everything.sync.get_sum is f, f.__signature__)"); out != "True False (*, a: float, b: float) -> Any\n" {
		t.Errorf("the tool function within a run: %q; want it kept (True), apart from the sync one (False), typed", out)
	}
	if out := mustRun(t, cs, "print(f is mcp_everything.get_sum)"); out != "False\n" {
		t.Errorf("the tool function of the last run is still used: %q", out)
	}

	for _, tc := range []struct{ code, want string }{
		{`await mcp_everything.get_sum(a=1)`, "everything.get_sum() is missing the required argument 'b'; nothing was sent. Its signature:\n    get_sum(*, a: float, b: float) -> Any"},
		{`mcp_everything.sync.echo(mesage="hi")`, "everything.echo() is missing the required argument 'message' and got an unexpected argument 'mesage' (did you mean 'message'?); nothing was sent. Its signature:\n    echo(*, message: str) -> Any"},
		{`await call_tool("memory", "read_graph", {"depth": 2})`, "memory.read_graph() got an unexpected argument 'depth'; nothing was sent. Its signature:\n    read_graph() -> "},
	} {
		r := runPython(t, cs, map[string]any{"code": "from mcp import MCPError\ntry:\n    " + tc.code + "\nexcept MCPError as e:\n    print(e.code)\n    print(e)\n"})
		if r.IsError || !strings.HasPrefix(r.Out.Stdout, "bad_arguments\n") || !strings.Contains(r.Out.Stdout, tc.want) {
			t.Errorf("%s: want bad_arguments with %q; got\n%s", tc.code, tc.want, r.Text)
		}
	}
	// Right calls go through, by alias too.
	if out := mustRun(t, cs, `print(await mcp_everything.get_sum(a=1, b=2))`); !strings.Contains(out, "3") {
		t.Errorf("get_sum(a=1, b=2) = %q", out)
	}

	log, err := os.ReadFile(filepath.Join(state, "audit", "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"tool":"get-sum"`) {
		t.Errorf("audited calls: %d, want only the right get-sum call:\n%s", len(lines), log)
	}
}
