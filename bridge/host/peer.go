package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
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
	q, err := maskParams(p.h.secrets(p.srv), params)
	if err != nil {
		return nil, err
	}
	return p.h.ask.Forward(ctx, p.srv.Name, q)
}

func (p *serverPeer) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if p.srv.NoSampling {
		return nil, refused(p.srv, "sampling")
	}
	ctx, cancel := p.h.questionContext(ctx)
	defer cancel()
	q, err := maskParams(p.h.secrets(p.srv), params)
	if err != nil {
		return nil, err
	}
	return p.h.ask.CreateMessage(ctx, p.srv.Name, q)
}

func (p *serverPeer) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	return p.h.ask.ListRoots(ctx)
}

func (p *serverPeer) Log(ctx context.Context, params *mcp.LoggingMessageParams) error {
	q, err := maskParams(p.h.secrets(p.srv), params)
	if err != nil {
		return err
	}
	return p.h.ask.Log(ctx, p.srv.Name, q)
}

// refused is the error a server gets for a request its entry refuses.
func refused(srv *discovery.Server, what string) error {
	where := "its entry"
	if srv.Source != "" {
		where = srv.Source
	}
	return fmt.Errorf("codebridge refuses %s requests from MCP server %q (\"%s\": false in %s)", what, srv.Name, what, where)
}

// maskParams is params with secrets masked in every string (keys too) of
// its JSON: a log message's data, a sampling request's messages and system
// prompt, an elicitation's message, schema (titles, descriptions, defaults,
// enum names) and URL. It is params itself when nothing is masked. What
// cannot be decoded again once masked is refused, not sent unmasked.
func maskParams[P any](secrets secret.List, params *P) (*P, error) {
	if len(secrets) == 0 || params == nil {
		return params, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding the request to mask its secrets: %w", err)
	}
	masked, changed := secrets.MaskJSON(raw)
	if !changed {
		return params, nil
	}
	q := new(P)
	if err := json.Unmarshal(masked, q); err != nil {
		return nil, fmt.Errorf("codebridge masked a secret in this request and could not decode it again (%v): it was not passed on", err)
	}
	return q, nil
}

// secrets is what is masked in what srv sends: its configured secrets and,
// for a server reached over streamable HTTP (the one that signs in with
// OAuth), the access token its requests carry now. A server of another
// transport costs nothing more.
func (h *host) secrets(srv *discovery.Server) secret.List {
	if srv.Transport != discovery.Streamable {
		return srv.Secrets
	}
	tok := h.dir.pool.AccessToken(srv.Name)
	if tok.Reveal() == "" {
		return srv.Secrets
	}
	return append(slices.Clip(srv.Secrets), tok)
}
