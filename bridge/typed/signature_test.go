package typed

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRenderSignature(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"required numbers", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
			"f(*, a: float, b: float) -> Any"},
		{"required first, server order, keyword alias, defaults",
			`{"type":"object","properties":{"tail":{"type":"integer","default":10},"path":{"type":"string"},"class":{"type":"boolean"},"mode":{"type":"string","default":"r"}},"required":["path"]}`,
			`f(*, path: str, tail: int = 10, class_: bool = None, mode: str = "r") -> Any`},
		{"arrays, nullable", `{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}},"x":{"type":["string","null"]},"y":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["ids","x","y"]}`,
			"f(*, ids: list[str], x: str | None, y: int | None) -> Any"},
		{"enum and const", `{"type":"object","properties":{"level":{"type":"string","enum":["debug","info"]},"v":{"const":2}},"required":["level","v"]}`,
			`f(*, level: Literal["debug", "info"], v: Literal[2]) -> Any`},
		{"maps", `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}},"meta":{"type":"object"}},"required":["env","meta"]}`,
			"f(*, env: dict[str, str], meta: dict[str, Any]) -> Any"},
		{"no parameters", `{"type":"object"}`, "f() -> Any"},
		{"no schema", `null`, "f() -> Any"},
		{"odd names", `{"type":"object","properties":{"max-results":{"type":"integer"},"2d":{"type":"boolean"}}}`,
			"f(*, max_results: int = None, _2d: bool = None) -> Any"},
	}
	for _, tt := range tests {
		got := renderTool("f", &mcp.Tool{InputSchema: json.RawMessage(tt.schema)}, nil, 0)
		if got.Signature != tt.want {
			t.Errorf("%s: signature = %q, want %q", tt.name, got.Signature, tt.want)
		}
	}
}

func TestRenderTypedDicts(t *testing.T) {
	in := `{"type":"object","$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["name"]}},
		"properties":{
		"entities":{"type":"array","description":"The entities to create","items":{"type":"object","properties":{
			"name":{"type":"string","description":"The name of the entity"},
			"observations":{"type":"array","items":{"type":"string"}},
			"content-type":{"type":"string"}},"required":["name","observations"]}},
		"root":{"$ref":"#/$defs/Node"}},
		"required":["entities"]}`
	out := `{"type":"object","properties":{"created":{"type":"integer"}},"required":["created"]}`
	got := renderTool("create_entities", &mcp.Tool{Description: "Create entities.\nMore words.", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)}, nil, 0)
	if want := "create_entities(*, entities: list[EntitiesItem], root: Node = None) -> Create_entitiesResult"; got.Signature != strings.Replace(want, "Create_entitiesResult", "CreateEntitiesResult", 1) {
		t.Errorf("signature = %q", got.Signature)
	}
	for _, want := range []string{
		"EntitiesItem = TypedDict(\"EntitiesItem\", {\n    \"name\": str,  # The name of the entity\n    \"observations\": list[str],\n    \"content-type\": NotRequired[str],\n})",
		"class Node(TypedDict):\n    name: str\n    children: NotRequired[list[Node]]",
		"class CreateEntitiesResult(TypedDict):\n    created: int",
		"def create_entities(*, entities: list[EntitiesItem], root: Node = None) -> CreateEntitiesResult:\n    \"\"\"Create entities.\n    More words.\n\n    Args:\n        entities: The entities to create\n    \"\"\"",
	} {
		if !strings.Contains(got.Stub, want) {
			t.Errorf("stub lacks\n%s\n--- stub:\n%s", want, got.Stub)
		}
	}
	if len(got.Params) != 2 || got.Params[0].Name != "entities" || !got.Params[0].Required || got.Params[1].Required {
		t.Errorf("params = %+v", got.Params)
	}
}

func TestInferredReturn(t *testing.T) {
	r := NewResults()
	var a, b any
	json.Unmarshal([]byte(`{"sum": 3, "parts": [1, 2], "note": "x"}`), &a)
	json.Unmarshal([]byte(`{"sum": 2.5, "parts": []}`), &b)
	r.Observe("m", "add", a)
	r.Observe("m", "add", b)
	s, n := r.inferred("m", "add")
	got := renderTool("add", &mcp.Tool{InputSchema: json.RawMessage(`{"type":"object"}`)}, s, n)
	if got.Signature != "add() -> AddResult" {
		t.Errorf("signature = %q", got.Signature)
	}
	for _, want := range []string{"class AddResult(TypedDict):\n    note: NotRequired[str]\n    parts: list[int]\n    sum: float",
		"Returns:\n        AddResult (inferred from 2 structured results seen so far; the server declares no output schema)"} {
		if !strings.Contains(got.Stub, want) {
			t.Errorf("stub lacks\n%s\n--- stub:\n%s", want, got.Stub)
		}
	}
	if s, _ := r.inferred("m", "other"); s != nil {
		t.Error("a tool never called has an inferred type")
	}
}
