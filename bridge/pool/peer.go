package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Peer answers, for one tool call, what the downstream server asks of its
// client while the call is in flight: the agent's client, reached through
// the run that made the call (bridge/host names the server and applies
// policy). A method returns [ErrNotForwarded] for what it does not pass on.
type Peer interface {
	// Principal names the MCP session whose client the peer reaches:
	// peers of one MCP session share it, peers of others never do.
	Principal() string
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	ListRoots(ctx context.Context) (*mcp.ListRootsResult, error)
	Log(ctx context.Context, p *mcp.LoggingMessageParams) error
}

// ErrNotForwarded is returned to a downstream server whose request to its
// client has no one to answer it: no call of a run is in flight to it.
var ErrNotForwarded = errors.New("codebridge has no call in flight to this server from an agent that could answer")

// ErrSessionsShareServer is returned to a downstream server whose request
// to its client could belong to calls made for more than one MCP session
// (agent clients of `serve --http`): the request does not say which call
// it serves, so codebridge passes it to none of them.
var ErrSessionsShareServer = errors.New("codebridge has calls of more than one MCP session in flight to this server, and a request does not say which call it serves, so it passes it to none of them; it can when this server's calls in flight come from one MCP session")

// SetClientCapabilities makes the pool declare, to the servers it starts
// from now on, the client capabilities of the agent's client that it can
// pass through: elicitation (the same modes), sampling and roots. Only the
// first call counts: over stdio there is one agent client, and over HTTP
// the first to initialize decides for the shared pool. Servers already
// running or starting without them are restarted on their next use when
// caps declares any of them.
func (p *Pool) SetClientCapabilities(caps *mcp.ClientCapabilities) {
	down := downstreamCaps(caps)
	if !p.clientCaps.CompareAndSwap(nil, down) {
		return
	}
	if down.Elicitation == nil && down.Sampling == nil && down.RootsV2 == nil {
		return
	}
	var toClose []*conn
	p.mu.Lock()
	for _, e := range p.servers {
		// A start under way declares what was known when it began: it is
		// abandoned, and its callers start the server again.
		if c := e.cur; c != nil && c.caps != down || e.starting != nil {
			toClose = p.detachLocked(e, toClose)
		}
	}
	p.mu.Unlock()
	for _, c := range toClose {
		p.goClose(c)
	}
}

// downstreamCaps is what codebridge declares to a server when the agent's
// client declared caps: what it can forward, never more.
func downstreamCaps(caps *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	down := &mcp.ClientCapabilities{}
	if caps == nil {
		return down
	}
	if e := caps.Elicitation; e != nil {
		down.Elicitation = &mcp.ElicitationCapabilities{Form: e.Form, URL: e.URL}
		if e.Form == nil && e.URL == nil { // no mode named: form, as before modes existed
			down.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
	}
	if caps.Sampling != nil {
		down.Sampling = &mcp.SamplingCapabilities{}
	}
	if caps.RootsV2 != nil || caps.Roots.ListChanged {
		down.RootsV2 = &mcp.RootCapabilities{}
	}
	return down
}

// calls tracks the peers of a conn's tool calls in flight, so that what the
// server asks while it serves one reaches the MCP session that made it.
// A server's request does not say which call it serves, so it is answered
// only while every call in flight was made for one MCP session.
type calls struct {
	name   string       // the server's
	logger *slog.Logger // never nil

	mu      sync.Mutex // protects following
	seq     uint64
	active  map[uint64]Peer // nil for a call made without a peer
	last    Peer            // the peer of the latest call begun, for log messages between calls
	dropped int             // log messages dropped for want of one MCP session to take them
	refused bool            // a request was refused for that reason: logged once
}

// begin records a call of peer in flight until end is called. A nil peer
// is a call for which no MCP session answers.
func (cs *calls) begin(peer Peer) (end func()) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.active == nil {
		cs.active = map[uint64]Peer{}
	}
	cs.seq++
	id := cs.seq
	cs.active[id], cs.last = peer, peer
	return func() {
		cs.mu.Lock()
		delete(cs.active, id)
		cs.mu.Unlock()
	}
}

// currentLocked is the peer that answers a request from the server: that
// of the most recent call in flight, when all calls in flight were made for
// one MCP session. It returns [ErrNotForwarded] when no call in flight has
// a peer, and [ErrSessionsShareServer] when the calls in flight were made
// for more than one MCP session or without a peer.
func (cs *calls) currentLocked() (Peer, error) {
	var newest uint64
	var peerless bool
	principals := map[string]bool{}
	for id, p := range cs.active {
		if p == nil {
			peerless = true
			continue
		}
		principals[p.Principal()] = true
		newest = max(newest, id)
	}
	switch {
	case newest == 0:
		return nil, ErrNotForwarded
	case len(principals) > 1 || peerless:
		return nil, ErrSessionsShareServer
	}
	return cs.active[newest], nil
}

// current is currentLocked for a request method of the server; the first
// refusal for more than one MCP session is logged.
func (cs *calls) current(method string) (Peer, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	peer, err := cs.currentLocked()
	if errors.Is(err, ErrSessionsShareServer) && !cs.refused {
		cs.refused = true
		cs.logger.Warn("refused a request of a server: it serves calls of more than one MCP session at once, and does not say for which call it asks (logged once per server start)",
			"server", cs.name, "method", method)
	}
	return peer, err
}

// logTo is the peer that receives a log message: the current one, or that
// of the latest call when none is in flight. With calls of more than one
// MCP session in flight the message is dropped and counted, and the first
// drop is logged.
func (cs *calls) logTo() Peer {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.active) == 0 {
		return cs.last
	}
	peer, err := cs.currentLocked()
	if errors.Is(err, ErrSessionsShareServer) {
		cs.dropped++
		if cs.dropped == 1 {
			cs.logger.Warn("dropped a log message of a server: it serves calls of more than one MCP session at once, and does not say for which call it logs (later drops are counted in its status)",
				"server", cs.name)
		}
	}
	return peer
}

// droppedLogs is how many log messages logTo dropped.
func (cs *calls) droppedLogs() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.dropped
}

// clientOptions returns the handlers with which a conn's client answers its
// server, declaring caps.
func (c *conn) clientOptions(caps *mcp.ClientCapabilities) mcp.ClientOptions {
	var o mcp.ClientOptions
	o.Capabilities = &mcp.ClientCapabilities{Elicitation: caps.Elicitation, Sampling: caps.Sampling, RootsV2: caps.RootsV2}
	if caps.Elicitation != nil {
		o.ElicitationHandler = forward(c, "elicitation/create", Peer.Elicit)
	}
	if caps.Sampling != nil {
		o.CreateMessageHandler = forward(c, "sampling/createMessage", Peer.CreateMessage)
	}
	o.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
		if peer := c.calls.logTo(); peer != nil && req.Params != nil {
			_ = peer.Log(ctx, req.Params) // best effort, as notifications are
		}
	}
	return o
}

// forward is a handler of the server's request method that passes it to
// the current peer's ask.
func forward[P mcp.Params, R any](c *conn, method string, ask func(Peer, context.Context, P) (R, error)) func(context.Context, *mcp.ClientRequest[P]) (R, error) {
	return func(ctx context.Context, req *mcp.ClientRequest[P]) (R, error) {
		peer, err := c.peer(ctx, method)
		if err != nil {
			var zero R
			return zero, err
		}
		return ask(peer, ctx, req.Params)
	}
}

// callKey is the key of the [callPeer] in the context of a tool call.
type callKey struct{}

// callPeer is the peer of a tool call, in the call's context. A server
// speaking MCP 2026-07-28 asks its questions in the result of the call they
// serve (input_required), and the go-sdk client answers them through the
// same handlers as a server's own requests, with the context of that call
// (fulfillInputRequests in go-sdk's mcp/mrtr.go): the one place where a
// request says which call it serves. A server's own requests get the
// context of the connection, without it.
type callPeer struct{ peer Peer }

// withCall is ctx, of a tool call made for peer.
func withCall(ctx context.Context, peer Peer) context.Context {
	return context.WithValue(ctx, callKey{}, callPeer{peer})
}

// peer is the peer that answers the server's request method: that of the
// call it serves when ctx says (see [callPeer]), else the one calls.current
// chooses; or an error saying there is none.
func (c *conn) peer(ctx context.Context, method string) (Peer, error) {
	if call, ok := ctx.Value(callKey{}).(callPeer); ok {
		if call.peer == nil {
			return nil, fmt.Errorf("%s from MCP server %q: %w", method, c.name, ErrNotForwarded)
		}
		return call.peer, nil
	}
	peer, err := c.calls.current(method)
	if err != nil {
		return nil, fmt.Errorf("%s from MCP server %q: %w", method, c.name, err)
	}
	return peer, nil
}

// rootsMiddleware answers roots/list from the current peer: the go-sdk
// client otherwise answers it from a fixed list.
func (c *conn) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		peer, err := c.peer(ctx, method)
		if err != nil {
			return nil, err
		}
		return peer.ListRoots(ctx)
	}
}
