package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// The test binary doubles as a stdio MCP server: with POOL_TEST_HELPER=1 in
// its environment it serves newTestServer on stdin/stdout. Tests start it
// through the pool as a real child process.
func TestMain(m *testing.M) {
	if os.Getenv("POOL_TEST_HELPER") == "1" {
		runHelper()
		return
	}
	if os.Getenv("POOL_TEST_PARENT") == "1" {
		runParent()
		return
	}
	os.Exit(m.Run())
}

func runHelper() {
	if f := os.Getenv("POOL_TEST_PIDFILE"); f != "" {
		pf, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(pf, os.Getpid())
			pf.Close()
		}
	}
	fmt.Fprintf(os.Stderr, "helper pid %d started\n", os.Getpid())
	if os.Getenv("POOL_TEST_EXIT_AFTER_START") == "1" {
		fmt.Fprintln(os.Stderr, "fatal: missing API key")
		os.Exit(2)
	}
	// Before serving, so that a release sent as soon as the helper has
	// answered anything is not lost.
	released := make(chan os.Signal, 1)
	notifyRelease(released)
	ctx := context.WithoutCancel(context.TODO())
	if err := newTestServer("helper", nil, signalHolder(released)).Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	if os.Getenv("POOL_TEST_IGNORE_EOF") == "1" {
		select {} // a server that does not exit when its stdin closes
	}
	os.Exit(0)
}

// runParent plays codebridge for TestChildDiesWithParent: it starts a helper
// server through a pool, prints the server's PID, and waits to be killed.
func runParent() {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	p := New(Options{})
	p.Update([]*discovery.Server{{Name: "h", Transport: discovery.Stdio, Command: exe, Args: []string{"-test.run=^$"},
		Env: map[string]string{"POOL_TEST_HELPER": "1", "POOL_TEST_IGNORE_EOF": "1", "GORACE": "atexit_sleep_ms=0"}}})
	ctx := context.WithoutCancel(context.TODO())
	res, err := p.Call(ctx, "h", "pid", nil, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("ready", res.Content[0].(*mcp.TextContent).Text) // as testenv.Child reads it
	select {}
}

type (
	echoIn struct {
		Message string `json:"message,omitempty"`
	}
	sleepIn struct {
		MS    int `json:"ms,omitempty"`
		Steps int `json:"steps,omitempty"`
		// Held makes the steps wait for events instead of the clock: each
		// step reports its progress, then waits until the server's holder
		// releases it. MS is ignored.
		Held bool `json:"held,omitempty"`
	}
	getenvIn struct {
		Name string `json:"name"`
	}
	noIn struct{}
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// A holder releases the held steps of the sleep tool (sleepIn.Held). tok is
// the call's progress token, or nil.
type holder interface {
	hold(ctx context.Context, tok any) error
}

// progressAcks is the holder of in-process servers. A held step ends when
// the test releases the call's progress token: typically its progress
// callback acknowledges each notification (ack), so every notification is
// handled before the result is sent. Steps of concurrent calls are told
// apart by their tokens; calls without a token share the token nil.
type progressAcks struct {
	m sync.Map // fmt.Sprint(progress token) -> chan struct{}
}

func (a *progressAcks) ch(tok any) chan struct{} {
	c, _ := a.m.LoadOrStore(fmt.Sprint(tok), make(chan struct{}, 16))
	return c.(chan struct{})
}

// release ends one held step of the call with progress token tok.
func (a *progressAcks) release(tok any) { a.ch(tok) <- struct{}{} }

// ack acknowledges a notification; call it from a progress callback.
func (a *progressAcks) ack(n *mcp.ProgressNotificationParams) { a.release(n.ProgressToken) }

func (a *progressAcks) hold(ctx context.Context, tok any) error {
	select {
	case <-a.ch(tok):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signalHolder is the holder of the helper process (see TestMain): one
// signal from notifyRelease releases one held step (see release). Held calls
// on one helper must not overlap.
type signalHolder chan os.Signal

// notifyRelease arranges for the helper's release signal to be sent on c.
// Where there is no such signal (Windows, which runs no helper process
// tests) nothing is ever released.
var notifyRelease = func(c chan<- os.Signal) {}

func (s signalHolder) hold(ctx context.Context, _ any) error {
	select {
	case <-s:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newTestServer returns an MCP server with the tools the tests call. opts and
// h may be nil; without a holder the sleep tool refuses held steps.
func newTestServer(name string, opts *mcp.ServerOptions, h holder) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "test"}, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("Echo: " + in.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "returns the server's process ID"},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "returns an environment variable"},
		func(_ context.Context, _ *mcp.CallToolRequest, in getenvIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				return text("<unset>"), nil, nil
			}
			return text(v), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "sleeps ms milliseconds in steps, reporting progress"},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			steps := max(in.Steps, 1)
			tok := req.Params.GetProgressToken()
			if in.Held && h == nil {
				return nil, nil, errors.New("held steps need a holder")
			}
			notify := func(i int) {
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i + 1), Total: float64(steps),
						Message: fmt.Sprint(tok),
					})
				}
			}
			for i := range steps {
				if in.Held {
					notify(i)
					if err := h.hold(ctx, tok); err != nil {
						return nil, nil, err
					}
					continue
				}
				select {
				case <-time.After(time.Duration(in.MS) * time.Millisecond / time.Duration(steps)):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				notify(i)
			}
			return text("slept"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "exits the server process"},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "fatal: simulated crash")
			os.Exit(3)
			return nil, nil, nil
		})
	return s
}

// memServers starts go-sdk servers in-process for a pool's test hook, and
// counts the starts.
type memServers struct {
	t      *testing.T
	opts   *mcp.ServerOptions
	starts atomic.Int32
	// block, if non-nil, makes each start wait for it to be closed.
	block chan struct{}
	// silent makes servers that never answer initialize.
	silent bool
	// acks releases the held steps of the sleep tool.
	acks progressAcks

	mu      sync.Mutex
	servers map[string][]*mcp.Server // by server name, in start order
}

func (m *memServers) transport(def *discovery.Server) (mcp.Transport, error) {
	m.starts.Add(1)
	if m.block != nil {
		<-m.block
	}
	ct, st := mcp.NewInMemoryTransports()
	if m.silent { // read and never answer
		c, err := st.Connect(m.t.Context())
		if err != nil {
			return nil, err
		}
		go func() {
			defer c.Close() // ends the connection's own reader too
			for {
				if _, err := c.Read(m.t.Context()); err != nil {
					return
				}
			}
		}()
		return ct, nil
	}
	s := newTestServer(def.Name, m.opts, &m.acks)
	if _, err := s.Connect(m.t.Context(), st, nil); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.servers == nil {
		m.servers = make(map[string][]*mcp.Server)
	}
	m.servers[def.Name] = append(m.servers[def.Name], s)
	m.mu.Unlock()
	return ct, nil
}

func (m *memServers) last(name string) *mcp.Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := m.servers[name]
	if len(ss) == 0 {
		return nil
	}
	return ss[len(ss)-1]
}

// newMemPool returns a pool whose servers are in-process go-sdk servers.
func newMemPool(t *testing.T, opts Options, servers ...*discovery.Server) (*Pool, *memServers) {
	t.Helper()
	m := &memServers{t: t}
	p := newTestPool(t, opts)
	p.testTransport = m.transport
	p.Update(servers)
	return p, m
}

func newTestPool(t *testing.T, opts Options) *Pool {
	t.Helper()
	if opts.Logger == nil && testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute) // a hang guard only
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// testWriter logs to t. The pool's goroutines end in Close, which runs in
// t.Cleanup, before t is done.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want text", res.Content[0])
	}
	if res.IsError {
		t.Fatalf("tool error: %s", tc.Text)
	}
	return tc.Text
}

func statusOf(t *testing.T, p *Pool, name string) ServerStatus {
	t.Helper()
	for _, s := range p.Status() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for %q", name)
	return ServerStatus{}
}

func jsonschemaObj() map[string]any { return map[string]any{"type": "object"} }

// waitInFlight waits until a request is in flight on server.
func waitInFlight(t *testing.T, p *Pool, server string) {
	t.Helper()
	testenv.Eventually(t, "a request is in flight on "+server, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		e := p.servers[server]
		return e != nil && e.cur != nil && e.cur.inFlight() > 0
	})
}
