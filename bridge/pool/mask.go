package pool

import (
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// tokenHolder is an [Options.OAuth] handler that tells the access token
// it sends (bridge/oauth's does).
type tokenHolder interface {
	AccessToken() secret.Value
}

// AccessToken returns the OAuth access token that server's requests carry
// now, the zero Value when it has none, for masking in what it sends back:
// a server that echoes its Authorization header must not hand the token to
// the code. It is read at each call, as a refresh replaces it.
func (p *Pool) AccessToken(server string) secret.Value {
	if p.opts.OAuth == nil {
		return secret.Value{}
	}
	p.mu.Lock()
	var tok tokenHolder
	if e := p.servers[server]; e != nil && e.cur != nil {
		tok = e.cur.token
	}
	p.mu.Unlock()
	if tok == nil {
		return secret.Value{}
	}
	return tok.AccessToken()
}

// maskedError is an error whose message has a server's secrets masked; it
// unwraps to the error it masks, for [errors.Is] and [errors.As].
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// masked returns err with def's secrets masked in its message: an HTTP
// transport's errors quote the URL, which may hold a ${keyring:...} token.
func masked(def *discovery.Server, err error) error {
	if err == nil || len(def.Secrets) == 0 {
		return err
	}
	msg := err.Error()
	if m := def.Secrets.Mask(msg); m != msg {
		return &maskedError{msg: m, err: err}
	}
	return err
}

// maskTools returns tools with secrets (a server's) masked in their
// definitions, so a server that quotes its token in a description does not
// put it in the docs code reads, nor in a saved manifest.
func maskTools(secrets secret.List, tools []*mcp.Tool) []*mcp.Tool {
	if len(secrets) == 0 {
		return tools
	}
	for i, t := range tools {
		raw, err := json.Marshal(t)
		if err != nil {
			continue
		}
		if m, changed := secrets.MaskJSON(raw); changed {
			var out mcp.Tool
			if json.Unmarshal(m, &out) == nil {
				tools[i] = &out
			}
		}
	}
	return tools
}

// secrets is what c's server must not see echoed to anyone: its
// definition's secrets and the access token its requests carry now.
func (c *conn) secrets() secret.List {
	if c.token == nil {
		return c.def.Secrets
	}
	tok := c.token.AccessToken()
	if tok.Reveal() == "" {
		return c.def.Secrets
	}
	return append(slices.Clip(c.def.Secrets), tok)
}
