package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// TestHTTPSessionByHandle: a sandbox session started by the official
// TypeScript SDK in its MCP session is continued by handle from a go-sdk
// client in another MCP session and from a go-sdk client without one (MCP
// 2026-07-28, sessionless), with real containers; a sessionless call without
// a handle starts a session it keeps only through the handle; an unknown
// handle starts a new session and says so, or, when the call asked,
// runs nothing.
func TestHTTPSessionByHandle(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MEMORY=128m"))
	ts := tsHTTP(t, b, []tsHTTPStep{{Client: 0, Connect: true}, {Client: 0, Code: hostname + "x = 41"}}, nil)
	if ts[1].Out.Session == nil || len(ts[1].Out.Session.Handle) < 26 {
		t.Fatalf("the TypeScript client's run: %+v, want a session with a handle of at least 128 bits", ts[1])
	}
	handle, box := ts[1].Out.Session.Handle, firstLine(ts[1].Out.Stdout)

	stateful := b.goClient(t, b.Token)
	r := runPython(t, stateful, map[string]any{"code": hostname + "x += 1\nprint(x)", "session": handle})
	if r.IsError || r.Out.Stdout != box+"\n42\n" || r.Out.Session.Handle != handle {
		t.Errorf("from another MCP session by handle: %q, want container %s and 42", r.Text, box)
	}

	sessionless, err := dialHTTP(b.URL, b.Token, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sessionless.Close()
	if sessionless.ID() != "" || sessionless.InitializeResult().ProtocolVersion != "2026-07-28" {
		t.Fatalf("the go-sdk client's session %q speaks %s: want no MCP session, MCP 2026-07-28", sessionless.ID(), sessionless.InitializeResult().ProtocolVersion)
	}
	if r := runPython(t, sessionless, map[string]any{"code": "x += 1\nprint(x)", "session": handle}); r.IsError || r.Out.Stdout != "43\n" {
		t.Errorf("without an MCP session, by handle: %q", r.Text)
	}
	own := runPython(t, sessionless, map[string]any{"code": "y = 'mine'"})
	if own.IsError || !own.Out.Session.New || own.Out.Session.Handle == handle || !strings.Contains(own.Text, `pass "session": "`+own.Out.Session.Handle+`"`) {
		t.Errorf("a sessionless call without a handle: %q %+v, want a new session and how to keep it", own.Text, own.Out.Session)
	}
	if r := runPython(t, sessionless, map[string]any{"code": "print(y)", "session": own.Out.Session.Handle}); r.Out.Stdout != "mine\n" {
		t.Errorf("the sessionless client's own session, by handle: %q", r.Text)
	}

	unknown := runPython(t, stateful, map[string]any{"code": "print('x' in globals())", "session": strings.Repeat("A", 26)})
	if unknown.IsError || unknown.Out.Stdout != "False\n" || unknown.Out.Session.Reason != sandbox.ReasonUnknownHandle ||
		!strings.Contains(unknown.Text, "names no session of yours") || !strings.Contains(unknown.Text, unknown.Out.Session.Handle) {
		t.Errorf("an unknown handle: %q %+v, want a new session that says so", unknown.Text, unknown.Out.Session)
	}
	strict := callRunPython(t, stateful, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)", "session": strings.Repeat("B", 26)},
		Meta: mcp.Meta{"codebridge/requireSession": true}})
	if !strict.IsError || strict.Out.Error == nil || strict.Out.Error.Kind != "unknown_session" || strict.Out.Stdout != "" {
		t.Errorf("an unknown handle, continuing only: %q %+v", strict.Text, strict.Out.Error)
	}
	checkLogsHide(t, b, handle)
}

// checkLogsHide: no log line of b holds secret.
func checkLogsHide(t *testing.T, b *httpBridge, secret string) {
	t.Helper()
	for line := range strings.SplitSeq(b.Stderr.String(), "\n") {
		if strings.Contains(line, "level=") && strings.Contains(line, secret) {
			t.Errorf("a log line holds a session handle: %s", line)
		}
	}
}

// TestHTTPSessionlessQuestions: a client of MCP 2026-07-28 without an MCP
// session (the go-sdk client over HTTP) is asked for approvals through
// input_required results (a server without an MCP session cannot send
// requests of its own), answers in later requests, and the run goes on: the
// run's requestState is bound to the token's holder, not to an MCP session.
func TestHTTPSessionlessQuestions(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	decisions := []string{"allow once", "decline"}
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Params.Message)
		d := decisions[0]
		decisions = decisions[1:]
		if d == "decline" {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}, nil
	}}
	b := startHTTP(t, bridgeEnv(t, confirmServers(t), "MCP_BRIDGE_MEMORY=128m"))
	cs, err := dialHTTP(b.URL, b.Token, opts, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.ID() != "" {
		t.Fatalf("the go-sdk client has MCP session %q, want none", cs.ID())
	}
	for _, step := range []struct{ name, code, printed, asked string }{
		{"allowed once", createEntity("Ada"), "created\n", `"name":"Ada"`},
		{"declined", createEntity("Bob"), `declined the person declined the call of tool "create_entities" of MCP server "memory"`, `"name":"Bob"`},
	} {
		r := runPython(t, cs, map[string]any{"code": step.code})
		if r.IsError || !strings.Contains(r.Out.Stdout, step.printed) {
			t.Errorf("%s: printed %q, want %q:\n%s", step.name, r.Out.Stdout, step.printed, r.Text)
		}
		mu.Lock()
		if len(asked) == 0 || !strings.Contains(asked[len(asked)-1], step.asked) {
			t.Errorf("%s: asked %q, want a question naming %s", step.name, asked, step.asked)
		}
		mu.Unlock()
	}
}

// cutProxy is an HTTP proxy on loopback in front of codebridge that drops
// the connection of the first tools/call whose body holds its marker, right
// after forwarding the stream's first event with an id (its priming event):
// a run cut mid-way, as by a proxy or a flaky network. It forwards
// everything else whole.
type cutProxy struct {
	URL     string // its /mcp
	target  string // codebridge's /mcp
	marker  string
	armed   atomic.Bool  // the next marked call is cut
	cuts    atomic.Int32 // connections dropped
	resumed atomic.Int32 // GETs with Last-Event-ID
}

func startCutProxy(t *testing.T, target, marker string) *cutProxy {
	t.Helper()
	p := &cutProxy{target: target, marker: marker}
	p.armed.Store(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p.URL = "http://" + ln.Addr().String() + "/mcp"
	return p
}

func (p *cutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	if r.Header.Get("Last-Event-ID") != "" {
		p.resumed.Add(1)
	}
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	cut := r.Method == http.MethodPost && bytes.Contains(body, []byte(p.marker)) && bytes.Contains(body, []byte(`"tools/call"`)) &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && p.armed.CompareAndSwap(true, false)
	rc := http.NewResponseController(w)
	lines := bufio.NewReader(resp.Body)
	sawID := false
	for {
		line, err := lines.ReadBytes('\n')
		w.Write(line)
		rc.Flush()
		if err != nil {
			return
		}
		sawID = sawID || bytes.HasPrefix(line, []byte("id:"))
		if cut && sawID && len(bytes.TrimSpace(line)) == 0 {
			p.cuts.Add(1)
			panic(http.ErrAbortHandler) // drops the client's connection mid-stream
		}
	}
}

// TestHTTPResumeAfterCut: a run whose stream is cut mid-way is delivered
// to the official TypeScript SDK and to the go-sdk client (in an MCP
// session: MCP 2026-07-28 has no resumable streams) when they reconnect
// with Last-Event-ID, through a real proxy on loopback that drops the
// connection.
func TestHTTPResumeAfterCut(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MEMORY=128m"))
	const code = "# cut here\nimport time\ntime.sleep(2)\nprint('after the cut')"
	t.Run("typescript", func(t *testing.T) {
		p := startCutProxy(t, b.URL, "# cut here")
		r := tsHTTPAt(t, p.URL, b.Token, []tsHTTPStep{{Client: 0, Connect: true}, {Client: 0, Code: code}}, nil)
		if r[1].Error != "" || r[1].Out.Stdout != "after the cut\n" || p.cuts.Load() != 1 || p.resumed.Load() == 0 {
			t.Errorf("the run: %+v; %d cuts, %d resumptions: want its result after one cut and a resumption", r[1], p.cuts.Load(), p.resumed.Load())
		}
	})
	t.Run("go", func(t *testing.T) {
		p := startCutProxy(t, b.URL, "# cut here")
		cs, err := dialHTTP(p.URL, b.Token, nil, withSession)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		r := runPython(t, cs, map[string]any{"code": code})
		if r.IsError || r.Out.Stdout != "after the cut\n" || p.cuts.Load() != 1 || p.resumed.Load() == 0 {
			t.Errorf("the run: %q; %d cuts, %d resumptions: want its result after one cut and a resumption", r.Text, p.cuts.Load(), p.resumed.Load())
		}
	})
}

// TestHTTPSessionsWithoutDelete: 100 real clients that open MCP sessions and
// never send DELETE (as the conformance suite and the Inspector do) do not
// lock out the 101st, with MCP_BRIDGE_MAX_MCP_SESSIONS at 100: the session
// used least recently is closed for it, and a client whose session was
// closed gets 404 for it and can open a new one.
func TestHTTPSessionsWithoutDelete(t *testing.T) {
	const n = 100
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), fmt.Sprintf("MCP_BRIDGE_MAX_MCP_SESSIONS=%d", n), "MCP_BRIDGE_MEMORY=128m"))
	first, err := b.dial(b.Token)
	if err != nil {
		t.Fatal(err)
	}
	kept := runPython(t, first, map[string]any{"code": "x = 'first'"})
	clients := []*mcp.ClientSession{first}
	for range n - 1 {
		cs, err := b.dial(b.Token)
		if err != nil {
			t.Fatalf("client %d of %d: %v", len(clients)+1, n, err)
		}
		clients = append(clients, cs)
	}
	t.Cleanup(func() {
		for _, cs := range clients {
			cs.Close()
		}
	})
	if _, h := b.health(t); h.Sessions != n {
		t.Fatalf("%d MCP sessions open, want %d", h.Sessions, n)
	}
	// The 101st through the TypeScript SDK, then the 102nd through go-sdk.
	ts := tsHTTP(t, b, []tsHTTPStep{{Client: 0, Connect: true}, {Client: 0, Code: "print(x)", Session: kept.Out.Session.Handle}}, nil)
	if ts[0].Error != "" || ts[1].Out.Stdout != "first\n" {
		t.Fatalf("the 101st client: %+v, want it served, and the closed session's sandbox reachable by handle", ts)
	}
	last, err := b.dial(b.Token)
	if err != nil {
		t.Fatalf("the 102nd client: %v", err)
	}
	clients = append(clients, last)
	if r := runPython(t, last, map[string]any{"code": "print(2)"}); r.Out.Stdout != "2\n" {
		t.Errorf("the 102nd client's run: %q", r.Text)
	}
	if _, h := b.health(t); h.Sessions > n {
		t.Errorf("%d MCP sessions open, want at most %d", h.Sessions, n)
	}
	if _, err := first.ListTools(t.Context(), nil); err == nil {
		t.Error("the session used least recently was not the one closed")
	}
	again, err := b.dial(b.Token)
	if err != nil {
		t.Fatalf("a client whose session was closed, connecting again: %v", err)
	}
	clients = append(clients, again)
}
