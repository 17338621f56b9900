package python

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// catalogHandler is a fake host whose server "mem" has resources and
// prompts, and "every-thing" none; it records what it is asked.
type catalogHandler struct {
	protocol.Refuse
	mu   sync.Mutex
	seen []string // "method server what"
}

func (h *catalogHandler) saw(method, server, what string) error {
	h.mu.Lock()
	h.seen = append(h.seen, method+" "+server+" "+what)
	h.mu.Unlock()
	if server != "mem" {
		return &protocol.Error{Code: protocol.CodeUnsupported, Message: fmt.Sprintf("MCP server %q does not offer resources", server)}
	}
	return nil
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func (h *catalogHandler) ListResources(_ context.Context, p protocol.ServerParams) (protocol.ResourceList, error) {
	return protocol.ResourceList{RawMessage: raw(`[{"uri":"test://text","name":"text","mimeType":"text/plain"},{"uri":"test://blob","name":"blob"}]`)}, h.saw("list_resources", p.Server, "")
}

func (h *catalogHandler) ListResourceTemplates(_ context.Context, p protocol.ServerParams) (protocol.ResourceTemplateList, error) {
	return protocol.ResourceTemplateList{RawMessage: raw(`[{"uriTemplate":"test://item/{id}","name":"item"}]`)}, h.saw("list_resource_templates", p.Server, "")
}

func (h *catalogHandler) ReadResource(_ context.Context, p protocol.ReadResourceParams) (protocol.ReadResourceResult, error) {
	contents := map[string]string{
		"test://text":  `[{"uri":"test://text","mimeType":"text/plain","text":"hello"}]`,
		"test://blob":  `[{"uri":"test://blob","blob":"AAEC/w=="}]`,
		"test://pair":  `[{"uri":"test://pair#1","text":"one"},{"uri":"test://pair#2","blob":"Ag=="}]`,
		"test://empty": `[{"uri":"test://empty"}]`,
	}[p.URI]
	if contents == "" {
		contents = "[]"
	}
	return protocol.ReadResourceResult{RawMessage: raw(`{"contents":` + contents + `}`)}, h.saw("read_resource", p.Server, p.URI)
}

func (h *catalogHandler) ListPrompts(_ context.Context, p protocol.ServerParams) (protocol.PromptList, error) {
	return protocol.PromptList{RawMessage: raw(`[{"name":"greet","arguments":[{"name":"name","required":true}]}]`)}, h.saw("list_prompts", p.Server, "")
}

func (h *catalogHandler) GetPrompt(_ context.Context, p protocol.GetPromptParams) (protocol.GetPromptResult, error) {
	args, _ := json.Marshal(p.Arguments)
	msgs := fmt.Sprintf(`[{"role":"user","content":{"type":"text","text":"Hello, %s!"}},{"role":"assistant","content":{"type":"image","data":"AA==","mimeType":"image/png"}}]`, p.Arguments["name"])
	return protocol.GetPromptResult{RawMessage: raw(`{"description":"greets","messages":` + msgs + `}`)}, h.saw("get_prompt", p.Server, p.Name+" "+string(args))
}

func (h *catalogHandler) QueryToolDocs(context.Context, protocol.QueryToolDocsParams) (protocol.ToolDocs, error) {
	return nil, nil
}

func (h *catalogHandler) CallTool(_ context.Context, p protocol.CallToolParams) (protocol.CallToolResult, error) {
	return protocol.CallToolResult{RawMessage: raw(`{"content":[{"type":"text","text":"tool ` + *p.Tool + `"}]}`)}, h.saw("call_tool", p.Server, *p.Tool)
}

// TestResourcesAndPrompts: the helpers turn text into str, blobs into
// bytes and several contents into a list; read a resource_link dict as its
// URI; send prompt arguments as strings; have proxy and _sync forms; and
// raise MCPError for what the host refuses and for what they refuse
// before sending anything.
func TestResourcesAndPrompts(t *testing.T) {
	tests := []struct{ code, want string }{
		{"await mcp_mem.read_resource('test://text')", "'hello'"},
		{"read_resource_sync('mem', 'test://blob')", `b'\x00\x01\x02\xff'`},
		{"await read_resource('mem', 'test://pair')", `['one', b'\x02']`},
		{"mcp_mem.read_resource_sync('test://empty')", "''"},
		{"await read_resource('mem', 'test://none')", "[]"},
		{"read_resource_sync('mem', {'type': 'resource_link', 'uri': 'test://text', 'name': 'text'})", "'hello'"},
		{"read_resource_sync('mem', {'type': 'resource', 'resource': {'uri': 'test://blob'}})", `b'\x00\x01\x02\xff'`},
		{"read_resource_sync('mem', 'test://text', raw=True)['contents'][0]['mimeType']", "'text/plain'"},
		{"[r['uri'] for r in await mcp_mem.list_resources()]", "['test://text', 'test://blob']"},
		{"[r['uri'] for r in list_resources_sync('mem')][0]", "'test://text'"},
		{"mcp_mem.list_resource_templates_sync()[0]['uriTemplate']", "'test://item/{id}'"},
		{"(await list_resource_templates('mem'))[0]['name']", "'item'"},
		{"[p['name'] for p in list_prompts_sync('mem')]", "['greet']"},
		{"await mcp_mem.get_prompt('greet', {'name': 'Ada', 'n': 3})",
			`{'description': 'greets', 'messages': [{'role': 'user', 'content': 'Hello, Ada!'}, {'role': 'assistant', 'content': {'type': 'image', 'data': 'AA==', 'mimeType': 'image/png'}}]}`},
		{"get_prompt_sync('mem', 'greet', {'name': 'Bo'}, raw=True)['messages'][0]['content']", `{'type': 'text', 'text': 'Hello, Bo!'}`},
		{"[len(x) for x in await asyncio.gather(mcp_mem.list_prompts(), list_resources('mem'))]", "[1, 2]"},
		{"mcp_mem.call_sync('list_prompts')", "'tool list_prompts'"},
		{"mcp_mem.sync.read_resource()", "'tool read_resource'"},
		{"list_resources_sync('every-thing')", `MCPError unsupported MCP server "every-thing" does not offer resources`},
		{"await mcp_every_thing.list_prompts()", `MCPError unsupported MCP server "every-thing" does not offer resources`},
		{"read_resource_sync('mem', 5)", "MCPError bad_arguments read_resource needs a URI"},
		{"read_resource_sync('mem', {'name': 'x'})", "MCPError bad_arguments read_resource needs a URI"},
		{"get_prompt_sync('mem', 'greet', ['Ada'])", "MCPError bad_arguments prompt arguments must be a dict, not list"},
		{"get_prompt_sync('mem', 'greet', {'name': object()})", "MCPError bad_arguments prompt arguments are strings, or values sent as JSON"},
	}
	var code strings.Builder
	code.WriteString("import asyncio\n")
	for i, tt := range tests {
		fmt.Fprintf(&code, "try:\n    print(%d, repr(%s))\nexcept MCPError as e:\n    print(%d, 'MCPError', e.code, e)\n", i, tt.code, i)
	}
	h := &catalogHandler{Refuse: func(m string) error { return fmt.Errorf("unexpected %s", m) }}
	out := runOK(t, code.String(), protocol.Server{Handler: h})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(tests) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tests), out)
	}
	for i, tt := range tests {
		if want := fmt.Sprint(i, " ", tt.want); !strings.HasPrefix(lines[i], want) {
			t.Errorf("%s:\n got  %s\n want %s", tt.code, lines[i], want)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := strings.Join(h.seen, "\n")
	for _, want := range []string{`get_prompt mem greet {"n":"3","name":"Ada"}`, "read_resource mem test://text", "call_tool mem list_prompts"} {
		if !strings.Contains(seen, want) {
			t.Errorf("the host was not asked %q; it saw:\n%s", want, seen)
		}
	}
	for _, s := range h.seen {
		if strings.HasPrefix(s, "read_resource mem 5") || strings.Contains(s, "['Ada']") {
			t.Errorf("a request the helpers should have refused was sent: %s", s)
		}
	}
}
