//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// probeBlocked is Python that looks for one tool of one server every way
// code can, and tries to call it every way there is. It prints one line per
// way: "seen" or "hidden" for the listings, the MCPError code for calls.
const probeBlocked = `
from mcp import runtime
SERVER, TOOL, PROXY, ATTR = %q, %q, mcp_%s, %q
def names(docs):
    return {d["name"] for d in docs}
hits = (await search_tool_docs(TOOL.replace("-", " "), limit=50))
print("search", "seen" if any(h["server"] == SERVER and h["tool"] == TOOL for h in hits) else "hidden")
print("query_tool_docs", "seen" if TOOL in names(await query_tool_docs(SERVER)) else "hidden")
print("list_tools", "seen" if TOOL in names(await runtime.list_tools(SERVER)) else "hidden")
print("describe_server", "seen" if TOOL in names(runtime.describe_server(SERVER)["tools"]) else "hidden")
print("dir", "seen" if ATTR in dir(PROXY) else "hidden")
async def attempt(label, make):
    try:
        r = make()
        if hasattr(r, "__await__"):
            r = await r
        print(label, "called")
    except MCPError as e:
        print(label, e.code)
        if label == "call_tool":
            print("message", e.message)
await attempt("call_tool", lambda: call_tool(SERVER, TOOL, {}))
await attempt("call_tool_sync", lambda: runtime.call_tool_sync(SERVER, TOOL, {}))
await attempt("proxy", lambda: getattr(PROXY, ATTR)())
await attempt("proxy_sync", lambda: getattr(PROXY.sync, ATTR)())
await attempt("proxy_call", lambda: PROXY.call(TOOL))
await attempt("query_tool", lambda: query_tool_docs(SERVER, TOOL))
`

func probe(server, tool string) string {
	return fmt.Sprintf(probeBlocked, server, tool, server, strings.ReplaceAll(tool, "-", "_"))
}

// wantBlocked checks probe's output for a blocked tool and returns the
// refusal's message.
func wantBlocked(t *testing.T, out string) string {
	t.Helper()
	return wantRefused(t, out, "policy_denied")
}

// wantRefused checks probe's output for a tool hidden from every listing and
// refused with code, and returns the refusal's message.
func wantRefused(t *testing.T, out, code string) string {
	t.Helper()
	var msg string
	refused := 0
	for line := range strings.Lines(out) {
		way, what, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch way {
		case "message":
			msg = what
		case "search", "query_tool_docs", "list_tools", "describe_server", "dir":
			if what != "hidden" {
				t.Errorf("%s shows the blocked tool", way)
			}
		default:
			if what != code {
				t.Errorf("%s: %s, want MCPError %s", way, what, code)
			}
			refused++
		}
	}
	if refused != 6 {
		t.Errorf("want six refusals:\n%s", out)
	}
	return msg
}

// TestPolicyEndToEnd: through the real sandbox and server-everything (whose
// tools carry annotations), a denied tool and a tool that is not read-only
// under readOnly are invisible to every listing and refused by every way of
// calling; editing the policy applies without a restart, of codebridge or
// of the server.
func TestPolicyEndToEnd(t *testing.T) {
	requirePodman(t)
	dir := t.TempDir()
	everything := testenv.NPMBin(t, "mcp-server-everything")
	servers := func(deny string) map[string]any {
		return map[string]any{
			"everything": map[string]any{"command": everything, "tools": map[string]any{"deny": []string{deny}}},
			"ro":         map[string]any{"command": everything, "readOnly": true},
		}
	}
	writeServers(t, dir, "s.json", servers("get-s?m"))
	cs, _, cmd := sessionProc(t, bridgeEnv(t, dir))
	file := filepath.Join(dir, "s.json")

	out := mustRun(t, cs, probe("everything", "get-sum"))
	msg := wantBlocked(t, out)
	for _, w := range []string{`"get-sum"`, `"get-s?m"`, `"tools.deny" of ` + file, "no restart"} {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
	// Read-only: toggle-simulated-logging is annotated readOnlyHint: false.
	msg = wantBlocked(t, mustRun(t, cs, probe("ro", "toggle-simulated-logging")))
	if !strings.Contains(msg, `"readOnly": true of `+file) || !strings.Contains(msg, "readOnlyHint") {
		t.Errorf("read-only refusal %q does not say where and why", msg)
	}
	// What the policies admit still works, through the same server.
	if out := mustRun(t, cs, `print(await mcp_ro.echo(message="ro"), await mcp_everything.echo(message="rw"))`); !strings.Contains(out, "Echo: ro") || !strings.Contains(out, "Echo: rw") {
		t.Errorf("admitted tools: %q", out)
	}
	pid := serverPID(t, cmd.Process.Pid)

	// Edit the policy: now echo is denied and get-sum is admitted.
	writeServers(t, dir, "s.json", servers("echo"))
	testenv.Eventually(t, "the edited policy applies", func() bool {
		out := runPython(t, cs, map[string]any{"code": `
try:
    await mcp_everything.echo(message="x")
    print("echo called")
except MCPError as e:
    print(e.code)`})
		return out.Out.Stdout == "policy_denied\n"
	})
	if out := mustRun(t, cs, `print(await mcp_everything.get_sum(a=2, b=3))`); !strings.Contains(out, "5") {
		t.Errorf("get-sum after it was admitted: %q", out)
	}
	wantBlocked(t, mustRun(t, cs, probe("everything", "echo")))
	if now := serverPID(t, cmd.Process.Pid); now != pid || !processAlive(pid) {
		t.Errorf("the policy edit restarted a server: newest pid %d, was %d (alive %v)", now, pid, processAlive(pid))
	}

	// A person checking the policy sees which tools it blocks.
	out, errOut, code := runCLI(t, bridgeEnv(t, dir), "", "servers", "--tools")
	marked := map[string]bool{}
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 1 && strings.Contains(line, "[blocked by policy]") {
			marked[f[0]] = true
		}
	}
	if code != 0 || !marked["echo"] || !marked["toggle-simulated-logging"] || marked["get-sum"] {
		t.Errorf("servers --tools: exit %d, marked %v, want echo and toggle-simulated-logging:\n%s%s", code, marked, out, errOut)
	}
}

// TestAuditEndToEnd: after runs that call tools with every kind of outcome,
// the audit file holds exactly one correct line per call, with the sandbox
// session and run that made it.
func TestAuditEndToEnd(t *testing.T) {
	requirePodman(t)
	dir, state := t.TempDir(), t.TempDir()
	writeServers(t, dir, "s.json", map[string]any{
		"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything"), "tools": map[string]any{"deny": []string{"get-env"}}},
		"crashes":    map[string]any{"command": "/bin/false"},
	})
	cs, stderr := session(t, append(bridgeEnv(t, dir), "MCP_BRIDGE_STATE_DIR="+state))

	// Each call prints its outcome as the code saw it: "ok" or the MCPError code.
	r1 := runPython(t, cs, map[string]any{"code": `
async def attempt(server, tool, args):
    try:
        await call_tool(server, tool, args)
        print("ok")
    except MCPError as e:
        print(e.code)
await attempt("everything", "echo", {"message": "hi"})
await attempt("everything", "get-env", {})
await attempt("everything", "no-such-tool", {})
await attempt("nowhere", "echo", {})
await attempt("crashes", "anything", {})
await attempt("everything", "get-sum", {"a": "not a number", "b": 1})
print(await mcp_everything.get_sum(a=1, b=2))
`})
	if r1.IsError {
		t.Fatalf("first run: %s", r1.Text)
	}
	seen := strings.Split(strings.TrimSpace(r1.Out.Stdout), "\n")
	if len(seen) != 7 {
		t.Fatalf("first run printed %q", r1.Out.Stdout)
	}
	type call struct {
		server, tool, outcome string
		run                   int
	}
	want := []call{
		{"everything", "echo", "ok", 1},
		{"everything", "get-env", "policy_denied", 1},
		{"everything", "no-such-tool", "unknown_tool", 1},
		{"nowhere", "echo", "unknown_server", 1},
		{"crashes", "anything", "server_failed", 1},
		{"everything", "get-sum", seen[5], 1}, // the server's own verdict on bad arguments
		{"everything", "get-sum", "ok", 1},
	}
	for i, w := range want[:5] {
		if seen[i] != w.outcome {
			t.Errorf("call %d: the code saw %q, want %q", i, seen[i], w.outcome)
		}
	}
	if seen[5] != "tool_error" && seen[5] != "bad_arguments" {
		t.Errorf("get-sum with a bad argument: the code saw %q, want tool_error or bad_arguments", seen[5])
	}
	// The call to crashes was tried once: the docs its argument check asked
	// for started it, and the call was failed with that start's error.
	if n := strings.Count(stderr.String(), `msg="starting server" component=pool server=crashes`); n != 1 {
		t.Errorf("crashes was started %d times for one call; want 1\n%s", n, stderr.String())
	}
	// A second run of the session hits its time limit during a call.
	r2 := runPython(t, cs, map[string]any{"code": `await mcp_everything.trigger_long_running_operation(duration=60, steps=60)`, "timeout": 3})
	if r2.Out.Error == nil || r2.Out.Session == nil || r2.Out.Session.ID != r1.Out.Session.ID {
		t.Fatalf("second run: %s (session %+v)", r2.Text, r2.Out.Session)
	}
	want = append(want, call{"everything", "trigger-long-running-operation", "cancelled", 2})

	// The cancelled call's line is written as the call gives up, which may
	// be just after the run's result.
	adir := audit.Dir(state)
	var recs []audit.Record
	testenv.Eventually(t, fmt.Sprintf("%d audit records", len(want)), func() bool {
		var err error
		recs, _, err = audit.Tail(adir, 0, nil)
		return err == nil && len(recs) >= len(want)
	})
	raw, err := os.ReadFile(filepath.Join(adir, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n != len(want) || len(recs) != len(want) {
		t.Fatalf("%d lines, %d records, want %d:\n%s", n, len(recs), len(want), raw)
	}
	for i, w := range want {
		r := recs[i]
		if r.Server != w.server || r.Tool != w.tool || r.Outcome != w.outcome || r.Session != r1.Out.Session.ID || r.Run != w.run {
			t.Errorf("record %d = %s %s.%s %s run %d, want %s %s.%s %s run %d", i, r.Session, r.Server, r.Tool, r.Outcome, r.Run,
				r1.Out.Session.ID, w.server, w.tool, w.outcome, w.run)
		}
		if r.Time.IsZero() || r.DurationMS < 0 || r.ArgBytes <= 0 {
			t.Errorf("record %d: time %v, %v ms, %d argument bytes", i, r.Time, r.DurationMS, r.ArgBytes)
		}
		if ok := r.Outcome == "ok" || r.Outcome == "tool_error"; ok != (r.ResultBytes > 0) || ok == (r.Error != "") {
			t.Errorf("record %d (%s): %d result bytes, error %q", i, r.Outcome, r.ResultBytes, r.Error)
		}
		if r.Arguments != nil || r.Result != nil {
			t.Errorf("record %d holds contents without MCP_BRIDGE_AUDIT_CONTENTS", i)
		}
	}
	if strings.Contains(string(raw), `"hi"`) {
		t.Errorf("the audit file holds an argument's value:\n%s", raw)
	}
	// The CLI shows them.
	out, _, code := runCLI(t, append(bridgeEnv(t, dir), "MCP_BRIDGE_STATE_DIR="+state), "", "audit", "--session", r1.Out.Session.ID, "--errors")
	if code != 0 || !strings.Contains(out, "policy_denied") || strings.Contains(out, " ok ") {
		t.Errorf("codebridge audit --errors: exit %d\n%s", code, out)
	}
}
