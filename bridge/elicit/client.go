package elicit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Passthrough is what the agent's client declared it can do for the
// downstream servers: each field is nil when it cannot.
type Passthrough struct {
	Elicit   Asker              // elicitation, in the modes the client declared
	URL      URLAsker           // codebridge's own URL-mode questions (sign-in), and their completion
	Sampling Sampler            // sampling/createMessage
	Roots    RootsLister        // roots/list
	Log      *mcp.ServerSession // log messages: every client takes them at the level it set
}

// Sampler passes sampling requests to the client: *mcp.ServerSession for
// clients that take requests from the server.
type Sampler interface {
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
}

// RootsLister asks the client for its roots: *mcp.ServerSession for clients
// that take requests from the server.
type RootsLister interface {
	ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
}

// ErrNotDeclared is returned for a request the agent's client did not
// declare the capability for.
var ErrNotDeclared = errors.New("the agent's client did not declare the MCP capability")

// passthrough is what ss's client declared.
func passthrough(ss *mcp.ServerSession) Passthrough {
	pt := Passthrough{Log: ss, URL: urlAsker(ss)}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return pt
	}
	if ip.Capabilities.Elicitation != nil {
		pt.Elicit = ss
	}
	if ip.Capabilities.Sampling != nil {
		pt.Sampling = ss
	}
	if ip.Capabilities.RootsV2 != nil {
		pt.Roots = ss
	}
	return pt
}

// Undeclared names what downstream servers may ask of a client that the
// agent's client did not declare ("MCP elicitation", ...); a nil session
// declared nothing.
func (s *Session) Undeclared() []string {
	var pass Passthrough
	if s != nil {
		pass = s.pass
	}
	var out []string
	for _, c := range []struct {
		declared bool
		name     string
	}{{pass.Elicit != nil, "MCP elicitation"}, {pass.Sampling != nil, "sampling"}, {pass.Roots != nil, "roots"}} {
		if !c.declared {
			out = append(out, c.name)
		}
	}
	return out
}

// Forward puts server's question p to the person through the agent's
// client, its message prefixed with the server's name, once no other
// question of the session is waiting; the answer goes back unchanged.
func (s *Session) Forward(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if s == nil || s.pass.Elicit == nil {
		return nil, fmt.Errorf("forwarding elicitation/create from MCP server %q: %w (elicitation)", server, ErrNotDeclared)
	}
	if err := s.take(ctx); err != nil {
		return nil, err
	}
	defer s.give()
	q := *p
	q.Message = fmt.Sprintf("[MCP server %q, called by the agent's code] %s", server, p.Message)
	return s.pass.Elicit.Elicit(ctx, &q)
}

// SamplingMetaKey names, in a forwarded sampling request's _meta, the
// server that asked.
const SamplingMetaKey = "codebridge/server"

// CreateMessage passes server's sampling request p to the agent's client,
// naming the server at the start of the system prompt and in _meta under
// [SamplingMetaKey].
func (s *Session) CreateMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if s == nil || s.pass.Sampling == nil {
		return nil, fmt.Errorf("forwarding sampling/createMessage from MCP server %q: %w (sampling)", server, ErrNotDeclared)
	}
	q := *p
	q.SystemPrompt = fmt.Sprintf("[This request comes from MCP server %q, called by the agent's code through codebridge.]", server)
	if p.SystemPrompt != "" {
		q.SystemPrompt += "\n" + p.SystemPrompt
	}
	meta := mcp.Meta{}
	for k, v := range p.Meta {
		meta[k] = v
	}
	meta[SamplingMetaKey] = server
	q.Meta = meta
	return s.pass.Sampling.CreateMessage(ctx, &q)
}

// ListRoots returns the agent's client's roots.
func (s *Session) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	if s == nil || s.pass.Roots == nil {
		return nil, fmt.Errorf("roots/list: %w (roots)", ErrNotDeclared)
	}
	return s.pass.Roots.ListRoots(ctx, &mcp.ListRootsParams{})
}

// Log passes server's log message p to the agent's client, with the server
// as its logger (before the server's own logger name, if any); the client's
// session drops it below the level the client set.
func (s *Session) Log(ctx context.Context, server string, p *mcp.LoggingMessageParams) error {
	if s == nil || s.pass.Log == nil {
		return nil
	}
	q := *p
	q.Logger = server
	if p.Logger != "" {
		q.Logger += "/" + p.Logger
	}
	return s.pass.Log.Log(ctx, &q)
}

// URLAsker sends URL-mode questions and says when the interaction they
// started is over: *mcp.ServerSession in production.
type URLAsker interface {
	Asker
	NotifyElicitationComplete(ctx context.Context, p *mcp.ElicitationCompleteParams) error
}

// urlAsker is ss when its client declared URL-mode elicitation (MCP
// 2025-11-25), else nil. A client speaking MCP 2026-07-28 or later is
// asked through the run's call ([Session.Via]) and told through ss.
func urlAsker(ss *mcp.ServerSession) URLAsker {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil ||
		ip.Capabilities.Elicitation.URL == nil {
		return nil
	}
	return ss
}

// urlVia asks through a run's call ([Route]) and sends the notification
// that the interaction is over through the session, as notifications may
// still go from the server in every protocol version.
type urlVia struct {
	Asker
	done URLAsker
}

func (u urlVia) NotifyElicitationComplete(ctx context.Context, p *mcp.ElicitationCompleteParams) error {
	return u.done.NotifyElicitationComplete(ctx, p)
}

// CanOpenURL reports whether the session's client takes URL-mode questions
// ([Session.OpenURL]). A nil session cannot.
func (s *Session) CanOpenURL() bool { return s != nil && s.pass.URL != nil }

// OpenURL asks the person, in URL mode and once no other question of the
// session is waiting, to open url for server, with message saying why. It
// returns their action (accept: they agreed to open it; decline; cancel)
// and the elicitation's id, which [Session.Completed] takes once the
// interaction at url is over.
func (s *Session) OpenURL(ctx context.Context, server, url, message string) (action, id string, err error) {
	if !s.CanOpenURL() {
		return "", "", fmt.Errorf("asking to open a URL for MCP server %q: %w (URL-mode elicitation)", server, ErrNotDeclared)
	}
	if err := s.take(ctx); err != nil {
		return "", "", err
	}
	defer s.give()
	id = rand.Text()
	res, err := s.pass.URL.Elicit(ctx, &mcp.ElicitParams{Mode: "url", URL: url, ElicitationID: id,
		Message: fmt.Sprintf("[MCP server %q, called by the agent's code] %s", server, message)})
	if err != nil {
		return "", id, err
	}
	return res.Action, id, nil
}

// Completed tells the client that the interaction of the URL question id
// is over (notifications/elicitation/complete).
func (s *Session) Completed(ctx context.Context, id string) error {
	if !s.CanOpenURL() {
		return nil
	}
	return s.pass.URL.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
}
