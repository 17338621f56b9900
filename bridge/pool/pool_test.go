package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

func memDef(name string) *discovery.Server {
	return &discovery.Server{Name: name, Source: "/etc/test.json", Transport: discovery.Stdio, Command: "unused-" + name}
}

func TestLazyStartAndTools(t *testing.T) {
	p, m := newMemPool(t, Options{}, memDef("a"), memDef("b"))
	if got := m.starts.Load(); got != 0 {
		t.Fatalf("starts after Update = %d, want 0", got)
	}
	for _, st := range p.Status() {
		if st.State != StateConfigured {
			t.Errorf("%s: state %q, want %q", st.Name, st.State, StateConfigured)
		}
	}
	tools, err := p.Tools(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"crash", "echo", "getenv", "pid", "sleep"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if _, err := p.Tools(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := m.starts.Load(); got != 1 {
		t.Errorf("starts = %d, want 1", got)
	}
	st := statusOf(t, p, "a")
	if st.State != StateRunning || st.Tools != 5 || st.LastUsed.IsZero() {
		t.Errorf("status of a = %+v, want running with 5 tools", st)
	}
	if st := statusOf(t, p, "b"); st.State != StateConfigured {
		t.Errorf("status of b = %+v, want configured", st)
	}
}

func TestCallArgs(t *testing.T) {
	p, _ := newMemPool(t, Options{}, memDef("a"))
	tests := []struct {
		name string
		args any
		want string
	}{
		{"map", map[string]any{"message": "hi"}, "Echo: hi"},
		{"raw", json.RawMessage(`{"message":"raw"}`), "Echo: raw"},
		{"struct", echoIn{Message: "st"}, "Echo: st"},
		{"nil", nil, "Echo: "},
		{"empty raw", json.RawMessage(nil), "Echo: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.Call(t.Context(), "a", "echo", tt.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	disabled := memDef("off")
	disabled.Disabled = true
	p, m := newMemPool(t, Options{}, memDef("a"), disabled)

	_, err := p.Call(t.Context(), "nope", "echo", nil, nil)
	if !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), "configured servers: a, off") {
		t.Errorf("unknown server: got %v", err)
	}
	_, err = p.Tools(t.Context(), "nope")
	if !errors.Is(err, ErrUnknownServer) {
		t.Errorf("Tools of unknown server: got %v", err)
	}
	_, err = p.Call(t.Context(), "a", "Echo", nil, nil)
	if !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), "its tools are: crash, echo, getenv, pid, sleep") {
		t.Errorf("unknown tool: got %v", err)
	}
	_, err = p.Call(t.Context(), "off", "echo", nil, nil)
	if !errors.Is(err, ErrDisabled) || !strings.Contains(err.Error(), `set "disabled": false`) {
		t.Errorf("disabled: got %v", err)
	}
	if st := statusOf(t, p, "off"); st.State != StateDisabled {
		t.Errorf("disabled server state = %q", st.State)
	}
	if got := m.starts.Load(); got != 1 {
		t.Errorf("starts = %d, want 1 (only a)", got)
	}
	// A tool error is a result, not an error.
	res, err := p.Call(t.Context(), "a", "echo", map[string]any{"message": 3}, nil)
	if err != nil || !res.IsError {
		t.Errorf("bad arguments: got %+v, %v; want a result with IsError", res, err)
	}
}

func TestConcurrentFirstUseStartsOnce(t *testing.T) {
	// In a bubble, synctest.Wait tells when every caller is blocked waiting
	// for the one start.
	synctest.Test(t, func(t *testing.T) {
		p, m := newMemPool(t, Options{}, memDef("a"))
		m.block = make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for i := range 10 {
			wg.Go(func() {
				res, err := p.Call(t.Context(), "a", "echo", map[string]any{"message": fmt.Sprint(i)}, nil)
				if err == nil && resultText(t, res) != fmt.Sprint("Echo: ", i) {
					err = fmt.Errorf("call %d: got %q", i, resultText(t, res))
				}
				errs <- err
			})
		}
		synctest.Wait()
		if got := m.starts.Load(); got != 1 {
			t.Errorf("starts while every caller waits = %d, want 1", got)
		}
		if st := statusOf(t, p, "a"); st.State != StateStarting {
			t.Errorf("state while starting = %q", st.State)
		}
		close(m.block)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if got := m.starts.Load(); got != 1 {
			t.Errorf("starts = %d, want 1", got)
		}
	})
}

func TestCallerGivingUpDoesNotCancelStart(t *testing.T) {
	p, m := newMemPool(t, Options{}, memDef("a"))
	m.block = make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Tools(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
	close(m.block)
	if _, err := p.Tools(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := m.starts.Load(); got != 1 {
		t.Errorf("starts = %d, want 1", got)
	}
}

func TestProgressRouting(t *testing.T) {
	p, m := newMemPool(t, Options{}, memDef("a"))
	const calls, steps = 6, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	tokens := make(map[any]int) // token -> call
	for i := range calls {
		wg.Go(func() {
			var got []*mcp.ProgressNotificationParams
			var gmu sync.Mutex
			// Held steps: each waits until its notification has been seen
			// here, so all of them arrive before the result.
			res, err := p.Call(t.Context(), "a", "sleep", map[string]any{"held": true, "steps": steps},
				func(n *mcp.ProgressNotificationParams) {
					gmu.Lock()
					got = append(got, n)
					gmu.Unlock()
					m.acks.ack(n)
				})
			if err != nil {
				t.Error(err)
				return
			}
			resultText(t, res)
			gmu.Lock()
			defer gmu.Unlock()
			if len(got) != steps {
				t.Errorf("call %d: %d progress notifications, want %d", i, len(got), steps)
				return
			}
			for j, n := range got {
				if n.ProgressToken != got[0].ProgressToken || n.Message != fmt.Sprint(n.ProgressToken) {
					t.Errorf("call %d got another call's progress: %v and %v", i, n.ProgressToken, got[0].ProgressToken)
				}
				if n.Progress != float64(j+1) || n.Total != steps {
					t.Errorf("call %d: notification %d is %v/%v", i, j, n.Progress, n.Total)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if other, dup := tokens[got[0].ProgressToken]; dup {
				t.Errorf("calls %d and %d share progress token %v", other, i, got[0].ProgressToken)
			}
			tokens[got[0].ProgressToken] = i
		})
	}
	wg.Wait()
	// A call without a progress function sends no token.
	if _, err := p.Call(t.Context(), "a", "sleep", map[string]any{"ms": 1}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestToolListChanged(t *testing.T) {
	p, m := newMemPool(t, Options{}, memDef("a"))
	if _, err := p.Tools(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	m.last("a").AddTool(&mcp.Tool{Name: "late", InputSchema: jsonschemaObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("late"), nil })
	testenv.Eventually(t, "the new tool is listed", func() bool {
		tools, err := p.Tools(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		return len(tools) == 6
	})
	// Even without the notification, Call looks again before refusing a name.
	m.last("a").AddTool(&mcp.Tool{Name: "later", InputSchema: jsonschemaObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("later"), nil })
	res, err := p.Call(t.Context(), "a", "later", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "later" {
		t.Errorf("got %q", got)
	}
}

func TestPagination(t *testing.T) {
	m := &memServers{t: t, opts: &mcp.ServerOptions{PageSize: 2}}
	p := newTestPool(t, Options{})
	p.testTransport = m.transport
	p.Update([]*discovery.Server{memDef("a")})
	tools, err := p.Tools(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 5 {
		t.Errorf("got %d tools over pages of 2, want 5", len(tools))
	}
}

// TestTimeouts runs in synctest bubbles: a timeout passes only once every
// goroutine is blocked, so a loaded machine cannot make a timeout meant for
// one call expire on the next.
func TestTimeouts(t *testing.T) {
	t.Run("call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, _ := newMemPool(t, Options{CallTimeout: 100 * time.Millisecond}, memDef("a"))
			_, err := p.Call(t.Context(), "a", "sleep", map[string]any{"ms": 5000}, nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want deadline exceeded", err)
			}
			t.Log(err)
			// The server is still usable.
			if _, err := p.Call(t.Context(), "a", "echo", nil, nil); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("caller deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, _ := newMemPool(t, Options{}, memDef("a"))
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if _, err := p.Call(ctx, "a", "sleep", map[string]any{"ms": 5000}, nil); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want deadline exceeded", err)
			}
		})
	})
	t.Run("connect", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, m := newMemPool(t, Options{ConnectTimeout: 100 * time.Millisecond}, memDef("a"))
			m.silent = true
			_, err := p.Tools(t.Context(), "a")
			var se *StartError
			if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) || se.Server != "a" {
				t.Fatalf("got %v, want a *StartError wrapping deadline exceeded", err)
			}
			t.Log(err)
			st := statusOf(t, p, "a")
			if st.State != StateFailed || !strings.Contains(st.Err, "initialize") {
				t.Errorf("status = %+v, want failed", st)
			}
		})
	})
}

var jsonschemaObject = jsonschemaObj()

func TestUpdateInMemory(t *testing.T) {
	a, b, c := memDef("a"), memDef("b"), memDef("c")
	p, m := newMemPool(t, Options{}, a, b, c)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := p.Tools(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	// A call in flight on b, which is about to change, held until the
	// update has landed.
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	inflight := make(chan result, 1)
	go func() {
		res, err := p.Call(t.Context(), "b", "sleep", map[string]any{"held": true}, nil)
		inflight <- result{res, err}
	}()
	waitInFlight(t, p, "b")

	a2 := *a
	a2.Description = "new description"
	a2.Source = "/etc/other.json"
	b2 := *b
	b2.Args = []string{"--changed"}
	p.Update([]*discovery.Server{&a2, &b2}) // c removed

	m.acks.release(nil)
	r := <-inflight
	if r.err != nil {
		t.Fatalf("call in flight during Update: %v", r.err)
	}
	resultText(t, r.res)

	if st := statusOf(t, p, "a"); st.State != StateRunning || st.Description != "new description" || st.Source != "/etc/other.json" {
		t.Errorf("a after a description change: %+v, want running with the new description", st)
	}
	if st := statusOf(t, p, "b"); st.State != StateConfigured {
		t.Errorf("b after a change: state %q, want configured", st.State)
	}
	if _, err := p.Tools(t.Context(), "c"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("removed server: got %v", err)
	}
	before := m.starts.Load()
	if _, err := p.Call(t.Context(), "b", "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(t.Context(), "a", "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := m.starts.Load() - before; got != 1 {
		t.Errorf("starts after the update = %d, want 1 (b only)", got)
	}
}

func TestUpdateDuringStart(t *testing.T) {
	a := memDef("a")
	p, m := newMemPool(t, Options{}, a)
	m.block = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(t.Context(), "a", "echo", nil, nil)
		done <- err
	}()
	testenv.Eventually(t, "the start begins", func() bool { return m.starts.Load() == 1 })
	a2 := *a
	a2.Command = "other"
	p.Update([]*discovery.Server{&a2})
	close(m.block)
	if err := <-done; err != nil {
		t.Fatalf("call waiting for a start the update superseded: %v", err)
	}
	if got := m.starts.Load(); got != 2 {
		t.Errorf("starts = %d, want 2 (the superseded one and the new one)", got)
	}
}

// TestSameProcessCoversAllFields fails when discovery.Server gains a field:
// decide whether a change to it restarts the server, and update discovery.Server.SameEndpoint.
func TestSameProcessCoversAllFields(t *testing.T) {
	base := discovery.Server{Name: "a", Transport: discovery.Stdio, Command: "x", Args: []string{"1"},
		Env: map[string]string{"K": "V"}, Cwd: "/", URL: "u", Headers: map[string]string{"H": "V"}}
	restarts := map[string]func(*discovery.Server){
		"Name":      func(s *discovery.Server) { s.Name = "b" },
		"Disabled":  func(s *discovery.Server) { s.Disabled = true },
		"Transport": func(s *discovery.Server) { s.Transport = discovery.SSE },
		"Command":   func(s *discovery.Server) { s.Command = "y" },
		"Args":      func(s *discovery.Server) { s.Args = []string{"2"} },
		"Env":       func(s *discovery.Server) { s.Env = map[string]string{"K": "W"} },
		"Cwd":       func(s *discovery.Server) { s.Cwd = "/tmp" },
		"URL":       func(s *discovery.Server) { s.URL = "v" },
		"Headers":   func(s *discovery.Server) { s.Headers = nil },
		"OAuth":     func(s *discovery.Server) { s.OAuth = &discovery.OAuth{ClientID: "c"} },
		// Its next listing is checked under the new trust.
		"Trusted": func(s *discovery.Server) { s.Trusted = true },
		// The limit is the running session's: the new one takes the new limit.
		"MaxConcurrency": func(s *discovery.Server) { s.MaxConcurrency = 2 },
	}
	keeps := map[string]func(*discovery.Server){
		"Source":      func(s *discovery.Server) { s.Source = "/other" },
		"Description": func(s *discovery.Server) { s.Description = "new" },
		"Tools":       func(s *discovery.Server) { s.Tools = discovery.ToolPolicy{Deny: []string{"x"}, ReadOnly: new(true)} },
		// Secrets are written into the fields above: a changed secret
		// changes one of those, which restarts the server.
		"Secrets": func(s *discovery.Server) { s.Secrets = secret.List{secret.New("changed")} },
		// Refusals of a server's questions are checked when it asks.
		"NoElicitation": func(s *discovery.Server) { s.NoElicitation = true },
		"NoSampling":    func(s *discovery.Server) { s.NoSampling = true },
	}
	if n := reflect.TypeFor[discovery.Server]().NumField(); n != len(restarts)+len(keeps) {
		t.Fatalf("discovery.Server has %d fields, the test knows %d: classify the new one", n, len(restarts)+len(keeps))
	}
	for f, change := range restarts {
		s := base
		change(&s)
		if base.SameEndpoint(&s) {
			t.Errorf("a change to %s does not restart the server", f)
		}
	}
	for f, change := range keeps {
		s := base
		change(&s)
		if !base.SameEndpoint(&s) {
			t.Errorf("a change to %s restarts the server", f)
		}
	}
}

func TestAllTools(t *testing.T) {
	off := memDef("off")
	off.Disabled = true
	bad := &discovery.Server{Name: "bad", Transport: "carrier-pigeon"}
	p, _ := newMemPool(t, Options{}, memDef("a"), memDef("b"), memDef("c"), off)
	p.testTransport = func(def *discovery.Server) (mcp.Transport, error) {
		if def.Name == "bad" {
			return nil, errors.New("no such transport")
		}
		m := &memServers{t: t}
		return m.transport(def)
	}
	p.Update([]*discovery.Server{memDef("a"), memDef("b"), memDef("c"), off, bad})
	tools, errs := p.AllTools(t.Context(), 2)
	if len(tools) != 3 || len(tools["a"]) != 5 {
		t.Errorf("tools of %d servers, want 3 (a, b, c)", len(tools))
	}
	if len(errs) != 1 || errs["bad"] == nil {
		t.Errorf("errs = %v, want one for bad", errs)
	}
	var se *StartError
	if !errors.As(errs["bad"], &se) {
		t.Errorf("error for bad is %T, want *StartError", errs["bad"])
	}
	// LastFailure: the failed start for bad, nothing for running or unknown servers.
	if err := p.LastFailure("bad"); !errors.As(err, &se) || se.Server != "bad" {
		t.Errorf("LastFailure(bad) = %v; want its StartError", err)
	}
	for _, name := range []string{"a", "off", "nowhere"} {
		if err := p.LastFailure(name); err != nil {
			t.Errorf("LastFailure(%s) = %v; want nil", name, err)
		}
	}
}

func TestClosed(t *testing.T) {
	p, _ := newMemPool(t, Options{}, memDef("a"))
	if _, err := p.Tools(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Tools(t.Context(), "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v", err)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestIdleStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m := newMemPool(t, Options{IdleTimeout: 10 * time.Minute}, memDef("a"))
		if _, err := p.Call(t.Context(), "a", "echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if st := statusOf(t, p, "a"); st.State != StateRunning {
			t.Fatalf("after 9 idle minutes: %q, want running", st.State)
		}
		// Use resets the clock.
		if _, err := p.Call(t.Context(), "a", "echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if st := statusOf(t, p, "a"); st.State != StateRunning {
			t.Fatalf("9 minutes after the last use: %q, want running", st.State)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if st := statusOf(t, p, "a"); st.State != StateConfigured {
			t.Fatalf("after 14 idle minutes: %q, want configured (stopped)", st.State)
		}
		if _, err := p.Call(t.Context(), "a", "echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := m.starts.Load(); got != 2 {
			t.Errorf("starts = %d, want 2", got)
		}
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNoIdleStop(t *testing.T) {
	for _, idle := range []time.Duration{0, -1} {
		t.Run(idle.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, _ := newMemPool(t, Options{IdleTimeout: idle}, memDef("a"))
				if _, err := p.Tools(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(24 * time.Hour)
				synctest.Wait()
				if st := statusOf(t, p, "a"); st.State != StateRunning {
					t.Errorf("state = %q, want running: IdleTimeout %v never stops", st.State, idle)
				}
				if err := p.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/root", "AWS_SECRET_ACCESS_KEY=s3cr3t", "LC_ALL=C", "npm_config_cache=/c", "NODE_OPTIONS=--inspect", "GITHUB_TOKEN=x", "USER=me"}
	got := childEnv(parent, map[string]string{"GITHUB_TOKEN": "from-config", "PATH": "/opt/bin"})
	want := []string{"GITHUB_TOKEN=from-config", "HOME=/root", "LC_ALL=C", "PATH=/opt/bin", "USER=me", "npm_config_cache=/c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("childEnv (-want +got):\n%s", diff)
	}
}

func TestLineRing(t *testing.T) {
	r := newLineRing(3, nil)
	fmt.Fprint(r, "one\ntwo\nthr")
	fmt.Fprint(r, "ee\nfour\nfive\nhalf")
	if diff := cmp.Diff([]string{"three", "four", "five", "half"}, r.Tail()); diff != "" {
		t.Errorf("Tail (-want +got):\n%s", diff)
	}
	long := strings.Repeat("x", 2*maxLineLen) + "\n"
	fmt.Fprint(r, long)
	if tail := r.Tail(); len(tail[len(tail)-1]) != maxLineLen {
		t.Errorf("a long line is kept at %d bytes, want %d", len(tail[len(tail)-1]), maxLineLen)
	}
}

func TestAllToolsDeadline(t *testing.T) {
	// In a bubble the deadline passes only once every goroutine is blocked:
	// after a has answered, however slow the machine, while slow never will.
	synctest.Test(t, func(t *testing.T) {
		fast := &memServers{t: t}
		silent := &memServers{t: t, silent: true}
		p := newTestPool(t, Options{})
		p.testTransport = func(def *discovery.Server) (mcp.Transport, error) {
			if def.Name == "slow" {
				return silent.transport(def)
			}
			return fast.transport(def)
		}
		p.Update([]*discovery.Server{memDef("a"), memDef("slow")})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		tools, errs := p.AllTools(ctx, 0)
		if len(tools["a"]) != 5 {
			t.Errorf("tools of a: %d", len(tools["a"]))
		}
		if !errors.Is(errs["slow"], context.DeadlineExceeded) {
			t.Errorf("error for slow = %v, want deadline exceeded", errs["slow"])
		}
		if st := statusOf(t, p, "slow"); st.State != StateStarting {
			t.Errorf("slow: %q, want still starting (up to ConnectTimeout)", st.State)
		}
	})
}

// TestOnTools: the hook sees each fresh listing (the first, and the one after
// tools/list_changed), not the cached ones; Running says when a use starts
// nothing.
func TestOnTools(t *testing.T) {
	var (
		mu    sync.Mutex
		seen  []int
		defs  []*discovery.Server
		fresh = make(chan struct{}, 8)
	)
	p, m := newMemPool(t, Options{OnTools: func(def *discovery.Server, tools []*mcp.Tool, _ string) {
		mu.Lock()
		seen = append(seen, len(tools))
		defs = append(defs, def)
		mu.Unlock()
		fresh <- struct{}{}
	}}, memDef("a"))
	if p.Running("a") {
		t.Fatal("Running before any use")
	}
	for range 3 {
		if _, err := p.Tools(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
	}
	<-fresh
	if !p.Running("a") {
		t.Error("not Running after a listing")
	}
	// The server's tools/list_changed alone brings the new list to OnTools:
	// nothing asks for the tools here.
	m.last("a").AddTool(&mcp.Tool{Name: "late", InputSchema: jsonschemaObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("late"), nil })
	select {
	case <-fresh:
	case <-time.After(time.Minute): // a hang guard, not a timing check
		t.Fatal("OnTools never saw the changed list: tools/list_changed did not list the tools again")
	}
	if tools, err := p.Tools(t.Context(), "a"); err != nil || len(tools) != 6 {
		t.Fatalf("Tools after the change = %d tools, %v; want 6", len(tools), err)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 5 || seen[1] != 6 || defs[0].Name != "a" {
		t.Errorf("OnTools saw lists of %v tools; want [5 6] (three uses, one fresh listing, then the changed one)", seen)
	}
}

// earlyNotice is a client connection that hands the client a
// tools/list_changed before the server's answer to initialize, as a server
// that announces its tools while it starts may: the notification arrives
// while the session is still being set up.
type earlyNotice struct {
	mcp.Connection
	sent atomic.Bool
}

func (c *earlyNotice) Read(ctx context.Context) (jsonrpc.Message, error) {
	if !c.sent.Swap(true) {
		return &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}, nil
	}
	return c.Connection.Read(ctx)
}

type earlyNoticeTransport struct{ mcp.Transport }

func (t earlyNoticeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &earlyNotice{Connection: c}, nil
}

// TestToolListChangedWhileStarting: a change announced before the session is
// set up is left to the first listing; it used to start a background listing
// on a session not yet there (a nil dereference that ended codebridge).
func TestToolListChangedWhileStarting(t *testing.T) {
	lists := make(chan int, 8)
	p, m := newMemPool(t, Options{OnTools: func(_ *discovery.Server, tools []*mcp.Tool, _ string) { lists <- len(tools) }}, memDef("a"))
	p.testTransport = func(def *discovery.Server) (mcp.Transport, error) {
		tr, err := m.transport(def)
		return earlyNoticeTransport{tr}, err
	}
	tools, err := p.Tools(t.Context(), "a")
	if err != nil || len(tools) != 5 {
		t.Fatalf("Tools = %d tools, %v; want 5", len(tools), err)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	close(lists)
	var seen []int
	for n := range lists {
		seen = append(seen, n)
	}
	if len(seen) != 1 {
		t.Errorf("OnTools saw %v; want the one first listing", seen)
	}
}
