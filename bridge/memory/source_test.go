package memory

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestSaveToolReservedNames: a saved helper cannot take the name of a
// builtin or of a global codebridge puts in every session (F9).
func TestSaveToolReservedNames(t *testing.T) {
	s := New(t.TempDir())
	for _, name := range []string{"print", "open", "len", "__import__", "call_tool", "runtime", "mcp_servers",
		"save_memory", "load_memory", "query_tool_docs", "mcp_github", "__builtins__", "mcp"} {
		err := s.SaveTool(Tool{Name: name, Source: "def " + name + "(x):\n    return x\n"})
		if err == nil {
			t.Errorf("SaveTool(%q) = nil, want it refused", name)
		}
	}
	if err := s.SaveTool(Tool{Name: "clean", Source: "def clean(x):\n    return x\n"}); err != nil {
		t.Errorf("SaveTool(clean) = %v", err)
	}
}

// TestSaveToolSourceChecked: only exactly one top-level def of the name is
// stored, whatever the sandbox's own checks said (F9).
func TestSaveToolSourceChecked(t *testing.T) {
	bad := map[string]string{
		"second statement":   "def f(x):\n    return x\nimport os\n",
		"assignment after":   "def f(x):\n    return x\nprint = f\n",
		"statement before":   "import os\ndef f(x):\n    return x\n",
		"decorator":          "@call_tool\ndef f(x):\n    return x\n",
		"call in default":    "def f(x=__import__('os').system('id')):\n    return x\n",
		"call in annotation": "def f(x: open('/etc/passwd') = 1):\n    return x\n",
		"return annotation":  "def f(x) -> exec('1'):\n    return x\n",
		"attribute default":  "def f(x=os.environ):\n    return x\n",
		"lambda default":     "def f(x=lambda: 1):\n    return x\n",
		"walrus default":     "def f(x=(y := 1)):\n    return x\n",
		"f-string default":   "def f(x=f\"{exec('1')}\"):\n    return x\n",
		"other name":         "def g(x):\n    return x\n",
		"class":              "class f:\n    pass\n",
		"semicolon":          "def f(): return 1; \nimport os\n",
		"cr line break":      "def f():\n    return 1\rimport os\n",
		"formfeed indent":    "def f():\n    return 1\n\fimport os\n",
		"continuation":       "def f():\n    return 1\n\\\nimport os\n",
		"string hides":       "def f():\n    return '''x\n'''\nimport os\n",
		"one-liner then top": "def f(): return 1\nimport os\n",
		"two defs":           "def f():\n    pass\ndef f():\n    pass\n",
		"unterminated":       "def f():\n    return '''x\n",
	}
	s := New(t.TempDir())
	for name, src := range bad {
		t.Run(name, func(t *testing.T) {
			if err := s.SaveTool(Tool{Name: "f", Source: src}); err == nil {
				t.Errorf("SaveTool accepted %q", src)
			}
		})
	}
	good := []string{
		"def f(x):\n    return x\n",
		"async def f(x):\n    return x\n",
		"def f(rows, drop_empty=True, sep=',', n=-1, opts=None, keys=(), d={}, l=[1, 'a'], *args, **kw):\n    '''Doc.'''\n    return rows\n",
		"def f(x: int, y: list[str] = [], z: dict[str, int] | None = None) -> 'Result':\n    return x\n",
		"def f(a, /, b, *, c=...):\n    return a\n",
		"# a comment\n\ndef f(x):  # why\n    s = '''\nimport os\n'''\n    t = f\"{x}\" + rb'\\q' \\\n        + \"\"\n    @dec\n    def g(): pass\n    return (x,\n1)\n# trailing comment\n\n",
		"def f(): return 1\n",
		"def f(\n    x,\n    y=2,\n):\n\treturn x\n",
	}
	for _, src := range good {
		if err := s.SaveTool(Tool{Name: "f", Source: src}); err != nil {
			t.Errorf("SaveTool(%q) = %v", src, err)
		}
	}
}

// TestReservedBuiltins checks the builtins table against Python's own list.
func TestReservedBuiltins(t *testing.T) {
	out := runPython(t, "import builtins, json, sys; print(json.dumps([sys.version_info[:2], dir(builtins)]))")
	var got struct {
		Version [2]int
		Names   []string
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil || len(raw) != 2 {
		t.Fatalf("python3 printed %s: %v", out, err)
	}
	json.Unmarshal(raw[0], &got.Version)
	json.Unmarshal(raw[1], &got.Names)
	for _, n := range got.Names {
		if !slices.Contains(builtinNames, n) {
			t.Errorf("Python %d.%d's builtin %q is missing from builtinNames", got.Version[0], got.Version[1], n)
		}
	}
	if got.Version == [2]int{3, 11} {
		for _, n := range builtinNames {
			if !slices.Contains(got.Names, n) && !slices.Contains(laterBuiltins, n) {
				t.Errorf("builtinNames has %q, which Python 3.11 does not have: add it to laterBuiltins or remove it", n)
			}
		}
	}
}

// TestReservedSandboxGlobals checks sandboxGlobals against the names the
// runner puts in a session's namespace.
func TestReservedSandboxGlobals(t *testing.T) {
	dir, err := filepath.Abs("../../runtime/python/pyfiles")
	if err != nil {
		t.Fatal(err)
	}
	out := runPython(t, "import sys, json; sys.path.insert(0, "+strconvQuote(dir)+")\n"+
		"import codebridge_runner as r\nns, m = r._namespace(None)\nprint(json.dumps(sorted(ns) + list(m.__all__)))")
	var names []string
	if err := json.Unmarshal(out, &names); err != nil {
		t.Fatalf("python3 printed %s: %v", out, err)
	}
	for _, n := range names {
		if reserved(n) == "" {
			t.Errorf("the sandbox's global %q is not reserved: add it to sandboxGlobals", n)
		}
	}
	for _, n := range sandboxGlobals {
		if !slices.Contains(names, n) && n != "mcp" {
			t.Errorf("sandboxGlobals has %q, which the sandbox no longer defines", n)
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func runPython(t *testing.T, script string) []byte {
	t.Helper()
	cmd := exec.Command(testenv.Python(t), "-c", script)
	cmd.Env = testenv.PythonEnv
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	return []byte(strings.TrimSpace(string(out)))
}
