package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// httpBridge is a codebridge serving MCP over HTTP (serve --http).
type httpBridge struct {
	URL    string // http://127.0.0.1:PORT/mcp
	Base   string // http://127.0.0.1:PORT
	Token  string
	Cmd    *exec.Cmd
	Stderr *syncBuffer

	StopWait time.Duration // how long Stop waits for codebridge to exit (0: 90 s)
	// GoneWait is how long Stop waits for its containers to be gone (0: a
	// minute): the sandboxes of a codebridge that stops exit in turns, four a
	// second ([enginekit.DefaultExitInterval]).
	GoneWait time.Duration
	Exited   time.Duration // how long codebridge took to exit after Stop's SIGTERM

	stopOnce sync.Once
	exited   chan struct{}
	exitErr  error
}

var (
	endpointRE  = regexp.MustCompile(`serving MCP over streamable HTTP at (http://\S+)`)
	tokenRE     = regexp.MustCompile(`(?m)delete that file and restart for a new one\):\n  (\S+)\n`)
	tokenFileRE = regexp.MustCompile(`with the token kept in (\S+) \(delete that file`)
)

// startHTTP starts codebridge serve --http on a free loopback port and waits
// until it listens. Cleanup stops it with SIGTERM and checks that it left no
// container behind.
func startHTTP(t testing.TB, env []string) *httpBridge {
	t.Helper()
	b := launchHTTP(t, env)
	b.waitListening(t)
	return b
}

// launchHTTP starts codebridge serve --http on a free loopback port without
// waiting for it to listen (see [httpBridge.waitListening]), so that several
// can start at the same moment.
func launchHTTP(t testing.TB, env []string) *httpBridge {
	t.Helper()
	requirePodman(t)
	b := &httpBridge{Stderr: new(syncBuffer), exited: make(chan struct{})}
	b.Cmd = exec.Command(binary(t), "serve", "--http", "127.0.0.1:0")
	b.Cmd.Env = env
	b.Cmd.Stderr = b.Stderr
	if err := b.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.exitErr = b.Cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() {
		b.Stop(t)
		if t.Failed() {
			t.Logf("codebridge stderr:\n%s", b.Stderr.String())
		}
	})
	return b
}

// waitListening waits until b listens and notes its address and token.
func (b *httpBridge) waitListening(t testing.TB) {
	t.Helper()
	testenv.Eventually(t, "codebridge to listen", func() bool {
		select {
		case <-b.exited:
			t.Fatalf("codebridge exited: %v\n%s", b.exitErr, b.Stderr.String())
		default:
		}
		out := b.Stderr.String()
		m, tok := endpointRE.FindStringSubmatch(out), tokenRE.FindStringSubmatch(out)
		if file := tokenFileRE.FindStringSubmatch(out); tok == nil && file != nil {
			// A kept token is not printed, only where it is (stderr is not
			// a terminal here).
			raw, err := os.ReadFile(file[1])
			if err != nil {
				t.Fatalf("reading the token file codebridge named: %v", err)
			}
			tok = []string{"", strings.TrimSpace(string(raw))}
		}
		if m == nil || (tok == nil && !strings.Contains(out, "No token is required")) {
			return false
		}
		b.URL = m[1]
		if tok != nil {
			b.Token = tok[1]
		}
		b.Base = strings.TrimSuffix(b.URL, "/mcp")
		return true
	})
}

// Stop sends SIGTERM, waits for codebridge to exit by itself, and checks
// that none of its containers is left.
func (b *httpBridge) Stop(t testing.TB) {
	t.Helper()
	b.stopOnce.Do(func() {
		pid := b.Cmd.Process.Pid
		start := time.Now()
		b.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
			b.Exited = time.Since(start)
		case <-time.After(cmp.Or(b.StopWait, 90*time.Second)):
			b.Cmd.Process.Kill()
			<-b.exited
			t.Errorf("codebridge did not exit within %v of SIGTERM", cmp.Or(b.StopWait, 90*time.Second))
		}
		if b.exitErr != nil {
			t.Errorf("codebridge exited with %v after SIGTERM, want status 0", b.exitErr)
		}
		if left := containersLeftWithin(t, cmp.Or(b.GoneWait, time.Minute), pid); len(left) > 0 {
			t.Errorf("containers of codebridge %d left after SIGTERM: %v", pid, left)
		}
	})
}

// health reads /healthz.
func (b *httpBridge) health(t testing.TB) (code int, h struct {
	Status       string `json:"status"`
	Engine       string `json:"engine"`
	EngineStatus string `json:"engine_status"`
	Sessions     int    `json:"sessions"`
	Runs         int    `json:"runs"`
	MaxSessions  int    `json:"max_sessions"`
	MaxRuns      int    `json:"max_runs"`
	MaxQueued    int    `json:"max_queued"`
}) {
	t.Helper()
	resp, err := http.Get(b.Base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	return resp.StatusCode, h
}

// goClient connects the go-sdk's streamable HTTP client to b with token,
// in an MCP session (MCP 2025-11-25).
func (b *httpBridge) goClient(t testing.TB, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := b.dial(token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// withSession is the newest MCP version whose clients keep an MCP session
// over HTTP: the go-sdk client left to itself speaks 2026-07-28, without one.
const withSession = "2025-11-25"

// dial is goClient for any goroutine: it returns the error, and the caller
// closes the session.
func (b *httpBridge) dial(token string) (*mcp.ClientSession, error) {
	return dialHTTP(b.URL, token, nil, withSession)
}

// dialHTTP connects the go-sdk client with opts to url, speaking version
// ("" for the client's newest).
func dialHTTP(url, token string, opts *mcp.ClientOptions, version string) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codebridge-http-e2e", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("connecting over HTTP: %w", err)
	}
	return cs, nil
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// tsHTTPStep is one step of testdata/ts_http.mjs.
type tsHTTPStep struct {
	Client   int          `json:"client"`
	Connect  bool         `json:"connect,omitempty"`
	Token    *string      `json:"token,omitempty"`
	NoToken  bool         `json:"-"`
	Code     string       `json:"code,omitempty"`
	Session  string       `json:"session,omitempty"`  // run_python's session argument
	HandleOf *int         `json:"handleOf,omitempty"` // run_python's session argument: the handle of this earlier result
	Close    bool         `json:"close,omitempty"`
	Parallel []tsHTTPStep `json:"parallel,omitempty"`
	Pause    bool         `json:"pause,omitempty"`
}

func (s tsHTTPStep) MarshalJSON() ([]byte, error) {
	type plain tsHTTPStep
	raw, err := json.Marshal(plain(s))
	if err != nil || !s.NoToken {
		return raw, err
	}
	return append(raw[:len(raw)-1], []byte(`,"token":null}`)...), nil
}

// tsHTTPResult is one line ts_http.mjs prints.
type tsHTTPResult struct {
	SessionID string         `json:"sessionId"`
	Error     string         `json:"error"`
	Status    int            `json:"code"` // the HTTP status of a refused request
	Closed    bool           `json:"closed"`
	Paused    bool           `json:"paused"`
	Parallel  []tsHTTPResult `json:"parallel"`
	Text      string         `json:"text"`
	IsError   bool           `json:"isError"`
	Out       struct {
		Stdout string `json:"stdout"`
		Error  *struct {
			Kind, Message string
		} `json:"error"`
		Session *sandbox.SessionInfo `json:"session"`
	} `json:"out"`
}

// tsHTTP runs steps through the official TypeScript SDK's streamable HTTP
// client against b. At a pause step it calls onPause with the results so
// far.
func tsHTTP(t *testing.T, b *httpBridge, steps []tsHTTPStep, onPause func(results []tsHTTPResult)) []tsHTTPResult {
	t.Helper()
	return tsHTTPAt(t, b.URL, b.Token, steps, onPause)
}

// tsHTTPAt is tsHTTP against url with token.
func tsHTTPAt(t *testing.T, url, token string, steps []tsHTTPStep, onPause func(results []tsHTTPResult)) []tsHTTPResult {
	t.Helper()
	plan, _ := json.Marshal(steps)
	want := 0
	for _, s := range steps {
		if !s.Pause {
			want++
		}
	}
	var results []tsHTTPResult
	node, _ := exec.LookPath("node")
	runNodeScript(t, "ts_http.mjs", []string{url, token, string(plan)}, []string{"PATH=" + filepath.Dir(node)}, func(line []byte) bool {
		var r tsHTTPResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("script line %q: %v", line, err)
		}
		if r.Paused {
			onPause(results)
			return true
		}
		results = append(results, r)
		return false
	}, func(stderr string) {
		if len(results) != want {
			t.Fatalf("ts client: %d of %d results\nstderr: %s", len(results), want, stderr)
		}
	})
	return results
}

// TestHTTPThroughTypeScriptClient: the official TypeScript SDK runs code
// through the HTTP front in two sessions at once, each with its own state
// and container; deleting a session removes its container; clients without
// the token are refused.
func TestHTTPThroughTypeScriptClient(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir()))
	wrong := "not-the-token-" + strings.Repeat("x", 20)
	var pid = b.Cmd.Process.Pid
	r := tsHTTP(t, b, []tsHTTPStep{
		{Client: 0, Connect: true}, // 0
		{Client: 1, Connect: true}, // 1
		{Parallel: []tsHTTPStep{ // 2
			{Client: 0, Code: hostname + "x = 'a'"},
			{Client: 1, Code: hostname + "x = 'b'"},
		}},
		{Parallel: []tsHTTPStep{ // 3
			{Client: 0, Code: "print(x)"},
			{Client: 1, Code: "print(x)"},
		}},
		{Pause: true},
		{Client: 0, Close: true},                  // 4
		{Pause: true},                             // the deleted session's container is gone
		{Client: 1, Code: "print(x)"},             // 5
		{Client: 2, Connect: true, NoToken: true}, // 6
		{Client: 3, Connect: true, Token: &wrong}, // 7
	}, func(r []tsHTTPResult) {
		if len(r) == 4 { // both sessions' containers belong to this codebridge
			a, bb := firstLine(r[2].Parallel[0].Out.Stdout), firstLine(r[2].Parallel[1].Out.Stdout)
			if left := containersOf(t, pid); a == bb || !slices.Contains(left, a) || !slices.Contains(left, bb) {
				t.Errorf("session containers %q and %q: want two distinct containers of codebridge %d (%v)", a, bb, pid, left)
			}
			return
		}
		containerGone(t, firstLine(r[2].Parallel[0].Out.Stdout))
	})
	for i := range 2 {
		if r[i].SessionID == "" || r[i].Error != "" {
			t.Fatalf("connect %d: %+v", i, r[i])
		}
	}
	if r[0].SessionID == r[1].SessionID {
		t.Errorf("two clients share session %s", r[0].SessionID)
	}
	if got := []string{r[3].Parallel[0].Out.Stdout, r[3].Parallel[1].Out.Stdout}; got[0] != "a\n" || got[1] != "b\n" {
		t.Errorf("each session's x: %q, want [a b]: %+v", got, r[3])
	}
	if !r[4].Closed || r[5].Out.Stdout != "b\n" {
		t.Errorf("after deleting the other session: %+v then %q, want b", r[4], r[5].Out.Stdout)
	}
	for _, i := range []int{6, 7} {
		if r[i].Status != 401 || !strings.Contains(r[i].Error, "bearer token") || r[i].SessionID != "" {
			t.Errorf("connect without the right token: %+v, want a 401 error", r[i])
		}
	}
	if n := strings.Count(b.Stderr.String(), `msg="http request" method=POST path=/mcp status=401`); n < 2 {
		t.Errorf("want the two refused requests logged, found %d", n)
	}
	checkLogsHideToken(t, b)
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// checkLogsHideToken: no log line holds the token (only the notice printed
// at start, which is not a log line, does).
func checkLogsHideToken(t *testing.T, b *httpBridge) {
	t.Helper()
	for line := range strings.SplitSeq(b.Stderr.String(), "\n") {
		if strings.Contains(line, "level=") && strings.Contains(line, b.Token) {
			t.Errorf("a log line holds the token: %q", line)
		}
	}
}

// TestHTTPRefusals: requests without the token, with a wrong one, from a
// foreign page (Origin) or for another host name (DNS rebinding) are refused
// before anything else happens; /healthz needs no token.
func TestHTTPRefusals(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_WARM_CONTAINERS=0"))
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	tests := []struct {
		name     string
		path     string
		header   map[string]string
		host     string
		wantCode int
		wantBody string
	}{
		{name: "no token", path: "/mcp", wantCode: 401, wantBody: "Authorization: Bearer"},
		{name: "wrong token", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 52)}, wantCode: 401},
		{name: "token as basic auth", path: "/mcp", header: map[string]string{"Authorization": "Basic " + b.Token}, wantCode: 401},
		{name: "foreign origin", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + b.Token, "Origin": "https://evil.example"}, wantCode: 403, wantBody: "Origin"},
		{name: "rebound host", path: "/mcp", host: "evil.example:" + b.port(), header: map[string]string{"Authorization": "Bearer " + b.Token}, wantCode: 403, wantBody: "Host"},
		{name: "loopback host on another port", path: "/mcp", host: "localhost:1", header: map[string]string{"Authorization": "Bearer " + b.Token}, wantCode: 403},
		{name: "health from a rebound host", path: "/healthz", host: "evil.example:" + b.port(), wantCode: 403},
		{name: "token and a loopback origin", path: "/mcp", host: "localhost:" + b.port(), header: map[string]string{"Authorization": "Bearer " + b.Token, "Origin": "http://localhost:6274"}, wantCode: 200, wantBody: `"serverInfo"`},
		{name: "health without token", path: "/healthz", wantCode: 200, wantBody: `"status":"ok"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.path == "/healthz" {
				method = "GET"
			}
			req, _ := http.NewRequest(method, b.Base+tt.path, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("%s: %d %q, want %d with %q", tt.name, resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
			if tt.wantCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	// Refused requests opened no session.
	_, h := b.health(t)
	if h.Sessions != 1 {
		t.Errorf("sessions open: %d, want only the one the accepted initialize opened", h.Sessions)
	}
	if h.Engine != testenv.Engine() || h.EngineStatus != "ok" {
		t.Errorf("health: engine %q %q, want %q ok", h.Engine, h.EngineStatus, testenv.Engine())
	}
	checkLogsHideToken(t, b)
}

func (b *httpBridge) port() string { return b.Base[strings.LastIndex(b.Base, ":")+1:] }

// TestHTTPInspectorCLI: the MCP Inspector's CLI lists the tool and runs
// code through the HTTP front with the token header, and is refused
// without it.
func TestHTTPInspectorCLI(t *testing.T) {
	inspector := testenv.NPMBin(t, "mcp-inspector")
	b := startHTTP(t, bridgeEnv(t, t.TempDir()))
	run := func(args ...string) (string, error) {
		cmd := exec.Command(inspector, append([]string{"--cli", b.URL, "--transport", "http"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	auth := "Authorization: Bearer " + b.Token
	out, err := run("--header", auth, "--method", "tools/list")
	if err != nil || !strings.Contains(out, `"name": "run_python"`) {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	out, err = run("--header", auth, "--method", "tools/call", "--tool-name", "run_python", "--tool-arg", "code=print(6 * 7)")
	if err != nil {
		t.Fatalf("tools/call: %v\n%s", err, out)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].Text != "42\n" {
		t.Errorf("tools/call run_python: %v %+v\n%s", err, res, out)
	}
	out, err = run("--method", "tools/list")
	if err == nil || !strings.Contains(out, "missing or wrong bearer token") {
		t.Errorf("without the token: %v\n%s\nwant it refused for the token", err, out)
	}
}

// TestHTTPLimits: past MCP_BRIDGE_MAX_RUNS a run waits for a slot for at
// most its time limit, then fails with a busy error; at MCP_BRIDGE_MAX_MCP_SESSIONS a new session is not refused: the
// MCP session used least recently is closed to make room, and its sandbox
// session stays, reachable by its handle from another client.
func TestHTTPLimits(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_MAX_MCP_SESSIONS=2", "MCP_BRIDGE_MAX_RUNS=1", "MCP_BRIDGE_MEMORY=128m"))

	// Runs: one in progress in session A; B's is refused, then goes once A's ends.
	a, c := b.goClient(t, b.Token), b.goClient(t, b.Token)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "import time\nwhile True: time.sleep(0.05)", "timeout": 120}})
		ended <- err
	}()
	testenv.Eventually(t, "a run in progress", func() bool { _, h := b.health(t); return h.Runs == 1 })
	r := runPython(t, c, map[string]any{"code": "print(1)", "timeout": 2}) // it waits this long for a slot
	if !r.IsError || r.Out.Error == nil || r.Out.Error.Kind != "busy" || !strings.Contains(r.Text, "MCP_BRIDGE_MAX_RUNS") {
		t.Errorf("a run past the limit: %+v %q, want a busy error naming MCP_BRIDGE_MAX_RUNS", r.Out.Error, r.Text)
	}
	cancel()
	<-ended
	testenv.Eventually(t, "the cancelled run to end", func() bool { _, h := b.health(t); return h.Runs == 0 })
	kept := runPython(t, a, map[string]any{"code": "x = 7"})
	if r := runPython(t, c, map[string]any{"code": "print(1)"}); r.IsError || r.Out.Stdout != "1\n" {
		t.Errorf("a run once the other ended: %q", r.Text)
	}

	// Sessions: two are open (a and c, c used last); a third closes a.
	res := tsHTTP(t, b, []tsHTTPStep{{Client: 0, Connect: true}, {Client: 0, Code: "print(x)", Session: kept.Out.Session.Handle}}, nil)
	if res[0].Error != "" || res[1].Out.Stdout != "7\n" {
		t.Errorf("a third session, continuing the closed one's sandbox session by handle: %+v", res)
	}
	if !strings.Contains(b.Stderr.String(), "closing the MCP session used least recently") {
		t.Error("no log line for the MCP session closed to make room")
	}
	if _, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}}); err == nil {
		t.Error("the MCP session closed to make room still answers")
	}
	if r := runPython(t, c, map[string]any{"code": "print(2)"}); r.Out.Stdout != "2\n" {
		t.Errorf("the session used more recently: %q", r.Text)
	}
}

// TestHTTPShutdown: on SIGTERM a run in progress finishes and answers, the
// process exits 0 and no container is left (Stop checks); with a short
// grace, a run that does not end in time is cancelled.
func TestHTTPShutdown(t *testing.T) {
	for _, tt := range []struct {
		name, grace, code string
		finishes          bool
	}{
		{name: "run finishes", grace: "60", code: "import time\ntime.sleep(1)\nprint('finished')", finishes: true},
		{name: "run cancelled", grace: "1", code: "import time\nwhile True: time.sleep(0.05)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_HTTP_SHUTDOWN_GRACE="+tt.grace, "MCP_BRIDGE_MEMORY=128m"))
			idle, busy := b.goClient(t, b.Token), b.goClient(t, b.Token)
			mustRun(t, idle, "x = 1")
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := busy.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": tt.code, "timeout": 120}})
				done <- answer{res, err}
			}()
			testenv.Eventually(t, "the run to start", func() bool { _, h := b.health(t); return h.Runs == 1 })
			if n := len(containersOf(t, b.Cmd.Process.Pid)); n < 2 {
				t.Fatalf("%d containers before SIGTERM: want both sessions' at least", n)
			}
			b.Stop(t)
			got := <-done
			if tt.finishes {
				if got.err != nil || got.res.IsError || !strings.Contains(got.res.Content[0].(*mcp.TextContent).Text, "finished") {
					t.Errorf("the run in progress at SIGTERM: %v %+v, want it finished", got.err, got.res)
				}
			} else if got.err == nil && !got.res.IsError {
				t.Errorf("a run past the grace period: %+v, want it cancelled", got.res)
			}
			if !strings.Contains(b.Stderr.String(), "stopping: no new connections") {
				t.Errorf("no shutdown log line")
			}
		})
	}
}

// TestHTTPIdleSessionEnds: an HTTP session without requests for
// MCP_BRIDGE_SESSION_IDLE_TIMEOUT is closed, and its container removed.
func TestHTTPIdleSessionEnds(t *testing.T) {
	b := startHTTP(t, bridgeEnv(t, t.TempDir(), "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=2s", "MCP_BRIDGE_WARM_CONTAINERS=0"))
	cs := b.goClient(t, b.Token)
	id := firstLine(mustRun(t, cs, hostname))
	if !slices.Contains(containersOf(t, b.Cmd.Process.Pid), id) {
		t.Fatalf("container %q is not codebridge's", id)
	}
	testenv.Eventually(t, "the idle session to close", func() bool { _, h := b.health(t); return h.Sessions == 0 })
	containerGone(t, id)
}
