package typed

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStubsParseAsPython renders tools whose schemas the fuzzer found
// troublesome (keywords and NUL in names, backslashes, quotes and line
// breaks in descriptions) and has python3's ast.parse read every stub. It
// skips without python3; FuzzRender checks the same in Go.
func TestStubsParseAsPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	descs := []string{`ends with a quote"`, `a \x escape and \N{bad}`, `"""); import os; ("""`, "nul\x00byte", "line\rimport os", `trailing \`, "\xff"}
	names := []string{"none", "True", "-", "\x00\xbe0", "a b", `"`, "class", "é"}
	var stubs []string
	for _, d := range descs {
		for _, n := range names {
			in, _ := json.Marshal(map[string]any{
				"type":       "object",
				"$defs":      map[string]any{n: map[string]any{"type": "object", "description": d, "properties": map[string]any{n: map[string]any{"$ref": "#/$defs/" + n, "description": d}}}},
				"properties": map[string]any{n: map[string]any{"$ref": "#/$defs/" + n, "description": d}, "x": map[string]any{"type": "object", "description": d, "properties": map[string]any{n: map[string]any{"type": "string", "description": d, "default": d}}}},
				"required":   []string{n},
			})
			doc := renderTool("f", &mcp.Tool{Description: d, InputSchema: json.RawMessage(in)}, nil, 0)
			stubs = append(stubs, doc.Stub)
		}
	}
	blob, _ := json.Marshal(stubs)
	cmd := exec.Command(py, "-c", `
import ast, json, sys
for i, s in enumerate(json.load(sys.stdin)):
    try:
        ast.parse("from typing import *\n" + s)
    except SyntaxError as e:
        print("stub", i, e, "\n" + s)
        sys.exit(1)
`)
	cmd.Stdin = strings.NewReader(string(blob))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python3 refused a stub: %v\n%s", err, out)
	}
}
