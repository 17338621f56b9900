package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// handleRunner keeps sessions by key and hands each a handle that works
// for its owner only, as runtime/sandbox does, and records every request.
type handleRunner struct {
	mu       sync.Mutex
	reqs     []sandbox.Request
	handles  map[string]string // handle → key
	owners   map[string]string // key → owner
	detached []string
}

func (r *handleRunner) Run(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	if r.handles == nil {
		r.handles, r.owners = map[string]string{}, map[string]string{}
	}
	key := req.Session
	if req.Handle != "" {
		key = r.handles[req.Handle]
		if key == "" || r.owners[key] != req.Owner {
			res := &sandbox.Result{Result: &python.Result{ExitCode: -1}, Cause: sandbox.ErrUnknownHandle}
			return res, nil
		}
	}
	_, known := r.owners[key]
	if !known {
		r.owners[key] = req.Owner
		r.handles["H"+key] = key
	}
	return &sandbox.Result{Result: &python.Result{Stdout: key + "\n"}, Session: sandbox.SessionInfo{ID: "i", Handle: "H" + key, Run: 1, New: !known, Reason: sandbox.ReasonFirst}}, nil
}

func (r *handleRunner) End(context.Context, string) {}

func (r *handleRunner) Detach(_ context.Context, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.detached = append(r.detached, key)
}

func (r *handleRunner) last() sandbox.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

// TestSessionArgument: a call with a handle continues that session from
// another MCP session; an unknown handle starts a new session and says so,
// unless the call asked (in _meta) to continue only, when nothing runs.
func TestSessionArgument(t *testing.T) {
	r := &handleRunner{}
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: r}))
	a, b := connect(t, s), connect(t, s)
	_, first := call(t, a, map[string]any{"code": "x = 1"})
	handle := first["session"].(map[string]any)["handle"].(string)
	keyA := r.last().Session
	if !strings.HasPrefix(keyA, "mcp-") || r.last().Owner != localUser {
		t.Fatalf("first request %+v: want the MCP session's own, owned by the local user", r.last())
	}

	res, _ := call(t, b, map[string]any{"code": "print(x)", "session": handle})
	if got := r.last(); got.Handle != handle || res.IsError || text(res) != keyA+"\n" {
		t.Errorf("by handle from another MCP session: %+v, %q", got, text(res))
	}

	res, out := call(t, b, map[string]any{"code": "print(x)", "session": "NOPE"})
	sess, _ := out["session"].(map[string]any)
	if res.IsError || sess["reason"] != sandbox.ReasonUnknownHandle || !strings.Contains(text(res), "names no session of yours") ||
		!strings.Contains(text(res), sess["handle"].(string)) || !strings.HasPrefix(r.last().Session, "handle-") || !r.last().Detached {
		t.Errorf("unknown handle: %q %v, last request %+v; want a new detached session, said so with its handle", text(res), out, r.last())
	}

	n := len(r.reqs)
	res, err := b.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"code": "1", "session": "NOPE"},
		Meta: mcp.Meta{metaRequireSession: true}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "Nothing ran") || len(r.reqs) != n+1 {
		t.Errorf("unknown handle, continuing only: %v %q, %d requests (want the one refused)", err, text(res), len(r.reqs)-n)
	}

	cfg := bridgetest.Config(t)
	cfg.Sessions = false
	off := connect(t, NewServer(testOptions(cfg, Options{Runner: r})))
	if res, _ := call(t, off, map[string]any{"code": "1", "session": handle}); !res.IsError || !strings.Contains(text(res), "sessions are off") {
		t.Errorf("a handle with sessions off: %q", text(res))
	}
}

// TestEvictLeavesSandboxToHandle: an MCP session closed to make room leaves
// its sandbox session to its handle instead of ending it.
func TestEvictLeavesSandboxToHandle(t *testing.T) {
	r := &handleRunner{}
	s := NewServer(testOptions(bridgetest.Config(t), Options{Runner: r}))
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call(t, cs, map[string]any{"code": "x = 1"})
	key := r.last().Session
	if s.Busy(ss) {
		t.Error("Busy after the call returned")
	}
	s.Evict(ss)
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.detached) != 1 || r.detached[0] != key {
		t.Errorf("detached %q, want the evicted MCP session's %q", r.detached, key)
	}
}

// TestPrincipal: who a call is from, for binding handles and suspended
// runs: the token's identity over HTTP, one anonymous caller over HTTP
// without a token, the local user otherwise; and which calls are
// sessionless.
func TestPrincipal(t *testing.T) {
	header := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}
	token := func(id string) *mcp.RequestExtra {
		return &mcp.RequestExtra{Header: header, TokenInfo: &auth.TokenInfo{UserID: id}}
	}
	for _, tt := range []struct {
		name  string
		extra *mcp.RequestExtra
		want  string
	}{
		{"stdio", nil, localUser},
		{"http token", token("abc"), "http-token:abc"},
		{"another token", token("abd"), "http-token:abd"},
		{"http without a token", &mcp.RequestExtra{Header: header}, "http-anonymous"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := principal(&mcp.CallToolRequest{Extra: tt.extra}); got != tt.want {
				t.Errorf("principal = %q, want %q", got, tt.want)
			}
		})
	}
	if !strings.HasPrefix(localUser, "local-uid:") {
		t.Errorf("localUser = %q", localUser)
	}
	// A run suspended for one token's holder is not resumed by another's.
	r := &suspended{owner: principal(&mcp.CallToolRequest{Extra: token("abc")})}
	ss := &mcp.ServerSession{} // no id: as a sessionless request's
	for _, tt := range []struct {
		extra *mcp.RequestExtra
		want  bool
	}{{token("abc"), true}, {token("abd"), false}, {&mcp.RequestExtra{Header: header}, false}, {nil, false}} {
		if got := r.heldBy(&mcp.CallToolRequest{Session: ss, Extra: tt.extra}); got != tt.want {
			t.Errorf("heldBy(%+v) = %v, want %v", tt.extra, got, tt.want)
		}
	}
}
