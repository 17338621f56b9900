package python

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// checkServers are the servers of the argument check's tests: db answers
// docs and records its calls; down fails to start.
var checkServers = []protocol.ServerInfo{
	{Name: "db", Alias: "db"},
	{Name: "down", Alias: "down"},
}

// checkTools are db's tools as query_tool_docs(detail="full") documents them.
var checkTools = map[string]map[string]any{
	"query": {
		"server": "db", "serverAlias": "db", "tool": "query", "toolAlias": "query", "name": "query", "alias": "query",
		"inputSchema": map[string]any{"type": "object", "required": []string{"sql"}, "properties": map[string]any{
			"sql":    map[string]any{"type": "string"},
			"limit":  map[string]any{"type": "integer", "default": 10},
			"mode":   map[string]any{"type": "string", "enum": []string{"fast", "full"}},
			"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"filter": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/Filter"}, map[string]any{"type": "null"}}},
			"class":  map[string]any{"type": "string"},
		}, "$defs": map[string]any{"Filter": map[string]any{"type": "object", "properties": map[string]any{
			"status": map[string]any{"enum": []string{"open", "closed"}}}}}},
		"signature": `query(*, sql: str, limit: int = 10, mode: Literal["fast", "full"] | None = None, tags: list[str] | None = None, filter: Filter | None = None, class_: str | None = None) -> Any`,
		"params": []protocol.Param{
			{Name: "sql", Alias: "sql", Type: "str", Required: true}, {Name: "limit", Alias: "limit", Type: "int"},
			{Name: "mode", Alias: "mode", Type: `Literal["fast", "full"] | None`}, {Name: "tags", Alias: "tags", Type: "list[str] | None"},
			{Name: "filter", Alias: "filter", Type: "Filter | None"}, {Name: "class", Alias: "class_", Type: "str | None"}},
	},
	"note": {
		"server": "db", "serverAlias": "db", "tool": "note", "toolAlias": "note", "name": "note", "alias": "note",
		"inputSchema": map[string]any{"type": "object", "required": []string{"text"}, "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		"signature":   "note(*, text: str) -> Any",
		"params":      []protocol.Param{{Name: "text", Alias: "text", Type: "str", Required: true}},
	},
}

// checkHost answers the docs of checkTools and records the tools called.
type checkHost struct {
	mu    sync.Mutex // protects calls and docs
	calls []string   // tools called, in order
	docs  int        // query_tool_docs requests
	// gate, if set, is called by each query_tool_docs request before it is
	// answered.
	gate func(ctx context.Context) error
}

func (h *checkHost) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		Server string  `json:"server"`
		Tool   *string `json:"tool"`
	}
	if err := json.Unmarshal(params, &p); err == nil && method == protocol.MethodListTools && p.Server == "db" {
		return []any{checkTools["note"], checkTools["query"]}, nil
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Tool == nil {
		return nil, &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf("%s %s: want a server and a tool", method, params)}
	}
	if p.Server == "down" {
		return nil, &protocol.Error{Code: protocol.CodeServerFailed, Message: "server down did not start"}
	}
	t, ok := checkTools[*p.Tool]
	if !ok {
		return nil, &protocol.Error{Code: protocol.CodeUnknownTool, Message: fmt.Sprintf("MCP server db has no tool %q; did you mean \"query\"?", *p.Tool)}
	}
	switch method {
	case protocol.MethodQueryToolDocs:
		h.mu.Lock()
		h.docs++
		h.mu.Unlock()
		if h.gate != nil {
			if err := h.gate(ctx); err != nil {
				return nil, err
			}
		}
		return []any{t}, nil
	case protocol.MethodCallTool:
		h.mu.Lock()
		h.calls = append(h.calls, *p.Tool)
		h.mu.Unlock()
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}, nil
	}
	return nil, &protocol.Error{Code: protocol.CodeInternal, Message: "unexpected " + method}
}

// TestArgumentCheck runs code whose tool calls do or do not match db's
// schemas, with the check on: a mismatch fails the run before its first
// line (whose print and note call would show), naming the line, the
// argument and the signature; what the check cannot see runs.
func TestArgumentCheck(t *testing.T) {
	const first = "print('side effect')\nmcp_db.sync.note(text='first')\n"
	for _, tt := range []struct {
		name  string
		code  string
		want  []string // in the failure's message; none: the run must succeed
		calls []string // tools called
		out   string   // stdout, when the run succeeds
	}{
		{name: "typo in a name", code: first + "mcp_db.sync.query(sql='x', limt=5)",
			want: []string{`line 3: mcp_db.sync.query(limt=5): no argument "limt"; did you mean "limit"?`, "signature: query(*, sql: str, limit: int = 10"}},
		{name: "string for an integer", code: first + "await mcp_db.query(sql='x', limit='5')",
			want: []string{`line 3: mcp_db.query(limit='5'): "limit" is str '5'; the tool wants int (integer)`, "signature: query(*, sql: str"}},
		{name: "bool is no integer", code: first + "mcp_db.sync.query(sql='x', limit=True)",
			want: []string{`"limit" is bool True; the tool wants int (integer)`}},
		{name: "outside the enum", code: first + "mcp_db.sync.query(sql='x', mode='slow')",
			want: []string{`mcp_db.sync.query(mode='slow'): "mode" is str 'slow', not one of "fast", "full"`}},
		{name: "missing required", code: first + "call_tool_sync('db', 'query', {'limit': 5})",
			want: []string{`line 3: call_tool_sync("db", "query", {...}): missing the required argument "sql"`}},
		{name: "call_tool's dict", code: first + "runtime.call_tool_sync('db', 'query', {'sql': 'x', 'limit': 2.5})",
			want: []string{`runtime.call_tool_sync("db", "query", {'limit': 2.5}): "limit" is float 2.5; the tool wants int (integer)`}},
		{name: "import mcp", code: first + "import mcp\nmcp.call_tool_sync('db', 'query', {'sql': 1})",
			want: []string{`line 4: mcp.call_tool_sync("db", "query", {'sql': 1}): "sql" is int 1; the tool wants str (string)`}},
		{name: "proxy call()", code: first + "mcp_db.call_sync('query', sql='x', limit=[1])",
			want: []string{`mcp_db.call_sync("query", limit=[1]): "limit" is list [1]`}},
		{name: "mcp_servers", code: first + "mcp_servers['db'].sync.query(sql='x', limit='1')",
			want: []string{`"limit" is str '1'`}},
		{name: "an alias of a proxy", code: first + "q = mcp_db.sync\nq.query(sql=None)",
			want: []string{`line 4: q.query(sql=None): "sql" is NoneType None; the tool wants str (string)`}},
		{name: "a tool function", code: first + "from mcp.servers.db import query\nquery.sync(sql='x', tags=['a', 2])",
			want: []string{`line 4: query.sync(tags=['a', 2]): "tags" [1] is int 2; the tool wants str (string)`}},
		{name: "nested enum", code: first + "mcp_db.sync.query(sql='x', filter={'status': 'bogus'})",
			want: []string{`"filter" ["status"] is str 'bogus', not one of "open", "closed"`}},
		{name: "in no branch", code: first + "mcp_db.sync.query(sql='x', filter=3)",
			want: []string{`"filter" is int 3, which fits none of dict (object) | None (null)`}},
		{name: "unknown tool", code: first + "mcp_db.sync.qurey(sql='x')",
			want: []string{`line 3: mcp_db.sync.qurey(...): MCP server db has no tool "qurey"; did you mean "query"?`}},
		{name: "every problem", code: first + "mcp_db.sync.query(sql=1)\nmcp_db.sync.note(txt='a')",
			want: []string{`line 3: mcp_db.sync.query(sql=1)`, `line 4: mcp_db.sync.note(txt='a'): no argument "txt"; did you mean "text"?`, `line 4: mcp_db.sync.note(...): missing the required argument "text"`}},

		{name: "right calls run", code: first + "mcp_db.sync.query(sql='x', limit=5, mode='full', class_='a', filter={'status': 'open'})",
			calls: []string{"note", "query"}, out: "side effect\n"},
		{name: "a value that is no literal", code: first + "n = '5'\nmcp_db.sync.query(sql='x', limit=n)",
			calls: []string{"note", "query"}, out: "side effect\n"},
		{name: "**kwargs: no missing check", code: first + "kw = {'sql': 'x'}\nmcp_db.sync.query(limit=1, **kw)",
			calls: []string{"note", "query"}, out: "side effect\n"},
		{name: "a rebound proxy", code: first + "def f(mcp_db):\n    return mcp_db.query(sql=1)\nmcp_db = None",
			calls: []string{"note"}, out: "side effect\n"},
		{name: "a server that cannot answer", code: first + "if False:\n    mcp_down.sync.x(a=1)",
			calls: []string{"note"}, out: "side effect\n"},
		{name: "a call in a try", code: first + "try:\n    mcp_db.sync.query(sql=1)\nexcept MCPError as e:\n    print(e.code)",
			calls: []string{"note", "query"}, out: "side effect\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &checkHost{}
			res, err := run(t, Program{Code: tt.code, Servers: checkServers, CheckArgs: true}, h)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if len(tt.want) == 0 {
				if res.Error != nil {
					t.Fatalf("run failed: %+v", res.Error)
				}
				if res.Stdout != tt.out || !slices.Equal(h.calls, tt.calls) {
					t.Errorf("stdout %q, calls %q; want %q, %q", res.Stdout, h.calls, tt.out, tt.calls)
				}
				return
			}
			if res.Error == nil || res.Error.Kind != protocol.FailArgumentCheck {
				t.Fatalf("want an argument_check failure; got %+v (stdout %q)", res.Error, res.Stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Error.Message, w) {
					t.Errorf("the failure lacks %q:\n%s", w, res.Error.Message)
				}
			}
			if res.Stdout != "" || len(h.calls) > 0 || res.ExitCode != 1 {
				t.Errorf("something ran: stdout %q, calls %q, exit %d", res.Stdout, h.calls, res.ExitCode)
			}
		})
	}
}

// TestArgumentCheckOff: without CheckArgs the same run executes its first
// lines, and the bad call fails when it is made, by its own check.
func TestArgumentCheckOff(t *testing.T) {
	h := &checkHost{}
	res, err := run(t, Program{Code: "print('side effect')\nmcp_db.sync.note(text='first')\nmcp_db.sync.query(sql='x', limt=5)", Servers: checkServers}, h)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "side effect\n" || !slices.Equal(h.calls, []string{"note"}) {
		t.Errorf("stdout %q, calls %q: want the first lines run", res.Stdout, h.calls)
	}
	if res.Error == nil || res.Error.Kind != protocol.FailException || !strings.Contains(res.Error.Message, "unexpected argument 'limt'") {
		t.Errorf("want the call's own bad_arguments; got %+v", res.Error)
	}
}

// TestArgumentCheckAsksOnce: the check sends every docs request before it
// waits for a reply (the host holds each until all have come, which would
// never happen if it waited), and the calls use those docs without asking
// again.
func TestArgumentCheckAsksOnce(t *testing.T) {
	var mu sync.Mutex
	all := make(chan struct{})
	waiting := 0
	h := &checkHost{}
	h.gate = func(ctx context.Context) error {
		mu.Lock()
		if waiting++; waiting == 2 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	code := "mcp_db.sync.note(text='a')\nmcp_db.sync.query(sql='x')\nmcp_db.sync.query(sql='y')\nprint('done')"
	res, err := run(t, Program{Code: code, Servers: checkServers, CheckArgs: true}, h)
	if err != nil || res.Error != nil {
		t.Fatalf("run: %v %+v", err, res.Error)
	}
	if res.Stdout != "done\n" || h.docs != 2 || len(h.calls) != 3 {
		t.Errorf("stdout %q, %d docs requests (want 2), calls %q", res.Stdout, h.docs, h.calls)
	}
}

// TestArgumentCheckSession: names bound by an earlier run of the session
// are read from its namespace (an alias of a proxy is followed), objects
// that compare strangely do not upset the check, and problems are listed
// by line.
func TestArgumentCheckSession(t *testing.T) {
	it := startInterp(t, protocol.Init{}, Limits{})
	h := &checkHost{}
	define := "class Weird:\n    def __eq__(self, other):\n        raise ValueError('no truth')\n    def x(self, **kw):\n        pass\nw = Weird()\ngh = mcp_db\nfrom mcp.servers.db import note as jot"
	if res, err := it.Run(t.Context(), Program{Code: define, Servers: checkServers, CheckArgs: true}, h, time.Minute); err != nil || res.Error != nil {
		t.Fatalf("defining: %v %+v", err, res.Error)
	}
	code := "w.x(a=1)\nif True:\n    gh.sync.query(sql='x', limit='2')\ngh.sync.note(text=1)\njot.sync(txt='a')"
	res, err := it.Run(t.Context(), Program{Code: code, Servers: checkServers, CheckArgs: true}, h, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != protocol.FailArgumentCheck {
		t.Fatalf("want argument_check; got %+v, stderr %q", res.Error, res.Stderr)
	}
	msg := res.Error.Message
	three, four := strings.Index(msg, "line 3: gh.sync.query(limit='2')"), strings.Index(msg, "line 4: gh.sync.note(text=1)")
	five := strings.Index(msg, `line 5: jot.sync(txt='a'): no argument "txt"; did you mean "text"?`)
	if three < 0 || four < three || five < four || res.Stderr != "" || len(h.calls) > 0 {
		t.Errorf("want lines 3, 4 and 5 in order, no stderr, no calls; got %q, stderr %q, calls %q", msg, res.Stderr, h.calls)
	}
}
