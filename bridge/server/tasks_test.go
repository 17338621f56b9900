package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/bridge/tasks"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// blockRunner runs code "block" until the test releases it or its context
// ends (as the sandbox does, an interrupted run is a result, not an
// error), and any other code as askRunner does.
type blockRunner struct {
	release     chan struct{}
	interrupted atomic.Int32
}

func (*blockRunner) End(context.Context, string)    {}
func (*blockRunner) Detach(context.Context, string) {}

func (b *blockRunner) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	if req.Program.Code != "block" {
		return askRunner{}.Run(ctx, req)
	}
	select {
	case <-b.release:
		return &sandbox.Result{Result: &python.Result{Stdout: "done\n"}}, nil
	case <-ctx.Done():
		b.interrupted.Add(1)
		return &sandbox.Result{Result: &python.Result{ExitCode: -1, Error: &protocol.Failure{Kind: protocol.FailTimeout, Message: "cancelled by the client"}}}, nil
	}
}

// rawClient speaks JSON-RPC to a server in memory, as a client of MCP
// 2026-07-28 does: no initialize, every request with its _meta.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	caps map[string]any // the client capabilities each request declares
	// legacy speaks MCP 2025-11-25: capabilities once, in initialize, and
	// no _meta of the protocol's on requests.
	legacy bool
	mu     sync.Mutex // one request at a time
	next   int64
}

func connectRaw(t *testing.T, s *Server, caps map[string]any) *rawClient {
	t.Helper()
	conn, err := serveInMemory(t, s).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawClient{t: t, conn: conn, caps: caps}
}

// withTasks are the capabilities of a client of the tasks extension.
var withTasks = map[string]any{"extensions": map[string]any{tasks.Extension: map[string]any{}}}

// call sends method with params (plus the _meta of the client and meta)
// and returns the result as a map, or the error.
func (c *rawClient) call(method string, params, meta map[string]any) (map[string]any, *jsonrpc.Error) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientInfo: map[string]any{"name": "raw", "version": "1"},
		mcp.MetaKeyClientCapabilities: c.caps}
	if c.legacy {
		m = map[string]any{}
	}
	for k, v := range meta {
		m[k] = v
	}
	p := map[string]any{"_meta": m}
	for k, v := range params {
		p[k] = v
	}
	raw, _ := json.Marshal(p)
	c.next++
	id, _ := jsonrpc.MakeID(float64(c.next))
	if err := c.conn.Write(c.t.Context(), &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	for {
		msg, err := c.conn.Read(c.t.Context())
		if err != nil {
			c.t.Fatalf("%s: reading: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue
		}
		if resp.Error != nil {
			var werr *jsonrpc.Error
			if !errors.As(resp.Error, &werr) {
				c.t.Fatalf("%s: error %v", method, resp.Error)
			}
			return nil, werr
		}
		var out map[string]any
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, resp.Result, err)
		}
		return out, nil
	}
}

// must is call that fails the test on an error.
func (c *rawClient) must(method string, params, meta map[string]any) map[string]any {
	c.t.Helper()
	res, err := c.call(method, params, meta)
	if err != nil {
		c.t.Fatalf("%s: %d %s", method, err.Code, err.Message)
	}
	return res
}

// runPython calls run_python with code; asTask asks for a task at once.
func (c *rawClient) runPython(code string, asTask bool) map[string]any {
	c.t.Helper()
	var meta map[string]any
	if asTask {
		meta = map[string]any{metaTask: true}
	}
	return c.must("tools/call", map[string]any{"name": ToolName, "arguments": map[string]any{"code": code}}, meta)
}

// get is tasks/get of id.
func (c *rawClient) get(id string) map[string]any {
	c.t.Helper()
	return c.must(tasks.MethodGet, map[string]any{"taskId": id}, nil)
}

// until polls task id until its status is want, and returns it.
func (c *rawClient) until(id string, want tasks.Status) map[string]any {
	c.t.Helper()
	var got map[string]any
	testenv.Eventually(c.t, "task status "+string(want), func() bool {
		got = c.get(id)
		return got["status"] == string(want)
	})
	return got
}

func resultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

func taskServer(t *testing.T, after time.Duration) (*Server, *blockRunner) {
	t.Helper()
	cfg := bridgetest.Config(t)
	cfg.TaskAfter = after
	r := &blockRunner{release: make(chan struct{})}
	s := NewServer(testOptions(cfg, Options{Runner: r, Servers: askDirectory{}}))
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, r
}

// TestTaskAtOnceAndResult: a client of the extension that asks gets a task
// handle at once; tasks/get says working until the run ends, then carries
// the run's result; the extension is in the server's capabilities.
func TestTaskAtOnceAndResult(t *testing.T) {
	s, r := taskServer(t, 0)
	c := connectRaw(t, s, withTasks)
	disc := c.must("server/discover", nil, nil)
	if caps, _ := disc["capabilities"].(map[string]any); caps["extensions"].(map[string]any)[tasks.Extension] == nil {
		t.Errorf("server/discover: %v, want the tasks extension", disc)
	}
	created := c.runPython("block", true)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" || created["status"] != "working" || created["content"] != nil {
		t.Fatalf("the call: %v, want a task handle", created)
	}
	if got := c.get(id); got["status"] != "working" || got["resultType"] != "complete" || got["result"] != nil {
		t.Errorf("tasks/get while it runs: %v", got)
	}
	close(r.release)
	done := c.until(id, tasks.Completed)
	if resultText(done) != "done\n" {
		t.Errorf("the task's result: %v", done)
	}
	if s.Runs() != 0 {
		t.Errorf("%d runs in progress after the task completed", s.Runs())
	}
}

// TestTaskAfterThreshold: a run still going when the threshold passes
// returns a task handle; without the extension the same call waits for its
// result, and the extension's methods are refused.
func TestTaskAfterThreshold(t *testing.T) {
	s, r := taskServer(t, time.Millisecond)
	c := connectRaw(t, s, withTasks)
	created := c.runPython("block", false)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("a call past task_after: %v, want a task handle", created)
	}

	plain := connectRaw(t, s, map[string]any{})
	res := plain.runPython("confirm", true)
	if res["resultType"] == "task" || res["taskId"] != nil {
		t.Errorf("a client without the extension got a task: %v", res)
	}
	for _, m := range []string{tasks.MethodGet, tasks.MethodCancel, tasks.MethodUpdate} {
		_, err := plain.call(m, map[string]any{"taskId": id, "inputResponses": map[string]any{}}, nil)
		if err == nil || err.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(err.Data), tasks.Extension) {
			t.Errorf("%s without the extension: %v, want -32021 naming it", m, err)
		}
	}
	if _, err := c.call(tasks.MethodGet, map[string]any{"taskId": "AAAA"}, nil); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of an unknown task: %v, want -32602", err)
	}
	close(r.release)
	c.until(id, tasks.Completed)
}

// TestTaskCancel: tasks/cancel ends the run (its context, which interrupts
// the code), the task says cancelled, and cancelling it again, once it has
// ended, is acknowledged the same way.
func TestTaskCancel(t *testing.T) {
	s, r := taskServer(t, 0)
	c := connectRaw(t, s, withTasks)
	id := c.runPython("block", true)["taskId"].(string)
	for range 2 {
		ack := c.must(tasks.MethodCancel, map[string]any{"taskId": id}, nil)
		if ack["resultType"] != "complete" || ack["taskId"] != nil || ack["status"] != nil {
			t.Errorf("cancel ack: %v", ack)
		}
		got := c.until(id, tasks.Cancelled)
		if got["result"] != nil {
			t.Errorf("a cancelled task carries a result: %v", got)
		}
	}
	if n := r.interrupted.Load(); n != 1 {
		t.Errorf("%d runs interrupted, want 1", n)
	}
	if s.Runs() != 0 {
		t.Errorf("%d runs in progress after the cancel", s.Runs())
	}
}

// TestTaskQuestions: a task's run that asks shows its question in
// tasks/get (input_required), takes the answer from tasks/update, and goes
// on to its result.
func TestTaskQuestions(t *testing.T) {
	s, _ := taskServer(t, 0)
	c := connectRaw(t, s, map[string]any{"elicitation": map[string]any{}, "extensions": withTasks["extensions"]})
	id := c.runPython("confirm", true)["taskId"].(string)
	asked := c.until(id, tasks.InputRequired)
	reqs, _ := asked["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("input_required: %v, want one question", asked)
	}
	var key string
	for k, q := range reqs {
		key = k
		if q.(map[string]any)["method"] != "elicitation/create" {
			t.Errorf("question %v, want an elicitation", q)
		}
	}
	if again := c.get(id); fmt.Sprint(again["inputRequests"]) != fmt.Sprint(reqs) {
		t.Errorf("polled again: %v, want the same question under the same key", again)
	}
	ack := c.must(tasks.MethodUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"decision": "allow once"}}}}, nil)
	if ack["resultType"] != "complete" {
		t.Errorf("update ack: %v", ack)
	}
	if done := c.until(id, tasks.Completed); resultText(done) != "confirm: allow once\n" {
		t.Errorf("the result: %v", done)
	}
}

// TestTaskPrincipal: a task is visible only to the principal that started
// it, as an unknown one to any other (another token's holder over HTTP);
// an Mcp-Name header that is not the body's taskId is refused.
func TestTaskPrincipal(t *testing.T) {
	s, r := taskServer(t, 0)
	c := connectRaw(t, s, withTasks)
	id := c.runPython("block", true)["taskId"].(string)
	defer close(r.release)
	meta := mcp.Meta{mcp.MetaKeyClientCapabilities: withTasks}
	header := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}
	ask := func(method string, extra *mcp.RequestExtra) error {
		_, err := s.taskMethod(method, &mcp.ServerRequest[*tasks.GetParams]{
			Params: &tasks.GetParams{ParamsBase: mcp.ParamsBase{Meta: meta}, TaskID: id}, Extra: extra})
		return err
	}
	other := &mcp.RequestExtra{Header: header, TokenInfo: &auth.TokenInfo{UserID: "another"}}
	for _, m := range []string{tasks.MethodGet, tasks.MethodCancel} {
		if err := ask(m, other); err == nil || err.(*jsonrpc.Error).Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s from another principal: %v, want not found", m, err)
		}
	}
	if got := c.get(id); got["status"] != "working" {
		t.Errorf("after another principal's cancel: %v, want still working", got)
	}
	if err := ask(tasks.MethodGet, nil); err != nil {
		t.Errorf("the owner's tasks/get: %v", err)
	}
	named := &mcp.RequestExtra{Header: http.Header{"Mcp-Name": {"someone-else"}}}
	if err := ask(tasks.MethodGet, named); err == nil || err.(*jsonrpc.Error).Code != mcp.CodeHeaderMismatch {
		t.Errorf("an Mcp-Name that is not the taskId: %v, want a header mismatch", err)
	}
}

// TestTasksFull: with max_tasks tasks held, working or ended within their
// ttl, a call that asks for a task stays a plain call and gets its result.
func TestTasksFull(t *testing.T) {
	cfg := bridgetest.Config(t)
	cfg.MaxTasks = 1
	r := &blockRunner{release: make(chan struct{})}
	s := NewServer(testOptions(cfg, Options{Runner: r, Servers: askDirectory{}}))
	t.Cleanup(func() { s.Close(context.Background()) })
	c := connectRaw(t, s, withTasks)
	id := c.runPython("block", true)["taskId"].(string)
	res := c.runPython("confirm", true)
	if res["resultType"] == "task" || len(res["content"].([]any)) == 0 {
		t.Errorf("a call past max_tasks: %v, want its result", res)
	}
	close(r.release)
	c.until(id, tasks.Completed)
	if again := c.runPython("confirm", true); again["resultType"] == "task" {
		t.Errorf("once the task ended: %v, want a plain result (the ended one is kept its ttl)", again)
	}
}

// TestTaskFromInitialize: a client of MCP 2025-11-25 that declared the
// extension in initialize gets tasks too; one that did not, none.
func TestTaskFromInitialize(t *testing.T) {
	s, r := taskServer(t, 0)
	c := connectRaw(t, s, nil)
	c.legacy = true
	init := c.must("initialize", map[string]any{"protocolVersion": "2025-11-25", "clientInfo": map[string]any{"name": "raw", "version": "1"},
		"capabilities": withTasks}, nil)
	if caps, _ := init["capabilities"].(map[string]any); caps["extensions"].(map[string]any)[tasks.Extension] == nil {
		t.Errorf("initialize: %v, want the tasks extension", init)
	}
	raw, _ := json.Marshal(map[string]any{})
	if err := c.conn.Write(t.Context(), &jsonrpc.Request{Method: "notifications/initialized", Params: raw}); err != nil {
		t.Fatal(err)
	}
	created := c.runPython("block", true)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("the call: %v, want a task handle", created)
	}
	close(r.release)
	if done := c.until(id, tasks.Completed); resultText(done) != "done\n" {
		t.Errorf("the result: %v", done)
	}
	plain := connectRaw(t, s, nil)
	plain.legacy = true
	plain.must("initialize", map[string]any{"protocolVersion": "2025-11-25", "clientInfo": map[string]any{"name": "raw", "version": "1"},
		"capabilities": map[string]any{}}, nil)
	if err := plain.conn.Write(t.Context(), &jsonrpc.Request{Method: "notifications/initialized", Params: raw}); err != nil {
		t.Fatal(err)
	}
	if res := plain.runPython("confirm", true); res["resultType"] == "task" || res["taskId"] != nil {
		t.Errorf("a 2025-11-25 client without the extension got a task: %v", res)
	}
}
