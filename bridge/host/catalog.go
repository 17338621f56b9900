package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Catalog is what the directory needs from the pool for a server's
// resources and prompts (bridge/pool.Pool in production).
type Catalog interface {
	Resources(ctx context.Context, server string) ([]*mcp.Resource, error)
	ResourceTemplates(ctx context.Context, server string) ([]*mcp.ResourceTemplate, error)
	ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error)
	Prompts(ctx context.Context, server string) ([]*mcp.Prompt, error)
	GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, server string, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// The resource and prompt methods of [protocol.Handler]. A server that is
// not usable (unknown, disabled, invalid) is refused as for its tools, and
// so is one its policy closes ([policy.Policy.Closed]: a deny rule "*", in
// the run's configuration or in the current one); no other tool rule
// applies. Reads and gets are audited with their own record kinds.

// ListResources implements [protocol.Handler].
func (h *host) ListResources(ctx context.Context, p protocol.ServerParams) (protocol.ResourceList, error) {
	raw, err := catalogList(ctx, h, p.Server, h.dir.pool.Resources)
	return protocol.ResourceList{RawMessage: raw}, err
}

// ListResourceTemplates implements [protocol.Handler].
func (h *host) ListResourceTemplates(ctx context.Context, p protocol.ServerParams) (protocol.ResourceTemplateList, error) {
	raw, err := catalogList(ctx, h, p.Server, h.dir.pool.ResourceTemplates)
	return protocol.ResourceTemplateList{RawMessage: raw}, err
}

// ListPrompts implements [protocol.Handler].
func (h *host) ListPrompts(ctx context.Context, p protocol.ServerParams) (protocol.PromptList, error) {
	raw, err := catalogList(ctx, h, p.Server, h.dir.pool.Prompts)
	return protocol.PromptList{RawMessage: raw}, err
}

// ReadResource implements [protocol.Handler].
func (h *host) ReadResource(ctx context.Context, p protocol.ReadResourceParams) (protocol.ReadResourceResult, error) {
	rec := audit.Record{Kind: audit.KindResource, Tool: p.URI}
	raw, err := h.catalogGet(ctx, p.Server, &rec, nil, func(srv *discovery.Server) (any, error) {
		if p.URI == "" {
			return nil, &protocol.Error{Code: protocol.CodeBadArguments, Message: "read_resource needs a URI: read_resource(server, uri), e.g. a uri from list_resources(server)"}
		}
		return h.dir.pool.ReadResource(ctx, srv.Name, p.URI)
	})
	return protocol.ReadResourceResult{RawMessage: raw}, err
}

// GetPrompt implements [protocol.Handler].
func (h *host) GetPrompt(ctx context.Context, p protocol.GetPromptParams) (protocol.GetPromptResult, error) {
	rec := audit.Record{Kind: audit.KindPrompt, Tool: p.Name}
	args, _ := json.Marshal(p.Arguments)
	raw, err := h.catalogGet(ctx, p.Server, &rec, args, func(srv *discovery.Server) (any, error) {
		if p.Name == "" {
			return nil, &protocol.Error{Code: protocol.CodeBadArguments, Message: "get_prompt needs a prompt name: get_prompt(server, name, arguments), e.g. a name from list_prompts(server)"}
		}
		return h.dir.pool.GetPrompt(ctx, srv.Name, p.Name, p.Arguments)
	})
	return protocol.GetPromptResult{RawMessage: raw}, err
}

// catalogServer resolves a server for a resource or prompt request.
func (h *host) catalogServer(key string) (*discovery.Server, error) {
	srv, err := h.snap.resolve(key)
	if err != nil {
		return nil, err
	}
	// The run sees the configuration it started with, but a policy edited
	// since then applies at once, as for tool calls.
	for _, s := range []*snapshot{h.snap, h.dir.snap.Load()} {
		if why := s.policy[srv.Name].Closed(srv.Name); why != "" {
			return nil, &protocol.Error{Code: protocol.CodePolicyDenied, Message: why}
		}
	}
	return srv, nil
}

// catalogList lists what list gives for server, as the sandbox receives it.
func catalogList[T any](ctx context.Context, h *host, key string, list func(context.Context, string) ([]T, error)) (json.RawMessage, error) {
	srv, err := h.catalogServer(key)
	if err != nil {
		return nil, err
	}
	items, err := withSignIn(ctx, h, srv.Name, func(bool) ([]T, error) {
		items, err := list(ctx, srv.Name)
		if err != nil {
			return nil, catalogError(srv, err)
		}
		return items, nil
	})
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []T{}
	}
	return encodeMasked(srv, h.secrets(srv), items)
}

// catalogGet makes one audited read or get of the server key names: get
// does it once the server is resolved, and its result goes to the sandbox
// as JSON. rec has the record's Kind and Tool; args are the request's
// arguments for the audit, if any.
func (h *host) catalogGet(ctx context.Context, key string, rec *audit.Record, args json.RawMessage, get func(*discovery.Server) (any, error)) (json.RawMessage, error) {
	// As the code wrote them, until the server resolves: capped, as for
	// tool calls.
	rec.Time, rec.Server, rec.Session, rec.Run, rec.ArgBytes = time.Now(), auditName(key), h.session, h.run, len(args)
	name := rec.Tool
	rec.Tool = auditName(name)
	var raw json.RawMessage
	srv, err := h.catalogServer(key)
	if err == nil {
		rec.Server = srv.Name
		var res any
		res, err = withSignIn(ctx, h, srv.Name, func(bool) (any, error) {
			res, err := get(srv)
			if err != nil {
				return nil, catalogError(srv, err)
			}
			return res, nil
		})
		secrets := h.secrets(srv)
		if err == nil {
			raw, err = encodeMasked(srv, secrets, res)
		}
		rec.Tool = auditName(secrets.Mask(name))
		args, _ = secrets.MaskJSON(args)
		err = maskError(secrets, err)
	}
	rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
	rec.Outcome, rec.ResultBytes = outcome(ctx, false, err), len(raw)
	h.observed(*rec)
	if h.dir.audit != nil {
		h.record(*rec, raw, args, err)
	}
	return raw, err
}

// count is how many items list gives for a running server, for
// describe_server: 0 when it offers none, nil when listing failed.
func count[T any](ctx context.Context, server string, list func(context.Context, string) ([]T, error)) *int {
	items, err := list(ctx, server)
	switch {
	case errors.Is(err, pool.ErrUnsupported):
		return new(0)
	case err != nil:
		return nil
	}
	return new(len(items))
}

// catalogError is poolError for a resource or prompt request: a server that
// rejects the URI or the prompt's name or arguments gives bad_arguments.
func catalogError(srv *discovery.Server, err error) error {
	if _, ok := errors.AsType[*protocol.Error](err); ok {
		return err
	}
	// Invalid params, which is also resource not found since SEP-2164, and
	// the older resource-not-found code that servers still send.
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && (werr.Code == jsonrpc.CodeInvalidParams || werr.Code == -32002) {
		return &protocol.Error{Code: protocol.CodeBadArguments, Message: srv.Secrets.Mask(err.Error())}
	}
	return poolError(srv, err)
}

// encodeMasked encodes v, srv's answer, as JSON with secrets masked, so a
// server that echoes its token back does not hand it to the code or the
// audit log.
func encodeMasked(srv *discovery.Server, secrets secret.List, v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &protocol.Error{Code: protocol.CodeInternal, Message: fmt.Sprintf("encoding the answer of %s: %v", srv.Name, err)}
	}
	masked, _ := secrets.MaskJSON(raw)
	return masked, nil
}
