package python

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// pythonSources returns the embedded Python files, by path.
func pythonSources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(sandboxFS, "pyfiles", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") {
			return err
		}
		b, err := fs.ReadFile(sandboxFS, path)
		out[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// matches returns the first group of every match of re in the sources, sorted
// and without repeats.
func matches(srcs map[string]string, re *regexp.Regexp) []string {
	var out []string
	for _, src := range srcs {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestMethodsMatchPython: the dispatch table serves every method the Python
// helpers send (runtime._request and memory._call with a literal name), and
// nothing they do not send.
func TestMethodsMatchPython(t *testing.T) {
	sent := matches(pythonSources(t), regexp.MustCompile(`\b(?:_request|_call)\(\s*"([a-z_]+)"`))
	if diff := cmp.Diff(protocol.Methods(), sent); diff != "" {
		t.Errorf("methods of the dispatch table (-) and methods the sandbox sends (+):\n%s", diff)
	}
}

// sandboxCodes are the MCPError codes the sandbox makes itself, never sent
// by the host.
var sandboxCodes = []string{"tool_error"}

// TestCodesMatchPython: every error code the host sends is documented on
// MCPError, and every code the Python side raises or branches on is one the
// host sends or one the sandbox makes itself.
func TestCodesMatchPython(t *testing.T) {
	srcs := pythonSources(t)
	doc := regexp.MustCompile(`(?s)class MCPError\(Exception\):\s*"""(.*?)"""`).FindStringSubmatch(srcs["pyfiles/mcp/_channel.py"])
	if doc == nil {
		t.Fatal("no MCPError docstring in pyfiles/mcp/_channel.py")
	}
	documented := regexp.MustCompile(`[a-z]+(?:_[a-z]+)+|internal|timeout|conflict|declined|quarantined|unsupported|busy`).FindAllString(doc[1], -1)
	var known []string
	for _, c := range protocol.Codes {
		known = append(known, string(c))
		if !slices.Contains(documented, string(c)) {
			t.Errorf("code %q is not in MCPError's docstring", c)
		}
	}
	known = append(known, sandboxCodes...)
	used := matches(srcs, regexp.MustCompile(`(?:code\s*[!=]=\s*|code=|_make_error\()"([a-z_]+)"`))
	if len(used) == 0 {
		t.Fatal("found no codes in the Python sources: the pattern is stale")
	}
	for _, c := range used {
		if !slices.Contains(known, c) {
			t.Errorf("the Python side uses code %q, which is no protocol.Code", c)
		}
	}
}
