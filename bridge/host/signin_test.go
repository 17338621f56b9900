package host

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// signInPool is a downstream whose one server, hosted, needs a sign-in
// until signed is set: starting it fails as bridge/oauth's handler makes it.
type signInPool struct {
	recordingPool
	signed atomic.Bool
}

func (p *signInPool) needs() error {
	if p.signed.Load() {
		return nil
	}
	return &pool.StartError{Server: "hosted", Err: &oauth.AuthRequiredError{Server: "hosted", Reason: "no sign-in is stored"}}
}

func (p *signInPool) Tools(ctx context.Context, server string) ([]*mcp.Tool, error) {
	if err := p.needs(); err != nil {
		return nil, err
	}
	return p.recordingPool.Tools(ctx, server)
}

func (p *signInPool) ReadResource(_ context.Context, _, uri string) (*mcp.ReadResourceResult, error) {
	if err := p.needs(); err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "read"}}}, nil
}

// agentURL is an agent's client that declared elicitation (URL mode too
// when url is set), connected in memory; it answers each question with
// answer, once release (if any) lets it, and sends each question and each
// completion notice to its channels.
type agentURL struct {
	answer    string
	release   chan struct{}
	asked     chan *mcp.ElicitParams
	completed chan string
}

func (a *agentURL) connect(t *testing.T, url bool) *elicit.Session {
	t.Helper()
	caps := &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	if url {
		caps.URL = &mcp.URLElicitationCapabilities{}
	}
	ss := bridgetest.Agent(t, "2025-11-25", &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: caps},
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.asked <- r.Params
			if a.release != nil {
				<-a.release
			}
			return &mcp.ElicitResult{Action: a.answer}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			a.completed <- r.Params.ElicitationID
		},
	})
	return elicit.ForClient(ss)
}

// signInDirectory is a directory in front of a signInPool, auditing to a
// temporary folder, whose sign-in asks the person to open the authorization
// URL and, if they agree, signs the pool in. signIns counts the sign-ins.
func signInDirectory(t *testing.T) (*Directory, *signInPool, *atomic.Int32) {
	fp := &signInPool{}
	d := newDirectory(fp, 1<<20, nil)
	d.Update(&discovery.Config{Servers: []*discovery.Server{{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}}})
	d.audit = audit.New(t.TempDir(), audit.Options{})
	var signIns atomic.Int32
	d.signIn = func(ctx context.Context, def *discovery.Server, ask func(context.Context, string) error) error {
		signIns.Add(1)
		if err := ask(ctx, "https://auth.example/authorize?state=s1"); err != nil {
			return err
		}
		fp.signed.Store(true)
		return nil
	}
	return d, fp, &signIns
}

// auditLines is what d's audit recorded: kind (sign_in, or the tool), outcome, answer.
func auditLines(t *testing.T, d *Directory) []string {
	t.Helper()
	recs, _, err := audit.Tail(filepath.Dir(d.audit.Path()), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, strings.Join([]string{r.Kind + r.Tool, r.Outcome, r.Confirm}, " "))
	}
	return out
}

// TestSignInThroughClient: a call or a read of a server that needs a
// sign-in, from code run by a client that declared URL-mode elicitation,
// asks the person to open the sign-in page, naming the server; accepted,
// the sign-in runs, the client is told it is complete, and the request
// gets its result. Declined or dismissed, it fails with auth_required
// naming codebridge login. A client without URL mode is not asked, and
// gets auth_required as before. Each question is audited.
func TestSignInThroughClient(t *testing.T) {
	tests := []struct {
		name    string
		url     bool   // the client declared URL mode
		answer  string // the person's action
		method  string
		says    string // in the error; "" for a result
		signIns int32
		audit   []string
	}{
		{"accept call", true, "accept", "call_tool", "", 1, []string{"sign_in ok accept", "echo ok "}},
		{"accept read", true, "accept", "read_resource", "", 1, []string{"sign_in ok accept", "resourcedemo://r ok "}},
		{"decline", true, "decline", "call_tool", "the person declined to sign in when asked): run `codebridge login hosted`", 1,
			[]string{"sign_in auth_required decline", "echo auth_required "}},
		{"cancel", true, "cancel", "read_resource", "dismissed the request to sign in", 1,
			[]string{"sign_in auth_required cancel", "resourcedemo://r auth_required "}},
		{"no URL mode", false, "accept", "call_tool", "(no sign-in is stored): run `codebridge login hosted`", 0, []string{"echo auth_required "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, fp, signIns := signInDirectory(t)
			a := &agentURL{answer: tt.answer, asked: make(chan *mcp.ElicitParams, 2), completed: make(chan string, 2)}
			h := d.host(Run{Session: "s", Run: 1, Ask: a.connect(t, tt.url)})
			params := map[string]any{"server": "hosted", "tool": "echo", "arguments": map[string]any{}}
			if tt.method == "read_resource" {
				params = map[string]any{"server": "hosted", "uri": "demo://r"}
			}
			_, err := hostCall(t, h, tt.method, params)
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("%s after signing in: %v", tt.method, err)
			case tt.says != "" && (protocol.CodeOf(err) != protocol.CodeAuthRequired || !strings.Contains(err.Error(), tt.says)):
				t.Fatalf("%s: %v; want auth_required saying %q", tt.method, err, tt.says)
			}
			if got := signIns.Load(); got != tt.signIns || fp.signed.Load() != (tt.says == "") {
				t.Errorf("%d sign-ins, signed in %v", got, fp.signed.Load())
			}
			if !tt.url {
				if len(a.asked) != 0 {
					t.Errorf("a client without URL mode was asked %+v", <-a.asked)
				}
			} else {
				q := <-a.asked
				if q.Mode != "url" || q.URL != "https://auth.example/authorize?state=s1" || q.ElicitationID == "" ||
					!strings.Contains(q.Message, `MCP server "hosted"`) || !strings.Contains(q.Message, "codebridge login hosted") {
					t.Errorf("the client was asked %+v", q)
				}
				if tt.says == "" {
					if id := <-a.completed; id != q.ElicitationID {
						t.Errorf("the completion named %q, want %q", id, q.ElicitationID)
					}
				}
			}
			if got := auditLines(t, d); strings.Join(got, "|") != strings.Join(tt.audit, "|") {
				t.Errorf("audit %q, want %q", got, tt.audit)
			}
		})
	}
}

// TestOneSignInAtATime: calls that need the same sign-in while it runs,
// from two runs, wait for it: the person is asked once, and both calls get
// their result.
func TestOneSignInAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, fp, signIns := signInDirectory(t)
		a := &agentURL{answer: "accept", release: make(chan struct{}), asked: make(chan *mcp.ElicitParams, 2), completed: make(chan string, 2)}
		ask := a.connect(t, true)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		call := func(i int) {
			h := d.host(Run{Session: "s", Run: i + 1, Ask: ask})
			_, errs[i] = hostCall(t, h, "call_tool", map[string]any{"server": "hosted", "tool": "echo", "arguments": map[string]any{}})
		}
		wg.Go(func() { call(0) })
		<-a.asked // the first call asks
		wg.Go(func() { call(1) })
		synctest.Wait() // the second waits for the first's sign-in
		close(a.release)
		wg.Wait()
		if errors.Join(errs...) != nil || signIns.Load() != 1 || !fp.signed.Load() || len(a.asked) != 0 {
			t.Errorf("errors %v, %d sign-ins, %d more questions; want two results from one sign-in", errs, signIns.Load(), len(a.asked))
		}
		if got := fp.callSizes(); len(got) != 2 {
			t.Errorf("%d calls reached the server, want 2", len(got))
		}
	})
}

// TestSignInsJoin: a request that failed before the last sign-in to its
// server succeeded is made again without a new sign-in; one begun after
// it, or after a failed one, starts a new sign-in.
func TestSignInsJoin(t *testing.T) {
	var s signIns
	before := time.Now()
	op, first := s.join("hosted", before)
	if !first {
		t.Fatal("the first sign-in is not first")
	}
	s.finish("hosted", op, nil)
	if op, first := s.join("hosted", before); first || op.err != nil {
		t.Errorf("a request begun before the sign-in: first %v, err %v; want the done sign-in", first, op.err)
	}
	op, first = s.join("hosted", time.Now())
	if !first {
		t.Fatal("a request begun after the sign-in does not sign in again")
	}
	s.finish("hosted", op, errors.New("declined"))
	if _, first := s.join("other", before); !first {
		t.Error("another server's sign-in is not first")
	}
}

// TestSignInTimeout: a person who agrees to sign in but does not finish
// before the run's time limit leaves the code auth_required, in time to act
// on it, and a call waiting for that sign-in gets the same.
func TestSignInTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, fp, _ := signInDirectory(t)
		d.signIn = func(ctx context.Context, def *discovery.Server, ask func(context.Context, string) error) error {
			if err := ask(ctx, "https://auth.example/authorize?state=s1"); err != nil {
				return err
			}
			<-ctx.Done() // the redirect never comes
			return ctx.Err()
		}
		a := &agentURL{answer: "accept", asked: make(chan *mcp.ElicitParams, 2), completed: make(chan string, 2)}
		h := d.host(Run{Session: "s", Run: 1, Ask: a.connect(t, true), Deadline: time.Now().Add(time.Minute)})
		_, err := h.CallTool(t.Context(), protocol.CallToolParams{Server: "hosted", Tool: new("echo")})
		if protocol.CodeOf(err) != protocol.CodeAuthRequired || !strings.Contains(err.Error(), "no sign-in finished within the run's time limit") ||
			!strings.Contains(err.Error(), "codebridge login hosted") {
			t.Errorf("CallTool: %v; want auth_required for the time limit, naming codebridge login", err)
		}
		if !time.Now().Before(h.deadline) || fp.signed.Load() || len(a.asked) != 1 || len(a.completed) != 0 {
			t.Errorf("gave up %v before the deadline, signed in %v, %d questions, %d completions", h.deadline.Sub(time.Now()), fp.signed.Load(), len(a.asked), len(a.completed))
		}
		if got := auditLines(t, d); strings.Join(got, "|") != "sign_in auth_required accept|echo auth_required " {
			t.Errorf("audit %q", got)
		}
	})
}
