package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

type sumArgs struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type echoArgs struct {
	Message string `json:"message"`
	Repeat  int    `json:"repeat,omitempty"`
}

// mathServer is a go-sdk MCP server served over streamable HTTP on loopback.
func mathServer(t *testing.T) string {
	t.Helper()
	return mathServerAcked(t, nil)
}

// mathServerAcked is mathServer whose slow_count, after each progress
// notification, waits for a receive on acks (if acks is not nil): the test
// acknowledges each notification it has seen, so all of them are handled
// before the result.
func mathServerAcked(t *testing.T, acks <-chan struct{}) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "math"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get-sum", Description: "Returns the sum of two numbers\nMore detail here."},
		func(_ context.Context, _ *mcp.CallToolRequest, a sumArgs) (*mcp.CallToolResult, map[string]float64, error) {
			return nil, map[string]float64{"sum": a.A + a.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes back the input"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat(a.Message, max(1, a.Repeat))}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow_count", Description: "Counts to three, reporting progress"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= 3; i++ {
				tok := req.Params.GetProgressToken()
				if tok == nil {
					continue
				}
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
				if acks == nil {
					continue
				}
				select {
				case <-acks:
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	// A server that rejects arguments with a JSON-RPC error, as some SDKs do.
	s.AddTool(&mcp.Tool{Name: "strict", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "x must be a number"}
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func testDirectory(t *testing.T, servers ...*discovery.Server) *Directory {
	t.Helper()
	return tracedDirectory(t, nil, servers...)
}

// Call answers a request as the run's host does, through the protocol's
// dispatch table.
func (h *host) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return protocol.Dispatch(ctx, h, method, params)
}

func hostCall(t *testing.T, h interface {
	Call(context.Context, string, json.RawMessage) (any, error)
}, method string, params map[string]any) (any, error) {
	t.Helper()
	raw, _ := json.Marshal(params)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := h.Call(ctx, method, raw)
	if err != nil {
		return nil, err
	}
	// Round-trip through JSON, as the sandbox sees it.
	out, _ := json.Marshal(res)
	var v any
	json.Unmarshal(out, &v)
	return v, nil
}

func TestHostDocsAndCalls(t *testing.T) {
	url := mathServer(t)
	d := testDirectory(t,
		&discovery.Server{Name: "my-math", Transport: discovery.Streamable, URL: url, Description: "numbers"},
		&discovery.Server{Name: "off", Transport: discovery.Streamable, URL: url, Disabled: true},
	)
	if got, _ := d.Prepare(t.Context(), nil); len(got) != 1 || got[0].Name != "my-math" || got[0].Alias != "my_math" {
		t.Fatalf("Visible = %+v, want only my-math aliased my_math (disabled servers are hidden)", got)
	}
	h := d.host(Run{})

	t.Run("describe_server by alias", func(t *testing.T) {
		v, err := hostCall(t, h, "describe_server", map[string]any{"server": "my_math"})
		if err != nil {
			t.Fatal(err)
		}
		m := v.(map[string]any)
		tools := m["tools"].([]any)
		if m["name"] != "my-math" || len(tools) != 4 {
			t.Fatalf("describe_server = %v", m)
		}
		first := tools[0].(map[string]any)
		if first["alias"] == nil || first["description"] == nil {
			t.Errorf("tool entry %v lacks alias/description", first)
		}
	})

	t.Run("query_tool_docs full", func(t *testing.T) {
		v, err := hostCall(t, h, "query_tool_docs", map[string]any{"server": "my-math", "tool": "get_sum", "detail": "full"})
		if err != nil {
			t.Fatal(err)
		}
		doc := v.([]any)[0].(map[string]any)
		if doc["signature"] != "get_sum(*, a: float, b: float) -> dict[str, float]" {
			t.Errorf("signature = %v", doc["signature"])
		}
		if doc["inputSchema"] == nil || doc["outputSchema"] == nil || doc["toolAlias"] != "get_sum" || doc["serverAlias"] != "my_math" {
			t.Errorf("full doc = %v", doc)
		}
		if !strings.Contains(doc["description"].(string), "More detail") {
			t.Errorf("full description should be complete: %q", doc["description"])
		}
	})

	t.Run("query_tool_docs summary", func(t *testing.T) {
		v, err := hostCall(t, h, "query_tool_docs", map[string]any{"server": "my-math", "detail": "summary"})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v.([]any) {
			doc := x.(map[string]any)
			if doc["inputSchema"] != nil || strings.Contains(doc["description"].(string), "\n") {
				t.Errorf("summary doc carries schema or a multi-line description: %v", doc)
			}
		}
	})

	t.Run("search", func(t *testing.T) {
		v, err := hostCall(t, h, "search_tool_docs", map[string]any{"query": "sum of two numbers", "limit": 2})
		if err != nil {
			t.Fatal(err)
		}
		hits := v.(map[string]any)["results"].([]any)
		if len(hits) == 0 || hits[0].(map[string]any)["tool"] != "get-sum" || hits[0].(map[string]any)["score"].(float64) <= 0 {
			t.Fatalf("search = %v, want get-sum first with a score", hits)
		}
	})

	t.Run("call_tool", func(t *testing.T) {
		v, err := hostCall(t, h, "call_tool", map[string]any{"server": "my_math", "tool": "get_sum", "arguments": map[string]any{"a": 2, "b": 3}})
		if err != nil {
			t.Fatal(err)
		}
		if sc := v.(map[string]any)["structuredContent"].(map[string]any); sc["sum"] != 5.0 {
			t.Errorf("structuredContent = %v", sc)
		}
	})

	errCases := []struct {
		name, method string
		params       map[string]any
		code, text   string
	}{
		{"unknown server", "list_tools", map[string]any{"server": "my-maht"}, "unknown_server", `did you mean "my-math"`},
		{"disabled server is named", "list_tools", map[string]any{"server": "off"}, "unknown_server", `MCP server "off" is disabled ("disabled": true)`},
		{"unknown tool", "call_tool", map[string]any{"server": "my-math", "tool": "get_summ"}, "unknown_tool", `did you mean "get-sum"`},
		{"arguments not a dict", "call_tool", map[string]any{"server": "my-math", "tool": "echo", "arguments": []int{1}}, "bad_arguments", "must be a dict"},
		{"arguments of the wrong type", "call_tool", map[string]any{"server": "my-math", "tool": "strict", "arguments": map[string]any{"x": "two"}}, "bad_arguments", "x must be a number. query_tool_docs(\"my-math\", \"strict\", detail=\"full\")"},
		{"empty query", "search_tool_docs", map[string]any{"query": " "}, "bad_arguments", "needs a query"},
	}
	for _, tt := range errCases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hostCall(t, h, tt.method, tt.params)
			var re *protocol.Error
			if !errors.As(err, &re) || string(re.RPCCode()) != tt.code || !strings.Contains(re.Error(), tt.text) {
				t.Fatalf("err = %v, want code %s containing %q", err, tt.code, tt.text)
			}
		})
	}
}

func TestHostProgress(t *testing.T) {
	acks := make(chan struct{}, 3)
	d := testDirectory(t, &discovery.Server{Name: "m", Transport: discovery.Streamable, URL: mathServerAcked(t, acks)})
	var mu sync.Mutex
	var msgs []string
	h := d.host(Run{Progress: func(msg string, _, _ float64) {
		mu.Lock()
		msgs = append(msgs, msg)
		mu.Unlock()
		acks <- struct{}{} // the tool goes on once its notification has been seen
	}})
	if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "m", "tool": "slow_count"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"m.slow_count 1/3: step 1", "m.slow_count 2/3: step 2", "m.slow_count 3/3: step 3"}
	if !slices.Equal(msgs, want) {
		t.Errorf("progress = %q, want %q", msgs, want)
	}
}

func TestPrepareUnknown(t *testing.T) {
	d := testDirectory(t, &discovery.Server{Name: "alpha", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"})
	_, err := d.Prepare(t.Context(), []string{"alpah"})
	if err == nil || !strings.Contains(err.Error(), `did you mean "alpha"`) {
		t.Fatalf("Prepare = %v, want a suggestion", err)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"get-sum", "get-env", "echo", "trigger-long-running-operation"}
	if got := closest("get_sum", names, 3); len(got) == 0 || got[0] != "get-sum" {
		t.Errorf("closest(get_sum) = %v", got)
	}
	if got := closest("zzzzzzzz", names, 3); len(got) != 0 {
		t.Errorf("closest(zzzzzzzz) = %v, want none", got)
	}
}

func TestSearchReportsServersThatFail(t *testing.T) {
	d := testDirectory(t,
		&discovery.Server{Name: "math", Transport: discovery.Streamable, URL: mathServer(t)},
		&discovery.Server{Name: "down", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"},
	)
	v, err := hostCall(t, d.host(Run{}), "search_tool_docs", map[string]any{"query": "echo the input"})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	hits, unavailable := m["results"].([]any), m["unavailable"].([]any)
	if len(hits) == 0 || hits[0].(map[string]any)["tool"] != "echo" {
		t.Errorf("results = %v, want echo first: one failing server must not spoil the search", hits)
	}
	if len(unavailable) != 1 || unavailable[0].(map[string]any)["server"] != "down" || unavailable[0].(map[string]any)["error"] == "" {
		t.Errorf("unavailable = %v, want the failing server named with its error", unavailable)
	}
}

// recordingPool is a downstream with one server whose one tool, echo, answers
// every call and records the size of its arguments. It has no resources or
// prompts.
type recordingPool struct {
	noCatalog
	mu    sync.Mutex
	calls []int // size of each call's arguments in bytes
}

func (f *recordingPool) Tools(context.Context, string) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (f *recordingPool) CallFor(_ context.Context, _ pool.Peer, _, _ string, args any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	raw, _ := args.(json.RawMessage)
	f.mu.Lock()
	f.calls = append(f.calls, len(raw))
	f.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

func (f *recordingPool) Running(string) bool             { return true }
func (f *recordingPool) LastFailure(string) error        { return nil }
func (f *recordingPool) AccessToken(string) secret.Value { return secret.Value{} }

func (f *recordingPool) callSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func TestCallToolArgumentLimit(t *testing.T) {
	fp := &recordingPool{}
	d := newDirectory(fp, 1000, nil)
	d.setting = envName
	d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "big", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"}}})
	h := d.host(Run{})

	// {"message":"..."} is 14 bytes around the message.
	if _, err := hostCall(t, h, "call_tool", map[string]any{"server": "big", "tool": "echo", "arguments": map[string]any{"message": strings.Repeat("x", 1000-14)}}); err != nil {
		t.Fatalf("arguments of exactly the limit: %v", err)
	}
	_, err := hostCall(t, h, "call_tool", map[string]any{"server": "big", "tool": "echo", "arguments": map[string]any{"message": strings.Repeat("x", 1000-13)}})
	var re *protocol.Error
	if !errors.As(err, &re) || re.RPCCode() != "bad_arguments" {
		t.Fatalf("arguments one byte over the limit: err = %v, want code bad_arguments", err)
	}
	for _, want := range []string{"big.echo", "1001 bytes", "1000 byte limit", "MCP_BRIDGE_MAX_ARGUMENT_SIZE", "file"} {
		if !strings.Contains(re.Error(), want) {
			t.Errorf("message %q does not mention %q", re.Error(), want)
		}
	}
	if got := fp.callSizes(); !slices.Equal(got, []int{1000}) {
		t.Errorf("calls that reached the server have argument sizes %v, want only [1000]", got)
	}
}

// TestPrepareServerFailsToStart: a server named in run_python's servers that
// cannot start is logged and left for the run's first call to report.
func TestPrepareServerFailsToStart(t *testing.T) {
	d := testDirectory(t, &discovery.Server{Name: "down", Transport: discovery.Streamable, URL: "http://127.0.0.1:1/mcp"})
	infos, err := d.Prepare(t.Context(), []string{"down"})
	if err != nil || len(infos) != 1 || !infos[0].Loaded || len(infos[0].Tools) != 0 {
		t.Fatalf("Prepare = %+v, %v; want down marked loaded, without tools, and no error", infos, err)
	}
}

// TestUnusableServerNamed: a server whose definition is invalid, or that is
// disabled, is named as such when code asks for it, with the file and the
// reason, not reported as unknown.
func TestUnusableServerNamed(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(cfgFile, []byte(`{"mcpServers": {
  "good": {"command": "true"},
  "bad": {"command": 5},
  "off": {"command": "true", "disabled": true}
}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := newSnapshot(discovery.Load(dir, nil, discovery.Options{}), discovery.ToolPolicy{})
	if _, err := snap.resolve("good"); err != nil {
		t.Fatalf("good: %v", err)
	}
	for key, want := range map[string][]string{
		"bad":   {`the definition of MCP server "bad" is invalid`, cfgFile + ":3:", `"command"`, "no restart"},
		"off":   {`MCP server "off" is disabled in ` + cfgFile, `"disabled": true`},
		"other": {`unknown MCP server "other"`},
	} {
		_, err := snap.resolve(key)
		var rpc *protocol.Error
		if !errors.As(err, &rpc) || rpc.Code != "unknown_server" {
			t.Errorf("%s: %v, want unknown_server", key, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(rpc.Message, w) {
				t.Errorf("%s: %q does not say %q", key, rpc.Message, w)
			}
		}
	}
}
