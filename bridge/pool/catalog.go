package pool

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A feature is a part of MCP besides tools that a server may offer, as its
// initialize result declares it.
type feature struct {
	name     string // as a message says it: "resources", "prompts"
	declared func(*mcp.ServerCapabilities) bool
}

var (
	featureResources = feature{"resources", func(c *mcp.ServerCapabilities) bool { return c.Resources != nil }}
	featurePrompts   = feature{"prompts", func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil }}
)

// Resources returns the resources of server (every page), starting it if
// needed. A server that does not declare resources fails with
// [ErrUnsupported], without a request.
func (p *Pool) Resources(ctx context.Context, server string) ([]*mcp.Resource, error) {
	return listAll(ctx, p, server, featureResources, "resources", func(ctx context.Context, s *mcp.ClientSession) iter.Seq2[*mcp.Resource, error] {
		return s.Resources(ctx, nil)
	})
}

// ResourceTemplates returns the resource templates of server, as
// [Pool.Resources] does its resources.
func (p *Pool) ResourceTemplates(ctx context.Context, server string) ([]*mcp.ResourceTemplate, error) {
	return listAll(ctx, p, server, featureResources, "resource templates", func(ctx context.Context, s *mcp.ClientSession) iter.Seq2[*mcp.ResourceTemplate, error] {
		return s.ResourceTemplates(ctx, nil)
	})
}

// Prompts returns the prompts of server, as [Pool.Resources] does its
// resources.
func (p *Pool) Prompts(ctx context.Context, server string) ([]*mcp.Prompt, error) {
	return listAll(ctx, p, server, featurePrompts, "prompts", func(ctx context.Context, s *mcp.ClientSession) iter.Seq2[*mcp.Prompt, error] {
		return s.Prompts(ctx, nil)
	})
}

// ReadResource reads the resource at uri from server, within
// [Options.CallTimeout] as [Pool.Call] does.
func (p *Pool) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := p.request(ctx, server, featureResources, fmt.Sprintf("reading resource %q of MCP server %q", uri, server), p.opts.CallTimeout,
		func(ctx context.Context, s *mcp.ClientSession) (err error) {
			res, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			return err
		})
	return res, err
}

// GetPrompt gets prompt name of server with args, within
// [Options.CallTimeout] as [Pool.Call] does.
func (p *Pool) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := p.request(ctx, server, featurePrompts, fmt.Sprintf("getting prompt %q of MCP server %q", name, server), p.opts.CallTimeout,
		func(ctx context.Context, s *mcp.ClientSession) (err error) {
			res, err = s.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
			return err
		})
	return res, err
}

// listAll lists every page of what of server within [Options.ListTimeout].
func listAll[T any](ctx context.Context, p *Pool, server string, f feature, what string, pages func(context.Context, *mcp.ClientSession) iter.Seq2[T, error]) ([]T, error) {
	var out []T
	err := p.request(ctx, server, f, "listing the "+what+" of MCP server "+strconv.Quote(server), p.opts.ListTimeout,
		func(ctx context.Context, s *mcp.ClientSession) error {
			out = out[:0]
			for v, err := range pages(ctx, s) {
				if err != nil {
					return err
				}
				out = append(out, v)
			}
			return nil
		})
	return slices.Clip(out), err
}

// request runs do on server's session, starting the server if needed, once
// it has checked that the server declared f. do gets a context that ends
// after timeout. Every request here only reads, so one whose server went
// away is made again, once, on a fresh process.
func (p *Pool) request(ctx context.Context, server string, f feature, what string, timeout time.Duration, do func(context.Context, *mcp.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		c, err := p.acquire(ctx, server)
		if err != nil {
			return err
		}
		if caps := c.capabilities(); caps == nil || !f.declared(caps) {
			p.release(c)
			return fmt.Errorf("MCP server %q does not offer %s (%w)", server, f.name, ErrUnsupported)
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err = do(rctx, c.session)
		timedOut := rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		p.release(c)
		switch {
		case err == nil:
			return nil
		case timedOut:
			return fmt.Errorf("%s: no answer within %s: %w", what, timeout, context.DeadlineExceeded)
		case attempt == 0 && ctx.Err() == nil && gone(c, err):
			continue
		}
		return p.requestError(c, what, err)
	}
}

// capabilities is what the server declared in its initialize result.
func (c *conn) capabilities() *mcp.ServerCapabilities {
	if r := c.session.InitializeResult(); r != nil {
		return r.Capabilities
	}
	return nil
}
