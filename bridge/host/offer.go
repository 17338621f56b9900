package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Offer is one server's tools as the tools lane (bridge/lane) serves them:
// those code may see, and the names of those it may not, whose calls are
// refused with the reason code gets.
type Offer struct {
	Server  string
	Tools   []*mcp.Tool // admitted by the policy and not quarantined, as the server defined them
	Hidden  []string    // tools the policy blocks or the pins hold
	Running bool        // the server is running, so its resources and prompts can be listed
	// Unlisted: the server is neither running nor has a saved tool list,
	// and was not started (Offers without start); Tools are empty.
	Unlisted bool
	Err      error // listing failed; Tools and Hidden are empty
}

// Offers lists every server's tools as [Offer]s, in the snapshot's order:
// from the running server or its saved tool list, so nothing starts; a
// server with neither is started to list it (and its list saved) when
// start is set, else marked Unlisted.
func (d *Directory) Offers(ctx context.Context, start bool) []Offer {
	h := d.host(Run{})
	var out []Offer
	if start {
		all, failed := h.everyServer(ctx)
		for _, srv := range h.snap.servers {
			o := Offer{Server: srv.Name, Err: failed[srv.Name]}
			if o.Err == nil {
				o.Tools, o.Hidden = h.offered(srv.Name, all[srv.Name])
			}
			o.Running = d.pool.Running(srv.Name)
			out = append(out, o)
		}
		return out
	}
	for _, srv := range h.snap.servers {
		running := d.pool.Running(srv.Name)
		if !running && (d.manifests == nil || !d.hasManifest(srv.Name)) {
			out = append(out, Offer{Server: srv.Name, Unlisted: true})
			continue
		}
		l, err := d.listTools(ctx, srv, true)
		o := Offer{Server: srv.Name, Err: err, Running: running}
		if err == nil {
			o.Tools, o.Hidden = h.offered(srv.Name, l)
		}
		out = append(out, o)
	}
	return out
}

// Complete asks server, as the tools lane's client asked, to complete an
// argument of one of its prompts or resource templates: refused, as its
// resources and prompts are, for a server its policy closes; the answer's
// secrets are masked. params' reference names the server's own prompt or
// template.
func (d *Directory) Complete(ctx context.Context, server string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	h := d.host(Run{})
	srv, err := h.catalogServer(server)
	if err != nil {
		return nil, err
	}
	res, err := d.pool.Complete(ctx, srv.Name, params)
	if err != nil {
		return nil, maskError(h.secrets(srv), catalogError(srv, err))
	}
	raw, err := encodeMasked(srv, h.secrets(srv), res)
	if err != nil {
		return nil, err
	}
	out := new(mcp.CompleteResult)
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("decoding the masked completion of %s: %w", srv.Name, err)
	}
	return out, nil
}

// hasManifest reports whether the server has a saved tool list.
func (d *Directory) hasManifest(server string) bool {
	srv := d.snap.Load().byKey[server]
	if srv == nil {
		return false
	}
	_, ok := d.manifests.Load(srv)
	return ok
}

// offered splits a listing into the tools code may use and the names of
// the others.
func (h *host) offered(server string, l listing) (use []*mcp.Tool, hidden []string) {
	use = h.snap.admitted(server, l.tools)
	for _, t := range l.tools {
		if h.snap.blocked(server, t) != "" {
			hidden = append(hidden, t.Name)
		}
	}
	for _, t := range l.held {
		hidden = append(hidden, t.Name)
	}
	return use, hidden
}
