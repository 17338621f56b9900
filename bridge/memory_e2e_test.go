package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestMemoryAndSavedHelpers drives the sandbox's memory helpers and save_tool
// through the real host and store, with the sandbox's Python run on this host.
// A second store on the same folder stands for codebridge after a restart.
func TestMemoryAndSavedHelpers(t *testing.T) {
	stateDir := t.TempDir()
	d := newDirectory(&recordingPool{}, 4<<20, nil)
	d.store = memory.New(stateDir)
	run := func(t *testing.T, it *python.Interpreter, code string) string {
		t.Helper()
		res, err := it.Run(t.Context(), python.Program{Code: code}, d.Host(nil), time.Minute)
		if err != nil || res.Error != nil {
			t.Fatalf("run %q: %v %+v\nstderr: %s", code, err, res.Error, res.Stderr)
		}
		return res.Stdout
	}

	it := python.Start(testenv.LocalPython(t, python.Command()), python.Init{}, python.Limits{})
	defer it.Close()
	run(t, it, `def clean(rows):
    """Drops empty rows from a table."""
    return [r for r in rows if r]`)
	out := run(t, it, `
save_memory("plan", {"steps": [1, 2]}, metadata={"by": "test"})
print(load_memory("plan"), load_memory("none", default="dflt"), memory_exists("plan"), memory_exists("none"))
print(update_memory("count", lambda n: (n or 0) + 1), update_memory("count", lambda n: (n or 0) + 1))
print(sorted(m["key"] for m in list_memories()), [m.get("metadata") for m in list_memories() if m["key"] == "plan"])
try:
    save_memory("bad", {1, 2})
except MCPError as e:
    print(e.code, "set" in e.message)
print(save_tool(clean), [t["name"] for t in list_saved_tools()])
print(delete_memory("count"), delete_memory("count"))`)
	want := `{'steps': [1, 2]} dflt True False
1 2
['count', 'plan'] [{'by': 'test'}]
bad_arguments True
clean ['clean']
True False
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	// After a restart: a new store on the same folder, a new session whose
	// prelude is the saved helpers.
	d.store = memory.New(stateDir)
	it2 := python.Start(testenv.LocalPython(t, python.Command()), python.Init{}, python.Limits{})
	defer it2.Close()
	res, err := it2.Run(t.Context(), python.Program{
		Code:    `print(clean([1, 0, 2]), clean.__doc__, load_memory("plan"))`,
		Prelude: savedHelpers(d.store, orDiscard(nil))(),
	}, d.Host(nil), time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "[1, 2] Drops empty rows from a table. {'steps': [1, 2]}\n" {
		t.Errorf("new session after restart: %q %+v %v", res.Stdout, res.Error, err)
	}
	hits := run(t, it2, `print([(h["server"], h["tool"]) for h in await search_tool_docs("drop empty rows table")][:1])`)
	if hits != "[('saved_tools', 'clean')]\n" {
		t.Errorf("search for the saved helper: %s", hits)
	}
	if out := run(t, it2, `print(delete_saved_tool("clean"), list_saved_tools())`); out != "True []\n" {
		t.Errorf("delete_saved_tool: %s", out)
	}
	if !strings.Contains(run(t, it2, `
try:
    save_tool(len)
except MCPError as e:
    print(e.code, e.message)`), "bad_arguments cannot read the source") {
		t.Error("save_tool of a builtin should explain")
	}
}
