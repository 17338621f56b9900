package pool

import (
	"context"
	"fmt"
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
	// Completions of prompt arguments and resource template variables.
	featureCompletions = feature{"completions", func(c *mcp.ServerCapabilities) bool { return c.Completions != nil }}
)

// Resources returns the resources of server (every page), starting it if
// needed. A server that does not declare resources fails with
// [ErrUnsupported], without a request.
func (p *Pool) Resources(ctx context.Context, server string) ([]*mcp.Resource, error) {
	return listAll(ctx, p, server, featureResources, "resources", func(ctx context.Context, s *mcp.ClientSession) page[*mcp.Resource] {
		return func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
			r, err := s.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		}
	})
}

// ResourceTemplates returns the resource templates of server, as
// [Pool.Resources] does its resources.
func (p *Pool) ResourceTemplates(ctx context.Context, server string) ([]*mcp.ResourceTemplate, error) {
	return listAll(ctx, p, server, featureResources, "resource templates", func(ctx context.Context, s *mcp.ClientSession) page[*mcp.ResourceTemplate] {
		return func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			r, err := s.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.ResourceTemplates, r.NextCursor, nil
		}
	})
}

// Prompts returns the prompts of server, as [Pool.Resources] does its
// resources.
func (p *Pool) Prompts(ctx context.Context, server string) ([]*mcp.Prompt, error) {
	return listAll(ctx, p, server, featurePrompts, "prompts", func(ctx context.Context, s *mcp.ClientSession) page[*mcp.Prompt] {
		return func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
			r, err := s.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Prompts, r.NextCursor, nil
		}
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

// Complete asks server to complete an argument of one of its prompts or
// resource templates, within [Options.ListTimeout]: it only reads.
func (p *Pool) Complete(ctx context.Context, server string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var res *mcp.CompleteResult
	err := p.request(ctx, server, featureCompletions, fmt.Sprintf("completing an argument with MCP server %q", server), p.opts.ListTimeout,
		func(ctx context.Context, s *mcp.ClientSession) (err error) {
			res, err = s.Complete(ctx, params)
			return err
		})
	return res, err
}

// listAll lists every page of what of server within [Options.ListTimeout],
// [MaxListed] and [MaxListPages].
func listAll[T any](ctx context.Context, p *Pool, server string, f feature, what string, pager func(context.Context, *mcp.ClientSession) page[T]) ([]T, error) {
	var out []T
	err := p.request(ctx, server, f, "listing the "+what+" of MCP server "+strconv.Quote(server), p.opts.ListTimeout,
		func(ctx context.Context, s *mcp.ClientSession) (err error) {
			out, err = listPages(ctx, what, pager(ctx, s))
			return err
		})
	return out, err
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
