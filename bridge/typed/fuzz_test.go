package typed

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// FuzzRender renders tools from arbitrary input and output schemas, a
// description, and a schema built around one arbitrary property name (an
// object property, a $defs entry and a $ref cycle through it), with and
// without results inferred from an arbitrary JSON value. It terminates in
// bounded work and the stub is Python as intended (checkStub).
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`), []byte(`{"type":"object","properties":{"r":{"type":"string"}}}`), "Adds.\nMore.", "a")
	f.Add([]byte(`{"$defs":{"N":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/N"}}}}},"type":"object","properties":{"n":{"$ref":"#/$defs/N"}}}`), []byte(`{"$ref":"#"}`), `ends with a quote"`, "none")
	f.Add([]byte(`{"type":"object","properties":{"x":{"type":"object","description":"line\rimport os","properties":{"y":{"type":"string","description":"é\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"}}}}}`), []byte(`null`), `a \x escape and \N{bad}`, "-")
	f.Add([]byte(`{"anyOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}]}`), []byte(`{"anyOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}]}`), `"""); import os; ("""`, "True")
	f.Add([]byte(`{"type":"object","properties":{"a b":{"type":"object","properties":{"\"":{"enum":["x\u0000",1.5e300,{"k":[null]}]}}}}}`), []byte(`{"items":{"items":{"items":{"items":{"items":{"items":{"items":{"items":{"items":{"items":{}}}}}}}}}}}`), "nul\x00byte", "class")
	// Alternatives that each refer back to the root: exponential in
	// maxDepth without a bound on the work.
	f.Add([]byte(`{"anyOf":[`+strings.Repeat(`{"$ref":"#"},`, 127)+`{"$ref":"#"}]}`), []byte(`{}`), "", "r")
	f.Fuzz(func(t *testing.T, in, out []byte, desc, name string) {
		built, _ := json.Marshal(map[string]any{
			"type": "object",
			"$defs": map[string]any{name: map[string]any{"type": "object", "description": desc, "properties": map[string]any{
				name: map[string]any{"$ref": "#/$defs/" + name}, "v": map[string]any{"type": "string", "default": desc},
			}}},
			"properties": map[string]any{name: map[string]any{"$ref": "#/$defs/" + name, "description": desc}},
			"required":   []string{name},
		})
		var v any
		json.Unmarshal(out, &v)
		inferred := inferSchema(v, 0)
		inferred = mergeSchemas(inferred, inferSchema(map[string]any{name: v}, 0), 0)
		if !json.Valid(in) {
			in = built
		}
		var outSchema any = json.RawMessage(out)
		if !json.Valid(out) {
			outSchema = nil // what a client decodes is JSON
		}
		for _, tool := range []*mcp.Tool{
			{Description: desc, InputSchema: json.RawMessage(in), OutputSchema: outSchema},
			{Description: desc, InputSchema: json.RawMessage(built), OutputSchema: json.RawMessage(in)},
		} {
			for _, inf := range []*schema{nil, inferred} {
				doc := renderTool("f", tool, inf, 2)
				checkStub(t, doc)
			}
		}
	})
}

var (
	classLine      = regexp.MustCompile(`^class ([A-Za-z_][A-Za-z0-9_]*)\(TypedDict\):$`)
	functionalLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*) = TypedDict\("([A-Za-z_][A-Za-z0-9_]*)", \{$`)
	fieldLine      = regexp.MustCompile(`^    (?:[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"): .+$`)
	defLine        = regexp.MustCompile(`^def f\((?:\*, [A-Za-z_][A-Za-z0-9_]*: .*)?\) -> .+:$`)
)

// checkStub fails t unless doc's stub is Python as renderTool means it:
// valid UTF-8 without NUL or a carriage return (a line break to Python
// that would end a comment early), TypedDicts with class names that are
// identifiers and not keywords, then the function whose docstring holds no
// closing quotes and no backslash but escaped ones, so that it neither ends
// early nor holds an invalid escape.
func checkStub(t *testing.T, doc Doc) {
	t.Helper()
	stub := doc.Stub
	fail := func(why string, args ...any) {
		t.Helper()
		t.Fatalf("stub: "+why+"\n%s", append(args, stub)...)
	}
	if len(stub) > 1<<20 {
		fail("%d bytes", len(stub))
	}
	if !utf8.ValidString(stub) || strings.ContainsAny(stub, "\x00\r") {
		fail("invalid UTF-8, a NUL or a carriage return")
	}
	if strings.ContainsAny(doc.Signature, "\n\r") {
		fail("signature %q spans lines", doc.Signature)
	}
	def := strings.Index(stub, "\ndef f(")
	if !strings.HasPrefix(stub, "def f(") {
		if def < 0 {
			fail("no def line")
		}
		def++
	} else {
		def = 0
	}
	inDict := false
	for line := range strings.SplitSeq(stub[:def], "\n") {
		name := ""
		switch m, fm := classLine.FindStringSubmatch(line), functionalLine.FindStringSubmatch(line); {
		case line == "":
		case m != nil:
			name, inDict = m[1], false
		case fm != nil && fm[1] == fm[2]:
			name, inDict = fm[1], true
		case line == "})" && inDict:
			inDict = false
		case fieldLine.MatchString(line) && (!inDict || strings.Contains(line, ",")):
		default:
			fail("line %q is not a TypedDict's", line)
		}
		if name != "" && discovery.Alias(name) != name {
			fail("class name %q is not a Python identifier, or is a keyword", name)
		}
	}
	head, body, ok := strings.Cut(stub[def:], "\n    \"\"\"")
	if !ok || !defLine.MatchString(head) || head != "def "+doc.Signature+":" {
		fail("def line %q", head)
	}
	body, ok = strings.CutSuffix(body, "\n    \"\"\"")
	if !ok || strings.Contains(body, `"""`) {
		fail("the docstring %q ends early or not at the end", body)
	}
	if strings.Contains(strings.ReplaceAll(body, `\\`, ""), `\`) {
		fail("the docstring %q holds a backslash that is not escaped", body)
	}
}
