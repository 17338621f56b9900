package lane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Directory is what a lane needs of the configured servers
// (bridge/host.Directory in production).
type Directory interface {
	// Host answers requests as it does a run's: the one path of every
	// call, read and get.
	Host(run host.Run) protocol.Handler
	// Offers lists every server's tools without starting servers that
	// have a saved tool list (see [host.Directory.Offers]).
	Offers(ctx context.Context, start bool) []host.Offer
	// Complete asks a server to complete an argument of its prompt or
	// resource template (see [host.Directory.Complete]).
	Complete(ctx context.Context, server string, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// Options are a lane's collaborators.
type Options struct {
	Dir     Directory    // required
	Logger  *slog.Logger // nil discards
	Version string       // reported to clients
	// OnClient, if set, receives the capabilities each client declared,
	// once per MCP session (bridge/pool's SetClientCapabilities).
	OnClient func(*mcp.ClientCapabilities)
	// PlainNames serves each tool and prompt of the tools lane under its
	// own name where it can ([PlainName]), not [Name]'s.
	PlainNames bool
}

// sessions keeps, for each MCP session of a lane, what its calls share:
// the questions to its person (and what they allowed for the session), and
// the random id the audit log records its calls under.
type sessions struct {
	onClient func(*mcp.ClientCapabilities)
	lane     string // names the lane in the ids

	mu sync.Mutex // protects following
	m  map[*mcp.ServerSession]*session
	wg sync.WaitGroup // the goroutines forgetting ended sessions
}

type session struct {
	id  string
	ask *elicit.Session
}

// of returns what ss's calls share; a request without an MCP session
// (tests calling a handler directly) gets a session that cannot ask.
func (s *sessions) of(ss *mcp.ServerSession) *session {
	if ss == nil {
		return &session{id: s.lane + "-" + rand.Text()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.m[ss]; ok {
		return x
	}
	if s.m == nil {
		s.m = map[*mcp.ServerSession]*session{}
	}
	x := &session{id: s.lane + "-" + rand.Text()[:12], ask: elicit.ForClient(ss)}
	s.m[ss] = x
	if ip := ss.InitializeParams(); s.onClient != nil && ip != nil {
		s.onClient(ip.Capabilities)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.Wait()
		s.mu.Lock()
		delete(s.m, ss)
		s.mu.Unlock()
	}()
	return x
}

// hostFor is the host of one request of req's MCP session: its questions
// go to that session's client, and so does the downstream server's
// progress on the request, when the client asked for progress.
func hostFor(ctx context.Context, dir Directory, ss *session, req mcp.Request, token any) protocol.Handler {
	run := host.Run{Session: ss.id, Ask: ss.ask}
	if sess, ok := req.GetSession().(*mcp.ServerSession); ok && token != nil && sess != nil {
		var mu sync.Mutex
		run.Progress = func(message string, progress, total float64) {
			mu.Lock()
			defer mu.Unlock()
			sess.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
		}
	}
	return dir.Host(run)
}

// callTool calls server's tool through h, and turns what code would get
// into what a client gets: the server's result as it is (secrets masked),
// or a refusal (policy, quarantine, a declined approval, a limit) as a
// tool result with isError and the same message, which starts with its
// reason code. A cancelled call is a protocol-level end.
func callTool(ctx context.Context, h protocol.Handler, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := h.CallTool(ctx, protocol.CallToolParams{Server: server, Tool: &tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return refusal(err), nil
	}
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal(res.RawMessage, out); err != nil {
		return nil, fmt.Errorf("decoding the result of %s.%s: %w", server, tool, err)
	}
	if out.Content == nil {
		out.Content = []mcp.Content{} // "content" is required, even empty
	}
	return out, nil
}

// refusal is a tool result saying why a request was refused: "code: message".
func refusal(err error) *mcp.CallToolResult {
	msg := err.Error()
	if e, ok := errors.AsType[*protocol.Error](err); ok {
		msg = string(e.Code) + ": " + e.Message
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// orDiscard is l, or a logger that discards.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
