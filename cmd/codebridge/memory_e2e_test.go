package main

import (
	"strings"
	"testing"
)

// TestMemorySurvivesRestart: what agents store through one codebridge, a
// second codebridge on the same state directory has, in real containers:
// memories, and saved helpers defined in its sessions and found by
// search_tool_docs. A person sees both with codebridge memory.
func TestMemorySurvivesRestart(t *testing.T) {
	requirePodman(t)
	env := append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_STATE_DIR="+t.TempDir())

	first, _ := session(t, env)
	out := mustRun(t, first, `
def clean(rows):
    """Drops empty rows from a table."""
    return [r for r in rows if r]
save_memory("plan", {"steps": [1, 2]}, metadata={"by": "e2e"})
print(save_tool(clean), update_memory("runs", lambda n: (n or 0) + 1))`)
	if out != "clean 1\n" {
		t.Fatalf("first codebridge: %q", out)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("stopping the first codebridge: %v", err)
	}

	second, _ := session(t, env)
	out = mustRun(t, second, `
hits = await search_tool_docs("drop empty rows from a table")
print(load_memory("plan"), update_memory("runs", lambda n: (n or 0) + 1), clean([1, 0, 2]))
print([(h["server"], h["signature"]) for h in hits][:1], [m["metadata"] for m in list_memories()])`)
	want := "{'steps': [1, 2]} 2 [1, 2]\n[('saved_tools', 'clean(rows)')] [{'by': 'e2e'}, {}]\n"
	if out != want {
		t.Errorf("second codebridge:\n%s\nwant:\n%s", out, want)
	}

	if out, _, code := runCLI(t, env, "", "memory", "list"); code != 0 || !strings.Contains(out, "plan") || !strings.Contains(out, "runs") {
		t.Errorf("codebridge memory list: exit %d\n%s", code, out)
	}
	if out, _, code := runCLI(t, env, "", "memory", "tools"); code != 0 || !strings.Contains(out, "clean(rows)") {
		t.Errorf("codebridge memory tools: exit %d\n%s", code, out)
	}
}
