package host

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// memoryHost is a directory whose host has a store under a fresh state
// directory, and a runner of code in an interpreter on this host.
func memoryHost(t *testing.T) (*Directory, func(t *testing.T, it *python.Interpreter, code string) string) {
	d := newDirectory(&recordingPool{}, 4<<20, nil)
	d.store = memory.New(t.TempDir())
	run := func(t *testing.T, it *python.Interpreter, code string) string {
		t.Helper()
		res, err := it.Run(t.Context(), python.Program{Code: code}, d.host(Run{}), time.Minute)
		if err != nil || res.Error != nil {
			t.Fatalf("run %q: %v %+v\nstderr: %s", code, err, res.Error, res.Stderr)
		}
		return res.Stdout
	}
	return d, run
}

func localInterp(t *testing.T) *python.Interpreter {
	it := python.Start(testenv.LocalPython(t, python.Command()), protocol.Init{}, python.Limits{})
	t.Cleanup(func() { it.Close() })
	return it
}

// TestMemoryAndSavedHelpers drives the sandbox's memory helpers and save_tool
// through the real host and store, with the sandbox's Python run on this host.
// A second store on the same folder stands for codebridge after a restart.
func TestMemoryAndSavedHelpers(t *testing.T) {
	d, run := memoryHost(t)
	it := localInterp(t)
	run(t, it, `def clean(rows):
    """Drops empty rows from a table."""
    return [r for r in rows if r]`)
	out := run(t, it, `
save_memory("plan", {"steps": [1, 2]}, metadata={"by": "test"})
print(load_memory("plan"), load_memory("none", default="dflt"), memory_exists("plan"), memory_exists("none"))
print(update_memory("count", lambda n: (n or 0) + 1), update_memory("count", lambda n: (n or 0) + 1))
print(update_memory("plan", lambda p: {**p, "done": True}), get_memory_info("plan")["metadata"])
print(sorted(m["key"] for m in list_memories()), [m["metadata"] for m in list_memories()])
print(save_tool(clean), [t["name"] for t in list_saved_tools()])
print(delete_memory("count"), delete_memory("count"))`)
	want := `{'steps': [1, 2]} dflt True False
1 2
{'steps': [1, 2], 'done': True} {'by': 'test'}
['count', 'plan'] [{}, {'by': 'test'}]
clean ['clean']
True False
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	// After a restart: a new store on the same folder, a new session whose
	// prelude is the saved helpers.
	d.store = memory.New(d.store.Dir())
	it2 := localInterp(t)
	res, err := it2.Run(t.Context(), python.Program{
		Code:    `print(clean([1, 0, 2]), clean.__doc__, load_memory("plan"))`,
		Prelude: SavedHelpers(d.store, slog.New(slog.DiscardHandler))(),
	}, d.host(Run{}), time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "[1, 2] Drops empty rows from a table. {'steps': [1, 2], 'done': True}\n" {
		t.Errorf("new session after restart: %q %+v %v", res.Stdout, res.Error, err)
	}
	hits := run(t, it2, `print([(h["server"], h["tool"], h["signature"]) for h in await search_tool_docs("drop empty rows table")][:1])`)
	if hits != "[('saved_tools', 'clean', 'clean(rows)')]\n" {
		t.Errorf("search for the saved helper: %s", hits)
	}
	if out := run(t, it2, `print(delete_saved_tool("clean"), list_saved_tools())`); out != "True []\n" {
		t.Errorf("delete_saved_tool: %s", out)
	}
}

// TestMemoryShapes: the dicts agents get are the reference bridge's.
func TestMemoryShapes(t *testing.T) {
	_, run := memoryHost(t)
	it := localInterp(t)
	out := run(t, it, `
import time
t0 = time.time()
save_memory("k", [1, "ü"], metadata={"tags": ["x"]})
info = get_memory_info("k")
print(sorted(info), info["value"], info["bytes"], abs(info["created_at"] - t0) < 60, info["created_at"] == info["updated_at"])
update_memory("k", lambda v: v + [2])
info2 = get_memory_info("k")
print(info2["created_at"] == info["created_at"], info2["updated_at"] >= info["updated_at"], info2["metadata"])
m = list_memories()[0]
print(sorted(m), m["key"], m["bytes"])
print(get_memory_info("none"), update_memory("fresh", lambda v: v, default={"a": 1}))
import mcp
print(all(callable(getattr(mcp.runtime, n)) and n in globals() for n in mcp.memory.__all__))`)
	want := `['bytes', 'created_at', 'key', 'metadata', 'updated_at', 'value'] [1, 'ü'] 9 True True
True True {'tags': ['x']}
['bytes', 'created_at', 'key', 'metadata', 'updated_at'] k 12
None {'a': 1}
True
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// TestUpdateMemoryConcurrent: threads of one run, and a second session at the
// same time, increment one counter with update_memory; no update is lost.
func TestUpdateMemoryConcurrent(t *testing.T) {
	d, run := memoryHost(t)
	code := `
import threading
errors = []
def work():
    try:
        for _ in range(10):
            update_memory("counter", lambda n: (n or 0) + 1)
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=work) for _ in range(8)]
for th in threads: th.start()
for th in threads: th.join()
assert not errors, errors
`
	it1, it2 := localInterp(t), localInterp(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := it2.Run(t.Context(), python.Program{Code: code}, d.host(Run{}), time.Minute)
		if err != nil || res.Error != nil {
			t.Errorf("second session: %v %+v %s", err, res.Error, res.Stderr)
		}
	}()
	run(t, it1, code)
	<-done
	if out := run(t, it1, `print(load_memory("counter"))`); out != "160\n" {
		t.Errorf("counter = %s after 2 sessions × 8 threads × 10 updates, want 160", out)
	}
}

// TestMemoryErrors: what a model reads when it gets something wrong.
func TestMemoryErrors(t *testing.T) {
	_, run := memoryHost(t)
	it := localInterp(t)
	for _, tt := range []struct{ name, code, want string }{
		{"a set", `save_memory("k", {"rows": [1, {2, 3}]})`,
			"bad_arguments the value of memory 'k' is not JSON: value['rows'][1] has type set. Memories hold"},
		{"a datetime", `import datetime; save_memory("k", [datetime.date(2026, 1, 1)])`,
			"value[0] has type datetime.date. Memories hold dict, list, str, int, float, bool and None: convert it first"},
		{"nan", `save_memory("k", {"x": float("nan")})`, "value['x'] is float nan, which JSON cannot hold"},
		{"a cycle", `a = []; a.append(a); save_memory("k", a)`, "value[0] is the list itself again (a circular reference)"},
		{"a tuple key", `save_memory("k", {(1, 2): 3})`, "not JSON: value is a dict with a key of type tuple (keys must be str)"},
		{"bad metadata", `save_memory("k", 1, metadata={"when": object()})`, "the metadata of memory 'k' is not JSON: metadata['when'] has type object"},
		{"an int key", `load_memory(42)`, "bad_arguments a memory key is a str, not int: e.g. save_memory('42', value)"},
		{"an empty key", `save_memory("", 1)`, "bad_arguments memory key must be 1 to 128 characters, got 0"},
		{"a control character", `memory_exists("a\x00b")`, "non-printable character U+0000"},
		{"over 1 MiB", `save_memory("big", "x" * (1 << 20))`, "too_large memory 'big' is 1048578 bytes of JSON, over the 1 MiB limit"},
		{"over the request limit", `save_memory("huge", "x" * (8 << 20))`, "too_large memory 'huge' is 8388610 bytes"},
		{"a builtin", `save_tool(len)`, "bad_arguments save_tool saves a function defined with def in your code, not the builtin len"},
		{"a class", "class A: pass\nsave_tool(A)", "not a class (A): save a function that defines and returns it"},
		{"a lambda", `f = lambda x: x; save_tool(f)`, "bad_arguments save_tool cannot save a lambda"},
		{"a closure", "def outer():\n    n = 1\n    def inner():\n        return n\n    return inner\nsave_tool(outer())",
			"inner uses variables of the function it was defined in (n)"},
		{"a method", "class A:\n    def m(self): pass\nsave_tool(A().m)", "not a method (bound to an object)"},
		{"a helper's name", "def f(): pass\nsave_tool(f, name='load_memory')", "'load_memory' is the name of a codebridge helper"},
		{"a builtin's name", "def f(): pass\nsave_tool(f, name='len')", "'len' is a Python builtin"},
		{"a keyword", "def f(): pass\nsave_tool(f, name='class')", "must be a Python identifier"},
		{"no source", "exec('def g(): pass'); save_tool(g)", "bad_arguments cannot read the source of g"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, it, "try:\n"+indent(tt.code)+"\nexcept MCPError as e:\n    print(e.code, e.message)\nelse:\n    print('no error')")
			if !strings.Contains(out, tt.want) {
				t.Errorf("got %q\nwant it to contain %q", out, tt.want)
			}
		})
	}
}

// TestSaveTool: names, renames, recursion and the warning about globals a new
// session will not have.
func TestSaveTool(t *testing.T) {
	d, run := memoryHost(t)
	it := localInterp(t)
	run(t, it, `
import json
def helper(x):
    return x
def dump(x, *, indent=None):
    return json.dumps(helper(x), indent=indent)
def counter(start=0):
    """Counts things."""
    return start
def fact(n):
    return 1 if n < 2 else n * fact(n - 1)
`)
	res, err := it.Run(t.Context(), python.Program{Code: `print(save_tool(dump, name="to_json", description="JSON text of x."), save_tool(counter), save_tool(fact))`}, d.host(Run{}), time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "to_json counter fact\n" {
		t.Fatalf("save: %q %+v %v", res.Stdout, res.Error, err)
	}
	if want := "save_tool: to_json uses helper, json, which a new session will not define"; !strings.Contains(res.Stderr, want) || strings.Contains(res.Stderr, "fact uses") {
		t.Errorf("stderr %q, want one warning %q", res.Stderr, want)
	}
	if out := run(t, it, `print([(t["name"], t["signature"], t["description"]) for t in list_saved_tools()])`); out !=
		"[('counter', 'counter(start=0)', 'Counts things.'), ('fact', 'fact(n)', ''), ('to_json', 'to_json(x, *, indent=None)', 'JSON text of x.')]\n" {
		t.Errorf("list_saved_tools: %s", out)
	}
	it2 := localInterp(t)
	res, err = it2.Run(t.Context(), python.Program{
		Code:    `import json, sys; helper = lambda x: x; print(to_json([1]), counter(3), fact(5), 'dump' in globals())`,
		Prelude: SavedHelpers(d.store, slog.New(slog.DiscardHandler))(),
	}, d.host(Run{}), time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "[1] 3 120 False\n" || res.Stderr != "" {
		t.Errorf("a new session: %q %q %+v %v", res.Stdout, res.Stderr, res.Error, err)
	}
}

func indent(code string) string {
	return "    " + strings.ReplaceAll(code, "\n", "\n    ")
}

// TestRawToolSaveRefused: code that sends tool_save itself, past the
// sandbox's checks, cannot save a helper under a builtin's or codebridge's
// name, nor source with more than one def (F9).
func TestRawToolSaveRefused(t *testing.T) {
	d, run := memoryHost(t)
	it := localInterp(t)
	for _, tt := range []struct{ name, source string }{
		{"print", "def print(*a, **k):\n    call_tool('x', 'y', {'a': a})\n"},
		{"call_tool", "def call_tool(*a):\n    pass\n"},
		{"clean", "def clean(x):\n    return x\nimport os\nos.system('id')\n"},
		{"clean", "@__import__('os').system\ndef clean(x):\n    return x\n"},
		{"clean", "def clean(x=__import__('os').system('id')):\n    return x\n"},
	} {
		code := "from mcp import memory\ntry:\n    memory._call('tool_save', {'name': " + pyQuote(tt.name) + ", 'source': " + pyQuote(tt.source) +
			"})\nexcept MCPError as e:\n    print(e.code)\nelse:\n    print('saved')"
		if out := run(t, it, code); out != "bad_arguments\n" {
			t.Errorf("raw tool_save of %q %q: %q, want bad_arguments", tt.name, tt.source, out)
		}
	}
	if tools, _ := d.store.Tools(); len(tools) != 0 {
		t.Errorf("saved: %+v", tools)
	}
	// A source that reached a session anyway (a store written by hand, a
	// Python that reads it otherwise) is checked by the session's parser.
	res, err := localInterp(t).Run(t.Context(), python.Program{Code: "print('code')",
		Prelude: []protocol.Source{{Name: "f", Source: "def f():\n    pass\nprint('planted')\n"}}}, d.host(Run{}), time.Minute)
	if err != nil || res.Stdout != "code\n" || !strings.Contains(res.Stderr, "saved helper 'f' could not be defined") {
		t.Errorf("a planted helper: %q %q %v", res.Stdout, res.Stderr, err)
	}
}

// pyQuote is s as a Python string literal (JSON's escapes are Python's).
func pyQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
