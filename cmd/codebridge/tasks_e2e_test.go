package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tasksExtension is MCP's tasks extension (bridge/tasks.Extension).
const tasksExtension = "io.modelcontextprotocol/tasks"

// rpcHTTP is a client of MCP 2026-07-28 over HTTP speaking JSON-RPC by
// hand, without an MCP session, as a client of the tasks extension must
// (go-sdk's client reads every tools/call answer as a CallToolResult, so it
// cannot see a task handle): every request carries its _meta and the
// standard headers.
type rpcHTTP struct {
	url, token string
	caps       map[string]any
	next       atomic.Int64
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// call sends method with params and meta and returns its result, or its
// error answer.
func (c *rpcHTTP) call(t *testing.T, method string, params, meta map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	m := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "tasks-e2e", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": c.caps}
	for k, v := range meta {
		m[k] = v
	}
	p := map[string]any{"_meta": m}
	for k, v := range params {
		p[k] = v
	}
	id := c.next.Add(1)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if task, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", task)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var msg struct {
		ID     int64           `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() && !found {
		line := sc.Text()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			line = data
		}
		msg.ID, msg.Result, msg.Error = 0, nil, nil
		if json.Unmarshal([]byte(line), &msg) == nil && msg.ID == id && (msg.Result != nil || msg.Error != nil) {
			found = true
		}
	}
	if !found {
		t.Fatalf("%s: no answer (HTTP %s)", method, resp.Status)
	}
	if msg.Error != nil {
		return nil, msg.Error
	}
	var out map[string]any
	if err := json.Unmarshal(msg.Result, &out); err != nil {
		t.Fatalf("%s: %s: %v", method, msg.Result, err)
	}
	return out, nil
}

func (c *rpcHTTP) must(t *testing.T, method string, params, meta map[string]any) map[string]any {
	t.Helper()
	res, err := c.call(t, method, params, meta)
	if err != nil {
		t.Fatalf("%s: %d %s", method, err.Code, err.Message)
	}
	return res
}

// runPython calls run_python with args; asTask asks for a task at once.
func (c *rpcHTTP) runPython(t *testing.T, args map[string]any, asTask bool) map[string]any {
	t.Helper()
	var meta map[string]any
	if asTask {
		meta = map[string]any{"codebridge/task": true}
	}
	return c.must(t, "tools/call", map[string]any{"name": "run_python", "arguments": args}, meta)
}

// await polls task id at its pollIntervalMs until it ends (the run's own
// time limit bounds the wait; the guard only stops a broken run) and
// returns its last state.
func (c *rpcHTTP) await(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := c.must(t, "tasks/get", map[string]any{"taskId": id}, nil)
		switch got["status"] {
		case "completed", "failed", "cancelled":
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %v after 3 minutes", id, got["status"])
		}
		interval, _ := got["pollIntervalMs"].(float64)
		time.Sleep(time.Duration(max(interval, 100)) * time.Millisecond)
	}
}

// taskText is the first text of a completed task's result, or of a plain
// tool result.
func taskText(m map[string]any) string {
	if r, ok := m["result"].(map[string]any); ok {
		m = r
	}
	content, _ := m["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// structured is a tool result's structuredContent.
func structured(m map[string]any) map[string]any {
	if r, ok := m["result"].(map[string]any); ok {
		m = r
	}
	s, _ := m["structuredContent"].(map[string]any)
	return s
}

// TestHTTPTasks: from a client of the tasks extension, without an MCP
// session, over HTTP, with real sandboxes: a 60 s run asked as a task
// returns its handle at once and its result arrives by the task; a run
// that outlasts task_after becomes a task by itself; tasks/cancel stops
// that run in its container (a loop writing a counter file, which stops
// growing) and the session's next run works, with the loop's variables
// kept; a client without the extension gets the plain result.
func TestHTTPTasks(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MEMORY=128m", "MCP_BRIDGE_TASK_AFTER=2"))
	c := &rpcHTTP{url: b.URL, token: b.Token, caps: map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}
	disc := c.must(t, "server/discover", nil, nil)
	if caps, _ := disc["capabilities"].(map[string]any); caps == nil || caps["extensions"].(map[string]any)[tasksExtension] == nil {
		t.Fatalf("server/discover: %v, want the tasks extension", disc)
	}

	setup := c.runPython(t, map[string]any{"code": "print('ready')"}, false)
	handle, _ := structured(setup)["session"].(map[string]any)["handle"].(string)
	if setup["resultType"] == "task" || handle == "" {
		t.Fatalf("a quick call: %v, want its result and a session handle", setup)
	}

	began := time.Now()
	slow := c.runPython(t, map[string]any{"code": "import time\ntime.sleep(60)\nprint('slept 60 s')", "timeout": 90}, true)
	handed := time.Since(began)
	slowID, _ := slow["taskId"].(string)
	if slow["resultType"] != "task" || slowID == "" || slow["status"] != "working" {
		t.Fatalf("a 60 s run asked as a task: %v, want a handle", slow)
	}
	if got := c.must(t, "tasks/get", map[string]any{"taskId": slowID}, nil); got["status"] != "working" {
		t.Fatalf("the 60 s run's task right after: %v, want working", got)
	}
	t.Logf("the 60 s run's handle came after %s", handed.Round(time.Millisecond))

	loop := "import time\nn = 0\nwhile True:\n    n += 1\n    open('/tmp/count', 'w').write(str(n))\n    time.sleep(0.02)"
	looping := c.runPython(t, map[string]any{"code": loop, "session": handle, "timeout": 90}, false)
	loopID, _ := looping["taskId"].(string)
	if looping["resultType"] != "task" || loopID == "" {
		t.Fatalf("a run past task_after: %v, want a handle", looping)
	}
	if ack := c.must(t, "tasks/cancel", map[string]any{"taskId": loopID}, nil); ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel: %v", ack)
	}
	if got := c.await(t, loopID); got["status"] != "cancelled" || got["result"] != nil {
		t.Errorf("the cancelled loop's task: %v, want cancelled", got)
	}
	check := c.runPython(t, map[string]any{"code": "import time\na = open('/tmp/count').read()\ntime.sleep(0.5)\nb = open('/tmp/count').read()\nprint(a == b, int(a) > 0, n == int(a))", "session": handle}, false)
	if check["resultType"] == "task" || check["isError"] == true || structured(check)["stdout"] != "True True True\n" {
		t.Errorf("the session's next run: %q, want the counter stopped and the loop's n kept (%v)", taskText(check), check)
	}
	if s := structured(check)["session"].(map[string]any); s["handle"] != handle || s["new"] == true {
		t.Errorf("the next run's session: %v, want the same one", s)
	}

	plain := &rpcHTTP{url: b.URL, token: b.Token, caps: map[string]any{}}
	if r := plain.runPython(t, map[string]any{"code": "print(6 * 7)"}, true); r["resultType"] == "task" || structured(r)["stdout"] != "42\n" {
		t.Errorf("a client without the extension: %v, want the plain result", r)
	}
	if _, err := plain.call(t, "tasks/get", map[string]any{"taskId": slowID}, nil); err == nil || err.Code != -32021 {
		t.Errorf("tasks/get without the extension: %v, want -32021", err)
	}

	done := c.await(t, slowID)
	if done["status"] != "completed" || !strings.Contains(taskText(done), "slept 60 s") {
		t.Errorf("the 60 s run's task: %v, want completed with its output", done)
	}
	t.Logf("the 60 s run's result came by the task %s after the call (%s)", time.Since(began).Round(time.Second), fmt.Sprint(structured(done)["duration_ms"]))
}
