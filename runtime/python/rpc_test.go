package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

var testServers = []protocol.ServerInfo{
	{Name: "every-thing", Alias: "every_thing", Description: "test server"},
	{Name: "mem", Alias: "mem", Description: "memory", Loaded: true,
		Tools: []protocol.ToolSummary{{Name: "echo", Alias: "echo", Description: "Echo"}}},
}

var testTools = []map[string]any{
	{"name": "echo", "alias": "echo", "description": "Echoes a message.", "inputSchema": map[string]any{
		"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "additionalProperties": true},
		"signature": "echo(*, message: str = None) -> Any",
		"params":    []protocol.Param{{Name: "message", Alias: "message", Type: "str"}}},
	{"name": "get-sum", "alias": "get_sum", "description": "Adds.", "inputSchema": map[string]any{
		"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}},
		"signature": "get_sum(*, a: float = None, b: float = None) -> Any",
		"params":    []protocol.Param{{Name: "a", Alias: "a", Type: "float"}, {Name: "b", Alias: "b", Type: "float"}}},
}

// toolHost is a fake bridge: it resolves server and tool aliases like the real
// one and records every request.
type toolHost struct {
	mu       sync.Mutex // protects requests
	requests []string   // "method params-json"

	call func(ctx context.Context, tool string, args map[string]any) (any, error) // call_tool; nil echoes
}

func (h *toolHost) record(method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(params) > 200 {
		params = params[:200]
	}
	h.requests = append(h.requests, method+" "+string(params))
}

func resolveServer(name string) (protocol.ServerInfo, error) {
	for _, s := range testServers {
		if s.Name == name || s.Alias == name {
			return s, nil
		}
	}
	return protocol.ServerInfo{}, &protocol.Error{Code: "unknown_server", Message: fmt.Sprintf("no server %q", name), Data: map[string]any{"suggestions": []string{"every-thing"}}}
}

func resolveTool(name string) (map[string]any, error) {
	for _, t := range testTools {
		if t["name"] == name || t["alias"] == name {
			return t, nil
		}
	}
	return nil, &protocol.Error{Code: "unknown_tool", Message: fmt.Sprintf("no tool %q", name), Data: map[string]any{"suggestions": []string{"echo"}}}
}

func (h *toolHost) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h.record(method, params)
	var p struct {
		Server    string         `json:"server"`
		Tool      *string        `json:"tool"`
		Detail    string         `json:"detail"`
		Query     string         `json:"query"`
		Limit     int            `json:"limit"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &protocol.Error{Code: "bad_arguments", Message: err.Error()}
	}
	doc := func(s protocol.ServerInfo, t map[string]any) map[string]any {
		d := map[string]any{"server": s.Name, "serverAlias": s.Alias, "tool": t["name"], "toolAlias": t["alias"], "description": t["description"]}
		if p.Detail == "full" {
			d["inputSchema"], d["signature"], d["params"] = t["inputSchema"], t["signature"], t["params"]
		}
		return d
	}
	switch method {
	case "check_tools": // echoes the references as the Python sent them
		var refs protocol.CheckToolsParams
		json.Unmarshal(params, &refs)
		out := protocol.ToolChecks{}
		for _, r := range refs.Tools {
			out = append(out, protocol.ToolCheck{Server: r.Server, Tool: r.Tool, Status: protocol.Ready})
		}
		return out, nil
	case "describe_server":
		s, err := resolveServer(p.Server)
		if err != nil {
			return nil, err
		}
		var tools []map[string]any
		for _, t := range testTools {
			tools = append(tools, map[string]any{"name": t["name"], "alias": t["alias"], "description": t["description"]})
		}
		return map[string]any{"name": s.Name, "alias": s.Alias, "description": s.Description, "tools": tools}, nil
	case "list_tools":
		if _, err := resolveServer(p.Server); err != nil {
			return nil, err
		}
		return testTools, nil
	case "query_tool_docs":
		s, err := resolveServer(p.Server)
		if err != nil {
			return nil, err
		}
		if p.Tool != nil {
			t, err := resolveTool(*p.Tool)
			if err != nil {
				return nil, err
			}
			return []any{doc(s, t)}, nil
		}
		var docs []any
		for _, t := range testTools {
			docs = append(docs, doc(s, t))
		}
		return docs, nil
	case "search_tool_docs":
		d := doc(testServers[0], testTools[1])
		d["score"] = 0.9
		return []any{d}, nil
	case "call_tool":
		if _, err := resolveServer(p.Server); err != nil {
			return nil, err
		}
		if p.Tool == nil {
			return nil, &protocol.Error{Code: "bad_arguments", Message: "no tool"}
		}
		if h.call != nil {
			return h.call(ctx, *p.Tool, p.Arguments)
		}
		t, err := resolveTool(*p.Tool)
		if err != nil {
			return nil, err
		}
		return map[string]any{"structuredContent": map[string]any{"tool": t["name"], "args": p.Arguments}}, nil
	}
	return nil, errors.New("unknown method " + method)
}

// runOK runs code against h and fails the test unless it ends cleanly.
func runOK(t *testing.T, code string, h Host) string {
	t.Helper()
	res, err := run(t, Program{Code: code, Servers: testServers, OutputLimit: 1 << 20}, h)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.Error != nil {
		t.Fatalf("run failed: %+v\nstdout: %s\nstderr: %s", res.Error, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

func TestHelpers(t *testing.T) {
	tests := []struct {
		name string
		code string
		want string // printed output, exact
		reqs []string
	}{
		{
			name: "discovered_servers", code: "print(discovered_servers())\nprint(discovered_servers(detailed=True)[0])",
			want: "('every-thing', 'mem')\n{'name': 'every-thing', 'alias': 'every_thing', 'description': 'test server'}\n",
		},
		{
			name: "list_servers", code: "print(await list_servers(), list_servers_sync())\nprint(list_loaded_server_metadata())",
			want: "('every-thing', 'mem') ('every-thing', 'mem')\n({'name': 'mem', 'alias': 'mem', 'description': 'memory', 'tools': [{'name': 'echo', 'alias': 'echo', 'description': 'Echo'}]},)\n",
		},
		{
			name: "describe_server", code: "d = describe_server('every_thing')\nprint(d['name'], [t['alias'] for t in d['tools']])",
			want: "every-thing ['echo', 'get_sum']\n", reqs: []string{`describe_server {"server": "every_thing"}`},
		},
		{
			name: "list_tools", code: "a = await list_tools('mem')\nb = list_tools_sync('mem')\nprint(a == b, [t['name'] for t in a])",
			want: "True ['echo', 'get-sum']\n", reqs: []string{`list_tools {"server": "mem"}`, `list_tools {"server": "mem"}`},
		},
		{
			name: "query_tool_docs one tool", code: "d = await query_tool_docs('mem', 'get_sum', detail='full')\nprint(d['tool'], 'inputSchema' in d, query_tool_docs_sync('mem', 'echo')['toolAlias'])",
			want: "get-sum True echo\n",
			reqs: []string{`query_tool_docs {"server": "mem", "tool": "get_sum", "detail": "full"}`, `query_tool_docs {"server": "mem", "tool": "echo", "detail": "summary"}`},
		},
		{
			name: "query_tool_docs all", code: "print(len(await query_tool_docs('mem')), len(query_tool_docs_sync('mem')))",
			want: "2 2\n", reqs: []string{`query_tool_docs {"server": "mem", "tool": null, "detail": "summary"}`},
		},
		{
			name: "search_tool_docs", code: "r = await search_tool_docs('sum')\nprint(r[0]['tool'], r[0]['score'], search_tool_docs_sync('add', limit=2, detail='full')[0]['toolAlias'])",
			want: "get-sum 0.9 get_sum\n",
			reqs: []string{`search_tool_docs {"query": "sum", "limit": 5, "detail": "summary"}`, `search_tool_docs {"query": "add", "limit": 2, "detail": "full"}`},
		},
		{
			name: "call_tool", code: "print(await call_tool('every-thing', 'echo', {'message': 'hi'}))\nprint(call_tool_sync('every_thing', 'get_sum', {'a': 1, 'b': 2}))",
			want: "{'args': {'message': 'hi'}, 'tool': 'echo'}\n{'args': {'a': 1, 'b': 2}, 'tool': 'get-sum'}\n",
			reqs: []string{`call_tool {"server": "every-thing", "tool": "echo", "arguments": {"message": "hi"}}`},
		},
		{
			name: "call_tool raw", code: "print(await call_tool('mem', 'echo', raw=True))",
			want: "{'structuredContent': {'args': {}, 'tool': 'echo'}}\n",
		},
		{
			name: "proxies", code: "print((await mcp_every_thing.echo(message='a'))['args'])\n" +
				"print(mcp_every_thing.sync.get_sum(a=1)['tool'])\n" +
				"print((await mcp_servers['mem'].call('echo', message='b'))['args'])\n" +
				"print(mcp_servers['mem'].call_sync('get-sum')['tool'])\n" +
				"print(mcp_mem.name, mcp_mem.alias, repr(mcp_mem))\n" +
				"print(hasattr(mcp_mem, '__await__'), 'echo' in dir(mcp_mem))",
			want: "{'message': 'a'}\nget-sum\n{'message': 'b'}\nget-sum\nmem mem <MCP server 'mem': await mcp_mem.<tool>(**args)>\nFalse True\n",
		},
		{
			name: "create_task and gather", code: "import asyncio\nt = asyncio.create_task(call_tool('mem', 'echo'))\nr = await asyncio.gather(t, mcp_mem.get_sum(), list_tools('mem'))\nprint([x['tool'] if isinstance(x, dict) else len(x) for x in r])",
			want: "['echo', 'get-sum', 2]\n",
		},
		{
			name: "sync forms inside a running loop", code: "import asyncio\nasync def f():\n    await asyncio.sleep(0)\n    return call_tool_sync('mem', 'echo')['tool'], mcp_mem.sync.echo()['tool'], len(list_tools_sync('mem'))\nprint(await f())\nprint(asyncio.run(f()) if False else 'ok')",
			want: "('echo', 'echo', 2)\nok\n",
		},
		{
			name: "sync forms in a thread", code: "import concurrent.futures as cf\nwith cf.ThreadPoolExecutor(4) as ex:\n    print(sorted(ex.map(lambda i: call_tool_sync('mem', 'echo', {'i': i})['args']['i'], range(8))))",
			want: "[0, 1, 2, 3, 4, 5, 6, 7]\n",
		},
		{
			name: "from mcp import runtime", code: "from mcp import runtime\nimport mcp\nprint(runtime.discovered_servers() == mcp.discovered_servers(), mcp.runtime is runtime, mcp.MCPError is MCPError)\nprint(runtime.call_tool_sync('mem', 'echo')['tool'], list(mcp.mcp_servers))\nimport mcp.runtime as r2\nprint(r2 is runtime)",
			want: "True True True\necho ['every-thing', 'mem']\nTrue\n",
		},
		{
			name: "from mcp.servers import", code: "from mcp.servers.every_thing import *\nprint(sorted(t['name'] for t in TOOLS))\nprint((await echo(message='x'))['args'], get_sum.sync(a=1, b=2)['tool'])\nimport inspect\nprint(inspect.signature(echo), echo.__doc__)\nfrom mcp.servers import mem\nprint(mem.SERVER['name'], mem.echo.__module__)",
			want: "['echo', 'get-sum']\n{'message': 'x'} get-sum\n(*, message: str = None) -> Any Echoes a message.\nmem mcp.servers.mem\n",
		},
		{
			name: "unknown server module", code: "try:\n    from mcp.servers.nope import *\nexcept ImportError as e:\n    print(type(e).__name__, e)",
			want: "ModuleNotFoundError no MCP server 'nope' in this run (server aliases: every_thing, mem)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &toolHost{}
			if got := runOK(t, tt.code, h); got != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", got, tt.want)
			}
			for _, want := range tt.reqs {
				found := false
				for _, r := range h.requests {
					found = found || r == want
				}
				if !found {
					t.Errorf("request %q not seen; got %q", want, h.requests)
				}
			}
		})
	}
}

func TestHostErrors(t *testing.T) {
	tests := []struct {
		name string
		code string
		want string
	}{
		{"unknown server", "call_tool_sync('nope', 'echo')", `unknown_server|no server "nope"|{'suggestions': ['every-thing']}`},
		{"unknown tool async", "await mcp_mem.ech(message='x')", `unknown_tool|no tool "ech"|{'suggestions': ['echo']}`},
		{"describe unknown", "describe_server('x')", `unknown_server|no server "x"|{'suggestions': ['every-thing']}`},
		{"query docs unknown tool", "await query_tool_docs('mem', 'zzz')", `unknown_tool|no tool "zzz"|{'suggestions': ['echo']}`},
		{"plain Go error is internal", "call_tool_sync('mem', 'fail-plain')", `internal|disk on fire|None`},
		{"coded error without data", "call_tool_sync('mem', 'fail-timeout')", `timeout|calling: tool timed out after 30s|None`}, // the Go error's text, verbatim,
		{"server failed", "call_tool_sync('mem', 'fail-server')", `server_failed|server "mem" exited|{'stderr': 'boom'}`},
		{"tool error", "call_tool_sync('mem', 'tool-error')", `tool_error|bad input: x|{'content': [{'type': 'text', 'text': 'bad input: x'}], 'isError': True}`},
		{"unserializable result", "call_tool_sync('mem', 'unmarshalable')", `internal|encoding the result: json: unsupported type: chan int|None`},
		{"unserializable arguments", "call_tool_sync('mem', 'echo', {'x': object()})", `bad_arguments|arguments are not JSON-serializable: Object of type object is not JSON serializable|None`},
		{"arguments not a dict", "call_tool_sync('mem', 'echo', [1])", `bad_arguments|arguments must be a dict, not list|None`},
	}
	h := &toolHost{call: func(ctx context.Context, tool string, args map[string]any) (any, error) {
		switch tool {
		case "fail-plain":
			return nil, errors.New("disk on fire")
		case "fail-timeout":
			return nil, fmt.Errorf("calling: %w", &protocol.Error{Code: "timeout", Message: "tool timed out after 30s"})
		case "fail-server":
			return nil, &protocol.Error{Code: "server_failed", Message: `server "mem" exited`, Data: map[string]string{"stderr": "boom"}}
		case "tool-error":
			return json.RawMessage(`{"content":[{"type":"text","text":"bad input: x"}],"isError":true}`), nil
		case "unmarshalable":
			return make(chan int), nil
		}
		_, err := resolveTool(tool)
		return map[string]any{"structuredContent": map[string]any{}}, err
	}}
	var code strings.Builder
	for i, tt := range tests {
		fmt.Fprintf(&code, "try:\n    %s\n    print('%d no error')\nexcept MCPError as e:\n    print('%d', '|'.join(map(str, [e.code, e, e.data])))\n", tt.code, i, i)
	}
	out := runOK(t, code.String(), h)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(tests) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tests), out)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if want := strconv.Itoa(i) + " " + tt.want; lines[i] != want {
				t.Errorf("got  %s\nwant %s", lines[i], want)
			}
		})
	}

	t.Run("uncaught", func(t *testing.T) {
		res, err := run(t, Program{Code: "x = 1\ncall_tool_sync('nope', 'echo')", Servers: testServers}, &toolHost{})
		if err != nil {
			t.Fatal(err)
		}
		f := res.Error
		if f == nil || f.Kind != protocol.FailException || f.Type != "MCPError" || f.Message != `no server "nope"` ||
			!strings.Contains(f.Traceback, `File "<run_python #1>", line 2`) || strings.Contains(f.Traceback, "codebridge") {
			t.Errorf("failure = %+v", f)
		}
	})
}

func TestCallResultConversion(t *testing.T) {
	results := map[string]string{
		"structured":   `{"content":[{"type":"text","text":"{\"a\": 1}"}],"structuredContent":{"b":2}}`,
		"json-text":    `{"content":[{"type":"text","text":"{\"a\": [1, 2]}"}]}`,
		"plain-text":   `{"content":[{"type":"text","text":"hello world"}]}`,
		"number-text":  `{"content":[{"type":"text","text":"42"}]}`,
		"image":        `{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
		"resource":     `{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"x"}}]}`,
		"link":         `{"content":[{"type":"resource_link","uri":"file:///b","name":"b"}]}`,
		"several":      `{"content":[{"type":"text","text":"one"},{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}`,
		"empty":        `{"content":[]}`,
		"error-no-txt": `{"content":[],"isError":true}`,
	}
	h := &toolHost{call: func(ctx context.Context, tool string, args map[string]any) (any, error) {
		return json.RawMessage(results[tool]), nil
	}}
	tests := []struct{ tool, want string }{
		{"structured", "{'b': 2}"},
		{"json-text", "{'a': [1, 2]}"},
		{"plain-text", "'hello world'"},
		{"number-text", "42"},
		{"image", "{'type': 'image', 'data': 'aGk=', 'mimeType': 'image/png'}"},
		{"resource", "{'type': 'resource', 'resource': {'uri': 'file:///a', 'text': 'x'}}"},
		{"link", "{'type': 'resource_link', 'uri': 'file:///b', 'name': 'b'}"},
		{"several", "['one', {'type': 'audio', 'data': 'AA==', 'mimeType': 'audio/wav'}]"},
		{"empty", "None"},
		{"error-no-txt", "MCPError tool_error the tool reported an error"},
	}
	var code strings.Builder
	for _, tt := range tests {
		fmt.Fprintf(&code, "try:\n    print(repr(call_tool_sync('mem', %q)))\nexcept MCPError as e:\n    print('MCPError', e.code, e)\n", tt.tool)
	}
	code.WriteString("print(call_tool_sync('mem', 'plain-text', raw=True))\n")
	out := runOK(t, code.String(), h)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(tests)+1 {
		t.Fatalf("got %d lines:\n%s", len(lines), out)
	}
	for i, tt := range tests {
		if lines[i] != tt.want {
			t.Errorf("%s: got %s, want %s", tt.tool, lines[i], tt.want)
		}
	}
	if want := "{'content': [{'type': 'text', 'text': 'hello world'}]}"; lines[len(tests)] != want {
		t.Errorf("raw: got %s, want %s", lines[len(tests)], want)
	}
}

func TestGatherIsConcurrent(t *testing.T) {
	// Each call answers only once all three are at the host at once, so the
	// run completes only if asyncio.gather sends them concurrently; calls
	// sent one after another would each wait for the others in vain.
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	h := &toolHost{call: func(ctx context.Context, tool string, args map[string]any) (any, error) {
		arrived.Done()
		select {
		case <-all:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return nil, errors.New("the other calls never arrived: asyncio.gather did not send them concurrently")
		}
		return map[string]any{"structuredContent": args}, nil
	}}
	out := runOK(t, `import asyncio
r = await asyncio.gather(mcp_mem.slow(i=1), call_tool("mem", "slow", {"i": 2}), mcp_servers["mem"].call("slow", i=3))
print(r)`, h)
	if out != "[{'i': 1}, {'i': 2}, {'i': 3}]\n" {
		t.Errorf("output %q", out)
	}
}

func TestLargePayloads(t *testing.T) {
	const size = 2 << 20
	var got int
	h := &toolHost{call: func(ctx context.Context, tool string, args map[string]any) (any, error) {
		blob, _ := args["blob"].(string)
		got = len(blob)
		// Return a different 2 MB string, built from the one received.
		return map[string]any{"structuredContent": map[string]any{"blob": "É" + strings.TrimPrefix(blob, "é"), "n": len(blob)}}, nil
	}}
	out := runOK(t, fmt.Sprintf(`blob = "é" + "x" * (%d - 2)
r = await call_tool("mem", "big", {"blob": blob})
print(r["n"], len(r["blob"]), r["blob"] == "É" + blob[1:])
r = mcp_mem.sync.big(blob=blob)
print(r["n"])`, size), h)
	if want := fmt.Sprintf("%d %d True\n%d\n", size, size-1, size); out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if got != size { // Go counts bytes (é is two), Python characters
		t.Errorf("host received %d bytes, want %d", got, size)
	}
}

// TestCheckToolsReferences: check_tools sends each way of naming a tool as
// a server and a tool, splitting "server.tool" after a known server name
// or alias even when the name has dots of its own.
func TestCheckToolsReferences(t *testing.T) {
	out := runOK(t, `import json
r = await check_tools(["every-thing.echo", "every_thing.a.b", ("mem", "x"), {"server": "mem"}, "mem", "other.t.u"])
print(json.dumps([[c["server"], c.get("tool", ""), c["status"]] for c in r]))
print(check_tools_sync("mem.echo")[0]["tool"])
try:
    check_tools_sync([3])
except MCPError as e:
    print(e.code)`, &toolHost{})
	want := `[["every-thing", "echo", "ready"], ["every_thing", "a.b", "ready"], ["mem", "x", "ready"], ["mem", "", "ready"], ["mem", "", "ready"], ["other", "t.u", "ready"]]
echo
bad_arguments
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestCapabilitySummaryNamesExist(t *testing.T) {
	out := runOK(t, `import json
s = capability_summary()
g = globals()
print(json.dumps({"summary": s, "callable": sorted(k for k, v in g.items() if callable(v)), "globals": sorted(g)}))`, &toolHost{})
	var got struct {
		Summary  string   `json:"summary"`
		Callable []string `json:"callable"`
		Globals  []string `json:"globals"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)(?:^\s*|/\s*)([a-z_]+)\(`)
	named := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(got.Summary, -1) {
		named[m[1]] = true
	}
	want := []string{
		"call_tool", "call_tool_sync", "capability_summary", "check_tools", "check_tools_sync", "delete_memory", "describe_server", "discovered_servers",
		"get_prompt", "get_prompt_sync", "list_loaded_server_metadata", "list_prompts", "list_prompts_sync",
		"list_resource_templates", "list_resource_templates_sync", "list_resources", "list_resources_sync",
		"list_saved_tools", "list_servers", "list_servers_sync", "list_tools", "list_tools_sync",
		"query_tool_docs", "query_tool_docs_sync", "read_resource", "read_resource_sync", "return_file", "save_memory", "save_tool",
		"search_tool_docs", "search_tool_docs_sync", "show_image",
	}
	var names []string
	for n := range named {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("summary names functions %q, want %q", names, want)
	}
	callable := map[string]bool{}
	for _, n := range got.Callable {
		callable[n] = true
	}
	for _, n := range append(want, "MCPError") {
		if !callable[n] {
			t.Errorf("%s is named in capability_summary() but is not a callable global", n)
		}
	}
	globals := strings.Join(got.Globals, " ") + " "
	for _, n := range []string{"runtime", "mcp_servers", "mcp_every_thing", "mcp_mem", "MCPError"} {
		if !strings.Contains(globals, n+" ") {
			t.Errorf("global %s missing from %q", n, got.Globals)
		}
	}
}

// TestRPCOverhead measures sequential request round trips over local pipes.
func TestRPCOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	h := &toolHost{call: func(ctx context.Context, tool string, args map[string]any) (any, error) {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}, nil
	}}
	out := runOK(t, `import time
call_tool_sync("mem", "noop")
t0 = time.perf_counter()
for i in range(1000):
    call_tool_sync("mem", "noop", {"i": i})
sync_s = time.perf_counter() - t0
t0 = time.perf_counter()
for i in range(1000):
    await call_tool("mem", "noop", {"i": i})
async_s = time.perf_counter() - t0
print(sync_s, async_s)`, h)
	var syncS, asyncS float64
	if _, err := fmt.Sscan(out, &syncS, &asyncS); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	t.Logf("1000 sequential call_tool round trips: sync %.0f µs/call, await %.0f µs/call", syncS*1e3, asyncS*1e3)
}

// TestRequestSendFails: a request whose frame cannot be sent fails at once
// with MCPError instead of leaving its future pending for ever.
func TestRequestSendFails(t *testing.T) {
	out := runOK(t, `
import mcp
ch = mcp._channel.channel
real = ch.send
def broken(kind, payload):
    if kind == b"Q":
        raise ValueError("cannot send")
    return real(kind, payload)
ch.send = broken
try:
    call_tool_sync("mem", "echo", {"message": "x"})
except MCPError as e:
    print(e.code, e.message)
try:
    await call_tool("mem", "echo", {"message": "x"})
except MCPError as e:
    print(e.code, e.message)
ch.send = real
print(len(ch._pending), call_tool_sync("mem", "echo", {"message": "ok"})["args"])
`, &toolHost{})
	want := "internal sending request: cannot send\ninternal sending request: cannot send\n0 {'message': 'ok'}\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// TestRequestOverFrameLimit: a request bigger than the host reads is refused
// in the sandbox with bad_arguments, and the interpreter lives on (the host
// would otherwise end it for breaking the protocol).
func TestRequestOverFrameLimit(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{MaxRequest: 4096})
	res, err := it.Run(t.Context(), Program{Code: `
try:
    call_tool_sync("mem", "echo", {"message": "x" * 5000})
except MCPError as e:
    print(e.code, "MCP_BRIDGE_MAX_ARGUMENT_SIZE" in e.message)
print(call_tool_sync("mem", "echo", {"message": "small"})["args"])`, Servers: testServers}, &toolHost{}, time.Minute)
	if err != nil || res.Stdout != "bad_arguments True\n{'message': 'small'}\n" {
		t.Errorf("run = %q %+v %v", res.Stdout, res.Error, err)
	}
}

// attachHost records the sandbox's attach requests and answers too_large for
// those sent without data, as the bridge does.
type attachHost struct {
	toolHost
	mu  sync.Mutex
	got []protocol.AttachParams
}

func (h *attachHost) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != protocol.MethodAttach {
		return h.toolHost.Call(ctx, method, params)
	}
	var p protocol.AttachParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.got = append(h.got, p)
	h.mu.Unlock()
	if p.Data == nil {
		return nil, &protocol.Error{Code: "too_large", Message: fmt.Sprintf("%s %q is over the limit", p.Kind, p.Name)}
	}
	return nil, nil
}

// TestAttachHelpers: show_image and return_file send what they are given,
// sniff image types, send only the size of what is over the limit per
// attachment, and refuse what is not an image. matplotlib is not needed.
func TestAttachHelpers(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{MaxAttachment: 64})
	defer it.Close()
	h := &attachHost{}
	res, err := it.Run(t.Context(), Program{Code: `
png = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
show_image(png)
show_image(b"\xff\xd8\xff\xe0" + b"\0" * 4, name="photo.jpg")
import os, tempfile
with open(os.path.join(tempfile.mkdtemp(), "cb-attach.csv"), "w") as f:
    f.write("a,b\n1,2\n")
return_file(f.name)
with open(f.name + ".big", "wb") as g:
    g.write(b"x" * 100)
try:
    return_file(g.name, mime_type="application/x-test")
except MCPError as e:
    print("big file:", e.code)
try:
    show_image(b"not an image")
except MCPError as e:
    print("text:", e.code, "mime_type=" in e.message)
try:
    show_image(3)
except MCPError as e:
    print("int:", e.code)
from mcp import runtime
print(runtime.show_image is show_image, "return_file" in runtime.__all__)
`, Servers: testServers, OutputLimit: 1 << 20}, h, time.Minute)
	if err != nil || res.Error != nil {
		t.Fatalf("run: %v %+v\n%s", err, res.Error, res.Stderr)
	}
	if want := "big file: too_large\ntext: bad_arguments True\nint: bad_arguments\nTrue True\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
	want := []protocol.AttachParams{
		{Kind: "image", Name: "image", MIMEType: "image/png", Bytes: 16},
		{Kind: "image", Name: "photo.jpg", MIMEType: "image/jpeg", Bytes: 8},
		{Kind: "file", Name: "cb-attach.csv", MIMEType: "text/csv", Bytes: 8},
		{Kind: "file", Name: "cb-attach.csv.big", MIMEType: "application/x-test", Bytes: 100},
	}
	if len(h.got) != len(want) {
		t.Fatalf("attach requests %+v, want %d", h.got, len(want))
	}
	for i, w := range want {
		g := h.got[i]
		if g.Kind != w.Kind || g.Name != w.Name || g.MIMEType != w.MIMEType || g.Bytes != w.Bytes {
			t.Errorf("attach %d: %+v, want %+v", i, g, w)
		}
		if sent := g.Data != nil; sent != (w.Bytes <= 64) || (sent && len(g.Data) != w.Bytes) {
			t.Errorf("attach %d: %d bytes of data sent for %d bytes (limit 64)", i, len(g.Data), w.Bytes)
		}
	}
	if string(h.got[2].Data) != "a,b\n1,2\n" {
		t.Errorf("CSV data %q", h.got[2].Data)
	}
}

// downHost is a bridge whose server "mem" fails to start: a docs request, or
// a call not told that the docs just failed, is a start that fails.
type downHost struct {
	toolHost
	starts atomic.Int32
}

func (h *downHost) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != "query_tool_docs" && method != "call_tool" {
		return h.toolHost.Call(ctx, method, params)
	}
	h.record(method, params)
	var p protocol.CallToolParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if !p.StartFailed {
		h.starts.Add(1)
	}
	return nil, &protocol.Error{Code: "server_failed", Message: fmt.Sprintf("MCP server \"mem\" failed to start (attempt %d)", h.starts.Load())}
}

// TestCallToDownServerStartsItOnce: the docs a call fetches for its argument
// check fail to start the server, and the call then tells the host so, which
// fails it with that start's error rather than starting the server again; a
// later call tries again.
func TestCallToDownServerStartsItOnce(t *testing.T) {
	h := &downHost{}
	out := runOK(t, `
for attempt in range(2):
    try:
        await mcp_mem.echo(message="x")
    except MCPError as e:
        print(e.code, e)
`, h)
	want := "server_failed MCP server \"mem\" failed to start (attempt 1)\nserver_failed MCP server \"mem\" failed to start (attempt 2)\n"
	if out != want {
		t.Errorf("printed %q; want %q (%q)", out, want, h.requests)
	}
	calls := 0
	for _, r := range h.requests {
		if strings.HasPrefix(r, "call_tool ") {
			calls++
			if !strings.Contains(r, `"start_failed": true`) {
				t.Errorf("a call after failed docs does not say so: %s", r)
			}
		}
	}
	if calls != 2 {
		t.Errorf("%d call_tool requests, want 2 (each call reaches the host, for its audit): %q", calls, h.requests)
	}
}
