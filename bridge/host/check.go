package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// CheckStartWait bounds how long a check waits for a server to start: a
// server still starting after it is reported [protocol.Starting] (its start
// goes on in the background), so a check answers in seconds even when a
// server takes a minute.
const CheckStartWait = 10 * time.Second

// maxChecks bounds the tools one check_tools request names.
const maxChecks = 1000

// CheckTools implements [protocol.Handler]: whether each named tool could
// be called now, without calling it.
func (h *host) CheckTools(ctx context.Context, p protocol.CheckToolsParams) (protocol.ToolChecks, error) {
	switch {
	case len(p.Tools) == 0:
		return nil, &protocol.Error{Code: protocol.CodeBadArguments, Message: `check_tools needs the tools to check: check_tools(["server.tool", ...]), or a server's name alone for the server`}
	case len(p.Tools) > maxChecks:
		return nil, &protocol.Error{Code: protocol.CodeTooLarge, Message: fmt.Sprintf("check_tools got %d tools, more than the %d one check takes: check them in parts", len(p.Tools), maxChecks)}
	}
	return h.check(ctx, p.Tools), nil
}

// Check answers, for each of refs, whether a run's code could call it now:
// each server is started if it is not running (a call would start it), no
// tool is called, nobody is asked anything. It is check_tools for
// `codebridge check`.
func (d *Directory) Check(ctx context.Context, refs []protocol.ToolRef) protocol.ToolChecks {
	return d.host(Run{}).check(ctx, refs)
}

// check is [Directory.Check] as this run's configuration sees it: up to
// SearchParallelism at once, in the order asked.
func (h *host) check(ctx context.Context, refs []protocol.ToolRef) protocol.ToolChecks {
	out := make(protocol.ToolChecks, len(refs))
	var g errgroup.Group
	g.SetLimit(SearchParallelism)
	for i, ref := range refs {
		g.Go(func() error {
			out[i] = h.checkOne(ctx, ref)
			return nil
		})
	}
	g.Wait()
	return out
}

// checkOne is the readiness of one tool, or of one server when ref names
// no tool.
func (h *host) checkOne(ctx context.Context, ref protocol.ToolRef) protocol.ToolCheck {
	c := protocol.ToolCheck{Server: auditName(ref.Server), Tool: auditName(ref.Tool)}
	srv, err := h.snap.resolve(ref.Server)
	if err != nil {
		return notReady(ctx, ctx, c, err)
	}
	c.Server = srv.Name
	wctx, cancel := context.WithTimeout(ctx, CheckStartWait)
	defer cancel()
	if ref.Tool == "" {
		_, l, err := h.tools(wctx, srv.Name, false)
		if err != nil {
			return notReady(ctx, wctx, c, err)
		}
		c.Status, c.Message = protocol.Ready, fmt.Sprintf("MCP server %q is running with %s code may call", srv.Name, plural(len(l.tools), "tool"))
		if n := len(l.held); n > 0 {
			c.Message += fmt.Sprintf("; %s held back (quarantined: 'codebridge tools review %s')", plural(n, "more tool"), srv.Name)
		}
		return c
	}
	_, t, _, err := h.tool(wctx, srv.Name, ref.Tool, false)
	if t != nil {
		c.Tool = t.Name
	}
	if err != nil {
		return notReady(ctx, wctx, c, err)
	}
	c.Status = protocol.Ready
	// The policy as it is now, as a call would see it.
	if why := h.dir.snap.Load().confirm(srv.Name, t); why != "" {
		c.Message = fmt.Sprintf("a call asks the person first (%s)", why)
		if !h.ask.CanAsk() {
			c.Message += ", and this client cannot be asked, so a call from it would be refused"
		}
	}
	return c
}

// notReady is c with the readiness err says: wctx is the check's wait for
// the server, ctx the request's.
func notReady(ctx, wctx context.Context, c protocol.ToolCheck, err error) protocol.ToolCheck {
	c.Message = err.Error()
	if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		c.Status = protocol.Starting
		c.Message = fmt.Sprintf("MCP server %q is still starting after %s; check again in a moment, or call the tool: a call waits for the start", c.Server, CheckStartWait)
		return c
	}
	switch protocol.CodeOf(err) {
	case protocol.CodeUnknownServer:
		c.Status = protocol.NotConfigured
	case protocol.CodeUnknownTool:
		c.Status = protocol.NotFound
	case protocol.CodePolicyDenied:
		c.Status = protocol.Denied
	case protocol.CodeQuarantined:
		c.Status = protocol.Quarantined
	case protocol.CodeAuthRequired:
		c.Status = protocol.SignInRequired
	default:
		c.Status = protocol.Failed
	}
	return c
}

// plural is "1 tool" or "n tools".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
