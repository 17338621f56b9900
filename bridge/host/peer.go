package host

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// peer answers, for one call of srv by this run, what srv asks of its
// client: through the run's MCP session, naming srv, unless srv's entry
// refuses it. Nil when the run has no MCP session to answer.
func (h *host) peer(srv *discovery.Server) pool.Peer {
	if h.ask == nil {
		return nil
	}
	return &serverPeer{h: h, srv: srv}
}

// serverPeer is [pool.Peer] for one server and one run.
type serverPeer struct {
	h   *host
	srv *discovery.Server
}

// Principal is the run's MCP session: a server's requests reach it only
// while the server's calls in flight are all of that session.
func (p *serverPeer) Principal() string { return p.h.ask.Principal() }

func (p *serverPeer) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p.srv.NoElicitation {
		return nil, refused(p.srv, "elicitation")
	}
	// A question gets no answer after a moment before the run's time limit.
	ctx, cancel := p.h.questionContext(ctx)
	defer cancel()
	return p.h.ask.Forward(ctx, p.srv.Name, maskElicit(p.srv, params))
}

func (p *serverPeer) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if p.srv.NoSampling {
		return nil, refused(p.srv, "sampling")
	}
	ctx, cancel := p.h.questionContext(ctx)
	defer cancel()
	return p.h.ask.CreateMessage(ctx, p.srv.Name, params)
}

func (p *serverPeer) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	return p.h.ask.ListRoots(ctx)
}

func (p *serverPeer) Log(ctx context.Context, params *mcp.LoggingMessageParams) error {
	return p.h.ask.Log(ctx, p.srv.Name, params)
}

// refused is the error a server gets for a request its entry refuses.
func refused(srv *discovery.Server, what string) error {
	where := "its entry"
	if srv.Source != "" {
		where = srv.Source
	}
	return fmt.Errorf("codebridge refuses %s requests from MCP server %q (\"%s\": false in %s)", what, srv.Name, what, where)
}

// maskElicit is params with srv's secrets masked in the message.
func maskElicit(srv *discovery.Server, params *mcp.ElicitParams) *mcp.ElicitParams {
	q := *params
	q.Message = srv.Secrets.Mask(params.Message)
	return &q
}
