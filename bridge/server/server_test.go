package server

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// fakeRunner records the request it was given and returns a canned result.
type fakeRunner struct {
	mu       sync.Mutex
	got      python.Program
	req      sandbox.Request
	timeout  time.Duration
	result   *python.Result
	ended    []string
	detached []string
}

func (f *fakeRunner) Run(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got, f.timeout, f.req = req.Program, req.Timeout, req
	res := f.result
	if res == nil {
		res = &python.Result{Stdout: "ok\n", StdoutBytes: 3}
	}
	return &sandbox.Result{Result: res, Session: sandbox.SessionInfo{ID: "s1", Run: 1, New: true, Reason: sandbox.ReasonFirst}}, nil
}

func (f *fakeRunner) End(_ context.Context, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, key)
}

func (f *fakeRunner) Detach(_ context.Context, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detached = append(f.detached, key)
}

// connect starts s and returns a client session talking to it in memory.
func connect(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, s, mcp.NewClient(&mcp.Implementation{Name: "test"}, nil), nil)
}

// connectClient is connect with client connecting with opts.
func connectClient(t *testing.T, s *Server, client *mcp.Client, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := client.Connect(t.Context(), serveInMemory(t, s), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// serveInMemory serves one MCP session of s in memory and returns the
// client's end of it.
func serveInMemory(t *testing.T, s *Server) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct
}

func TestListedToolGolden(t *testing.T) {
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: &fakeRunner{}})))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != ToolName {
		t.Fatalf("tools = %v, want exactly %s", res.Tools, ToolName)
	}
	got, err := json.MarshalIndent(res.Tools[0], "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	compact, _ := json.Marshal(res.Tools[0])
	if len(compact) >= 1000 {
		t.Errorf("listed tool is %d bytes of JSON, budget is under 1000:\n%s", len(compact), compact)
	}
	t.Logf("listed tool: %d bytes", len(compact))
	golden := filepath.Join("testdata", "run_python.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./bridge/server -update to create it)", err)
	}
	if diff := cmp.Diff(strings.TrimSpace(string(want)), string(got)); diff != "" {
		t.Errorf("listed tool changed (-golden +got); if intended, run go test ./bridge/server -update:\n%s", diff)
	}
}

func TestManualResource(t *testing.T) {
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: &fakeRunner{}})))
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: ManualURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "call_tool") {
		t.Fatalf("manual = %+v, want markdown naming call_tool", res.Contents)
	}
}

func call(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolName, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	var structured map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &structured)
	return res, structured
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestRunPythonResults(t *testing.T) {
	tests := []struct {
		name      string
		result    *python.Result
		wantText  []string
		wantError bool
		wantKind  string
		wantExit  float64 // structured exit_code
	}{
		{name: "success", result: &python.Result{Stdout: "hello\n", StdoutBytes: 6},
			wantText: []string{"hello\n"}},
		{name: "no output", result: &python.Result{},
			wantText: []string{"(no output)"}},
		{name: "exception", result: &python.Result{Stdout: "before\n", ExitCode: 1, Error: &protocol.Failure{
			Kind: protocol.FailException, Type: "ZeroDivisionError", Message: "division by zero",
			Traceback: "Traceback (most recent call last):\n  File \"<run_python>\", line 2\nZeroDivisionError: division by zero\n"}},
			wantText: []string{"before\n", "[exception]\nTraceback", "ZeroDivisionError"}, wantError: true, wantKind: "exception", wantExit: 1},
		{name: "timeout", result: &python.Result{Stdout: "tick\n", ExitCode: -1, Error: &protocol.Failure{
			Kind: protocol.FailTimeout, Message: "timed out after 2 seconds"}},
			wantText: []string{"tick\n", "[timeout]\ntimed out after 2 seconds"}, wantError: true, wantKind: "timeout", wantExit: -1},
		{name: "stderr and exit", result: &python.Result{Stderr: "warn\n", ExitCode: 3},
			wantText: []string{"[stderr]\nwarn\n", "[exit]\nexit status 3"}, wantError: true, wantExit: 3},
		{name: "sandbox unavailable", result: &python.Result{ExitCode: -1, Error: &protocol.Failure{
			Kind: protocol.FailUnavailable, Message: "podman is not installed"}},
			wantText: []string{"[sandbox_unavailable]\npodman is not installed"}, wantError: true, wantKind: "sandbox_unavailable", wantExit: -1},
		// A failure whose status never came back must not read as exit 0.
		{name: "failure without status", result: &python.Result{Error: &protocol.Failure{
			Kind: protocol.FailUnavailable, Message: "the sandbox process ended without reporting a result"}},
			wantText: []string{"[sandbox_unavailable]"}, wantError: true, wantKind: "sandbox_unavailable", wantExit: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: &fakeRunner{result: tt.result}})))
			res, structured := call(t, cs, map[string]any{"code": "print('x')"})
			got := text(res)
			for _, w := range tt.wantText {
				if !strings.Contains(got, w) {
					t.Errorf("text %q does not contain %q", got, w)
				}
			}
			if res.IsError != tt.wantError {
				t.Errorf("IsError = %v, want %v", res.IsError, tt.wantError)
			}
			if structured["exit_code"] != tt.wantExit {
				t.Errorf("structured exit_code = %v, want %v", structured["exit_code"], tt.wantExit)
			}
			if structured["stdout"] != tt.result.Stdout {
				t.Errorf("structured stdout = %q, want %q", structured["stdout"], tt.result.Stdout)
			}
			if tt.wantKind != "" {
				e, _ := structured["error"].(map[string]any)
				if e["kind"] != tt.wantKind {
					t.Errorf("structured error = %v, want kind %q", e, tt.wantKind)
				}
			}
		})
	}
}

func TestRunPythonInput(t *testing.T) {
	cfg := bridgetest.Config(t)
	cfg.MaxCodeSize = 100
	tests := []struct {
		name        string
		args        map[string]any
		wantErrText string // empty: the runner must be called
		wantTimeout time.Duration
	}{
		{name: "default timeout", args: map[string]any{"code": "print(1)"}, wantTimeout: 30 * time.Second},
		{name: "own timeout", args: map[string]any{"code": "print(1)", "timeout": 2}, wantTimeout: 2 * time.Second},
		{name: "timeout capped", args: map[string]any{"code": "print(1)", "timeout": 1000}, wantTimeout: 120 * time.Second},
		// Past 9.2e9 seconds a time.Duration overflows: these must be capped too, never negative.
		{name: "timeout 1e10 capped", args: map[string]any{"code": "print(1)", "timeout": 1e10}, wantTimeout: 120 * time.Second},
		{name: "timeout near overflow capped", args: map[string]any{"code": "print(1)", "timeout": 9223372037}, wantTimeout: 120 * time.Second},
		{name: "largest float timeout capped", args: map[string]any{"code": "print(1)", "timeout": math.MaxFloat64}, wantTimeout: 120 * time.Second},
		{name: "fractional timeout", args: map[string]any{"code": "print(1)", "timeout": 1.5}, wantTimeout: 1500 * time.Millisecond},
		{name: "zero timeout", args: map[string]any{"code": "1", "timeout": 0}, wantErrText: "at most 120 (MCP_BRIDGE_MAX_TIMEOUT"},
		{name: "huge negative timeout", args: map[string]any{"code": "1", "timeout": -1e300}, wantErrText: "timeout must be a positive number"},
		{name: "empty code", args: map[string]any{"code": "  "}, wantErrText: "code is empty"},
		{name: "missing code", args: map[string]any{}, wantErrText: "code is empty"},
		{name: "code too large", args: map[string]any{"code": strings.Repeat("x", 101)}, wantErrText: "over the 100 byte limit"},
		{name: "bad timeout", args: map[string]any{"code": "1", "timeout": -1}, wantErrText: "timeout must be a positive number"},
		{name: "unknown field", args: map[string]any{"code": "1", "bogus": 1}, wantErrText: "unknown field \"bogus\""},
		{name: "servers without config", args: map[string]any{"code": "1", "servers": []string{"x"}}, wantErrText: "no MCP servers are configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := &fakeRunner{}
			cs := connect(t, NewServer(testOptions(cfg, Options{Runner: fr})))
			res, structured := call(t, cs, tt.args)
			if tt.wantErrText != "" {
				if !res.IsError || !strings.Contains(text(res), tt.wantErrText) {
					t.Fatalf("got IsError=%v %q, want an error containing %q", res.IsError, text(res), tt.wantErrText)
				}
				if fr.got.Code != "" {
					t.Error("runner was called for invalid input")
				}
				if structured != nil && structured["exit_code"] != -1.0 { // nil: refused by the SDK's schema check
					t.Errorf("structured exit_code = %v, want -1", structured["exit_code"])
				}
				return
			}
			if res.IsError {
				t.Fatalf("unexpected error: %s", text(res))
			}
			if fr.timeout != tt.wantTimeout {
				t.Errorf("timeout = %v, want %v", fr.timeout, tt.wantTimeout)
			}
			if fr.got.OutputLimit != cfg.OutputLimit {
				t.Errorf("OutputLimit = %d, want %d", fr.got.OutputLimit, cfg.OutputLimit)
			}
		})
	}
}

// TestTimeoutRange checks the conversion of run_python's timeout on values JSON
// cannot carry (NaN, infinities) as well as the ones it can.
func TestTimeoutRange(t *testing.T) {
	const maxTimeout = 120 * time.Second
	tests := []struct {
		in      float64
		want    time.Duration
		wantErr bool
	}{
		{in: 2, want: 2 * time.Second},
		{in: 0.25, want: 250 * time.Millisecond},
		{in: 120, want: maxTimeout},
		{in: 121, want: maxTimeout},
		{in: 1e10, want: maxTimeout},
		{in: math.MaxFloat64, want: maxTimeout},
		{in: math.Inf(1), wantErr: true},
		{in: math.Inf(-1), wantErr: true},
		{in: math.NaN(), wantErr: true},
		{in: 0, wantErr: true},
		{in: -1e10, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.in), func(t *testing.T) {
			got, err := runTimeout(tt.in, maxTimeout, "MCP_BRIDGE_MAX_TIMEOUT")
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "at most 120 (MCP_BRIDGE_MAX_TIMEOUT") {
					t.Fatalf("runTimeout(%v) = %v, %v; want an error naming the range", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("runTimeout(%v) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// progressDirectory hands the run's progress func to the runner through its
// host, for tests that drive progress themselves.
type progressDirectory struct{}

func (progressDirectory) Prepare(context.Context, []string) ([]protocol.ServerInfo, error) {
	return nil, nil
}

func (progressDirectory) Host(run host.Run) protocol.Handler {
	return progressHost{progress: run.Progress}
}

// progressHost reports progress from every tool call with the run's progress
// func; it refuses every other request.
type progressHost struct {
	protocol.Refuse
	progress func(string, float64, float64)
}

func (h progressHost) CallTool(_ context.Context, p protocol.CallToolParams) (protocol.CallToolResult, error) {
	if h.progress == nil {
		return protocol.CallToolResult{}, errors.New("no progress func: the client asked for progress")
	}
	h.progress(*p.Tool, 1, 2)
	return protocol.CallToolResult{RawMessage: json.RawMessage("{}")}, nil
}

// concurrentProgressRunner makes n concurrent tool calls, each reporting
// progress, as n concurrent tool calls of one run do.
type concurrentProgressRunner struct{ n int }

func (concurrentProgressRunner) End(context.Context, string)    {}
func (concurrentProgressRunner) Detach(context.Context, string) {}

func (r concurrentProgressRunner) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	errs := make([]error, r.n)
	h := req.Host(sandbox.SessionInfo{ID: "s1", Run: 1})
	var wg sync.WaitGroup
	for i := range r.n {
		wg.Go(func() {
			_, errs[i] = h.Call(ctx, protocol.MethodCallTool, json.RawMessage(fmt.Sprintf(`{"server":"s","tool":"call %d"}`, i)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &sandbox.Result{Result: &python.Result{}}, nil
}

// TestProgressFromConcurrentCalls forwards progress reported by concurrent tool
// calls; under -race it catches unsynchronized progress counting. Every
// notification must carry its own progress value, 1 to n.
func TestProgressFromConcurrentCalls(t *testing.T) {
	const n = 50
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: concurrentProgressRunner{n}, Servers: progressDirectory{}}))
	got := make(chan float64, n)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params.Progress
		},
	})
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	params := &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": "1"}}
	params.SetProgressToken("run-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("CallTool = %v, %v", res, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // only so a lost notification fails instead of hanging
	defer cancel()
	var values []float64
	for len(values) < n {
		select {
		case v := <-got:
			values = append(values, v)
		case <-ctx.Done():
			t.Fatalf("got %d of %d progress notifications: %v", len(values), n, values)
		}
	}
	slices.Sort(values)
	for i, v := range values {
		if v != float64(i+1) {
			t.Fatalf("progress values %v, want each of 1 to %d once", values, n)
		}
	}
}

// blockingRunner's runs last until their ctx ends, or release is closed.
// blockingRunner holds every run until release is closed, and tells started
// of each run it holds.
type blockingRunner struct{ started, release chan struct{} }

func (blockingRunner) End(context.Context, string)    {}
func (blockingRunner) Detach(context.Context, string) {}

func (r blockingRunner) Run(ctx context.Context, _ sandbox.Request) (*sandbox.Result, error) {
	select {
	case r.started <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.release:
		return &sandbox.Result{Result: &python.Result{}}, nil
	}
}

// TestShutdownCancelsRuns: when Run's ctx ends (SIGTERM), a run in progress
// is cancelled, instead of the shutdown waiting for its time limit.
func TestShutdownCancelsRuns(t *testing.T) {
	r := blockingRunner{started: make(chan struct{}), release: make(chan struct{})}
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: r}))
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "while True: pass"}})
	<-r.started
	cancel()
	select {
	case err := <-served:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // a hang guard: the run never ends by itself
		close(r.release)
		<-served
		t.Fatal("Run did not return after its ctx ended: it waited for the run in progress")
	}
}

// TestRunLimitAndDrain: past MaxQueued a run fails at once with a busy error;
// Drain refuses new runs, waits for the one in progress, and cancels it when
// its ctx ends first.
func TestRunLimitAndDrain(t *testing.T) {
	cfg := bridgetest.Config(t)
	cfg.MaxQueued = 1
	r := blockingRunner{started: make(chan struct{}), release: make(chan struct{})}
	s := NewServer(testOptions(cfg, Options{Runner: r}))
	cs := connect(t, s)
	first := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "wait()"}})
		first <- res
	}()
	<-r.started
	res, out := call(t, cs, map[string]any{"code": "print(1)"})
	if !res.IsError || out["error"].(map[string]any)["kind"] != "busy" || !strings.Contains(text(res), "MCP_BRIDGE_MAX_QUEUED") {
		t.Errorf("second run: %s, want a busy error naming MCP_BRIDGE_MAX_QUEUED", text(res))
	}

	ctx, cancel := context.WithCancel(t.Context())
	drained := make(chan struct{})
	go func() { s.Drain(ctx); close(drained) }()
	// Drain is waiting for the run; new runs are refused meanwhile.
	testenv.Eventually(t, "new runs refused while draining", func() bool {
		res, _ := call(t, cs, map[string]any{"code": "print(1)"})
		return strings.Contains(text(res), "shutting down")
	})
	select {
	case <-drained:
		t.Fatal("Drain returned while a run was in progress and its ctx alive")
	default:
	}
	cancel() // the grace period ends: the run is cancelled
	<-drained
	if res := <-first; res != nil && !res.IsError {
		t.Errorf("the run in progress after the grace period: %s, want it cancelled", text(res))
	}
	if n := s.Runs(); n != 0 {
		t.Errorf("%d runs counted after Drain", n)
	}
}

// TestCloseWaitsForSessionEnds: the goroutine that ends a closed MCP
// session's sandbox session is the server's: Close returns after it did.
func TestCloseWaitsForSessionEnds(t *testing.T) {
	r := &fakeRunner{}
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: r}))
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- s.Run(t.Context(), st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, map[string]any{"code": "print(1)"})
	cs.Close()
	<-served // the client went away
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ended) != 1 || !strings.HasPrefix(r.ended[0], "mcp-") {
		t.Errorf("sandbox sessions ended by the time Close returned: %q, want the MCP session's", r.ended)
	}
	if _, _, refused := s.startRun(t.Context(), &mcp.CallToolRequest{}); refused == nil {
		t.Error("a run after Close was not refused")
	}
}

// pullRunner is a runner whose run first waits for an image pull through the
// request's Wait.
type pullRunner struct{ fakeRunner }

func (p *pullRunner) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	req.Wait.Progress("pulling the sandbox image")
	req.Wait.Waited(1500 * time.Millisecond)
	return p.fakeRunner.Run(ctx, req)
}

// TestRunPythonImageWait: a run that waited for the sandbox image says how
// long, and waits no longer than its time limit.
func TestRunPythonImageWait(t *testing.T) {
	r := &pullRunner{}
	cs := connect(t, NewServer(testOptions(bridgetest.Config(t), Options{Runner: r})))
	res, _ := call(t, cs, map[string]any{"code": "print('x')", "timeout": 7})
	if got := text(res); !strings.HasPrefix(got, "[sandbox] this run first waited 1.5s for Podman to pull the sandbox image") {
		t.Errorf("text %q does not say how long the run waited", got)
	}
	if r.req.Wait.Limit != 7*time.Second {
		t.Errorf("Wait.Limit = %v, want the run's 7s", r.req.Wait.Limit)
	}
}

// TestQueueShareOfOneSession: one MCP session may have at most half of
// MaxQueued calls in progress or waiting: its next call is refused busy,
// while another session's call is taken.
func TestQueueShareOfOneSession(t *testing.T) {
	cfg := bridgetest.Config(t)
	cfg.MaxQueued = 4
	r := blockingRunner{started: make(chan struct{}), release: make(chan struct{})}
	s := NewServer(testOptions(cfg, Options{Runner: r}))
	a, b := connect(t, s), connect(t, s)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { call(t, a, map[string]any{"code": "wait()"}) })
		<-r.started
	}
	res, out := call(t, a, map[string]any{"code": "print(1)"})
	if !res.IsError || out["error"].(map[string]any)["kind"] != "busy" || !strings.Contains(text(res), "this session has 2 run_python calls") {
		t.Errorf("a's third call: %s, want a busy error saying the session has its share", text(res))
	}
	wg.Go(func() {
		if res, _ := call(t, b, map[string]any{"code": "print(1)"}); res.IsError {
			t.Errorf("b's call: %s", text(res))
		}
	})
	<-r.started // b's call reached the runner
	close(r.release)
	wg.Wait()
	if n := s.Runs(); n != 0 {
		t.Errorf("%d runs counted after every call returned", n)
	}
}
