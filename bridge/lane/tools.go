package lane

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Tools is the tools lane: a go-sdk server whose tools are the downstream
// servers' tools, each under [Name] of its server and itself, and whose
// resources, resource templates and prompts are theirs (URIs as the servers
// give them; prompts named as tools are). Its listings come from the saved
// tool lists, so no server starts until a tool of it is called; a server
// never listed is started once for its first listing (at the first
// tools/list, or, after that, when a reload adds it). Resources and prompts
// are those of the servers running. Every change ([Tools.Changed]) is
// announced with list_changed notifications.
type Tools struct {
	dir    Directory
	logger *slog.Logger
	name   func(server, tool string) string // Name, or PlainName
	srv    *mcp.Server
	sess   sessions

	kick chan struct{}      // Changed asks the refresher to look again
	stop context.CancelFunc // ends the refresher and the refresh in progress
	done chan struct{}      // closed when the refresher has returned

	syncMu sync.Mutex // held by a refresh; protects following
	listed bool       // a client has listed the tools since the start
	served map[string]*served

	mu      sync.Mutex        // protects following
	targets map[string]target // every tool name a call may give, shown or hidden
	uis     map[string]string // ui:// resources of shown tools, by URI: their server
	running map[string]bool   // the servers running at the last refresh
	prompts map[string]target // served prompts, by lane name
	tmpls   map[string]string // served resource templates, by URI template: their server
}

// target is what one name of the lane reaches: a downstream server's tool,
// prompt or resource.
type target struct {
	server, name string
	hidden       bool // blocked by the policy or held by the pins: not listed
}

// served is what the lane registered with its go-sdk server for one
// downstream server, to tell what changed at the next refresh.
type served struct {
	tools     map[string]string // lane name → the tool's definition, encoded
	prompts   map[string]string
	resources map[string]string // URI → encoded
	templates map[string]string // URI template → encoded
}

// NewTools builds the tools lane; [Tools.Close] stops it.
func NewTools(opts Options) *Tools {
	t := &Tools{dir: opts.Dir, logger: orDiscard(opts.Logger), name: Name, sess: sessions{onClient: opts.OnClient, lane: "tools"},
		kick: make(chan struct{}, 1), done: make(chan struct{}),
		served: map[string]*served{}, targets: map[string]target{}, uis: map[string]string{}}
	if opts.PlainNames {
		t.name = PlainName
	}
	t.srv = mcp.NewServer(&mcp.Implementation{Name: "codebridge", Title: "codebridge (tools)", Version: opts.Version},
		&mcp.ServerOptions{CompletionHandler: t.complete, SetCacheable: toolsCacheHints, Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Logging:   &mcp.LoggingCapabilities{},
		}})
	t.srv.AddReceivingMiddleware(t.middleware)
	ctx, stop := context.WithCancel(context.Background())
	t.stop = stop
	go t.refresher(ctx)
	return t
}

// MCP is the lane's go-sdk server.
func (t *Tools) MCP() *mcp.Server { return t.srv }

// Changed says the configuration, a server's tool list or the pins may
// have changed: the lane looks again, starting only a server never listed
// (and only once a client has listed the tools), and notifies its clients
// of what changed.
func (t *Tools) Changed() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Close stops the lane's refresher, cutting a refresh in progress short,
// and waits for it.
func (t *Tools) Close() {
	t.stop()
	<-t.done
	t.sess.wg.Wait()
}

// refreshTimeout bounds one refresh that Changed asked for.
const refreshTimeout = time.Minute

func (t *Tools) refresher(ctx context.Context) {
	defer close(t.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		}
		// Once a client has listed, a server configured since is started
		// to be listed, as at the first listing; before, nothing starts.
		t.syncMu.Lock()
		start := t.listed
		t.syncMu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		t.refresh(rctx, start)
		cancel()
	}
}

// middleware refreshes the listings before the first tools/list, and
// routes a call of a tool the lane does not show (blocked by the policy,
// quarantined) to the host, which refuses it as it refuses code, and a
// read of a tool's ui:// resource whose server is not running to that
// server.
func (t *Tools) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && method != "initialize" {
			t.sess.of(ss) // its capabilities reach the pool before a listing starts a server
		}
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			t.firstListing(ctx)
		case *mcp.CallToolRequest:
			tg, ok := t.target(r.Params.Name)
			if !ok {
				// A client may call a name it knows without listing: look
				// again before refusing it.
				if !t.firstListing(ctx) {
					t.refresh(ctx, false)
				}
				tg, ok = t.target(r.Params.Name)
			}
			if ok {
				return t.call(ctx, r, tg)
			}
		case *mcp.ReadResourceRequest:
			res, err := next(ctx, method, req)
			if err == nil || !notFound(err) {
				return res, err
			}
			t.mu.Lock()
			server, ok := t.uis[r.Params.URI]
			t.mu.Unlock()
			if ok {
				return t.read(ctx, r, server)
			}
			// Its server may have started since the last refresh.
			t.refresh(ctx, false)
			return next(ctx, method, req)
		case *mcp.GetPromptRequest:
			res, err := next(ctx, method, req)
			if err == nil || !notFound(err) {
				return res, err
			}
			t.refresh(ctx, false)
			return next(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// firstListing refreshes the listings, starting the servers never listed,
// if no client has listed them since the start; it reports whether it did.
func (t *Tools) firstListing(ctx context.Context) bool {
	t.syncMu.Lock()
	first := !t.listed
	t.listed = true
	t.syncMu.Unlock()
	if first {
		t.refresh(ctx, true)
	}
	return first
}

// target is what the lane name reaches, shown or hidden.
func (t *Tools) target(name string) (target, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tg, ok := t.targets[name]
	return tg, ok
}

// notFound reports whether err is the go-sdk server's answer for a
// resource or prompt it does not have.
func notFound(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && (werr.Code == jsonrpc.CodeInvalidParams || werr.Code == mcp.CodeResourceNotFound)
}

// call calls tg for req.
func (t *Tools) call(ctx context.Context, req *mcp.CallToolRequest, tg target) (*mcp.CallToolResult, error) {
	h := hostFor(ctx, t.dir, t.sess.of(req.Session), req, req.Params.GetProgressToken())
	res, err := callTool(ctx, h, tg.server, tg.name, req.Params.Arguments)
	t.mu.Lock()
	started := !t.running[tg.server]
	t.mu.Unlock()
	// A call that started its server makes its resources and prompts
	// appear; one of a hidden tool may find it approved since.
	if started || tg.hidden {
		t.Changed()
	}
	return res, err
}

// complete passes a completion request to the server of the prompt or
// resource template it names, the prompt by its own name.
func (t *Tools) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	params, ref := *req.Params, *req.Params.Ref
	params.Ref = &ref
	t.mu.Lock()
	var server string
	switch ref.Type {
	case "ref/prompt":
		tg := t.prompts[ref.Name]
		server, ref.Name = tg.server, tg.name
	case "ref/resource":
		server = t.tmpls[ref.URI]
	}
	t.mu.Unlock()
	if server == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no prompt or resource template %q of a running server is served here", cmp.Or(ref.Name, ref.URI))}
	}
	return t.dir.Complete(ctx, server, &params)
}

// read reads req's resource from server through the host.
func (t *Tools) read(ctx context.Context, req *mcp.ReadResourceRequest, server string) (*mcp.ReadResourceResult, error) {
	h := hostFor(ctx, t.dir, t.sess.of(req.Session), req, nil)
	res, err := h.ReadResource(ctx, protocol.ReadResourceParams{Server: server, URI: req.Params.URI})
	if err != nil {
		return nil, err
	}
	out := new(mcp.ReadResourceResult)
	if err := json.Unmarshal(res.RawMessage, out); err != nil {
		return nil, fmt.Errorf("decoding %s of %s: %w", req.Params.URI, server, err)
	}
	return out, nil
}

// getPrompt gets tg's prompt for req through the host.
func (t *Tools) getPrompt(ctx context.Context, req *mcp.GetPromptRequest, tg target) (*mcp.GetPromptResult, error) {
	h := hostFor(ctx, t.dir, t.sess.of(req.Session), req, nil)
	res, err := h.GetPrompt(ctx, protocol.GetPromptParams{Server: tg.server, Name: tg.name, Arguments: req.Params.Arguments})
	if err != nil {
		return nil, err
	}
	out := new(mcp.GetPromptResult)
	if err := json.Unmarshal(res.RawMessage, out); err != nil {
		return nil, fmt.Errorf("decoding prompt %s of %s: %w", tg.name, tg.server, err)
	}
	return out, nil
}

// refresh lists every server's tools (starting those never listed when
// start is set), and the resources and prompts of those running, and
// registers what changed with the go-sdk server, which notifies the
// clients. A server that cannot be listed now keeps what it had. A name or
// URI that two servers give is served for neither: which one a client
// meant cannot be known.
func (t *Tools) refresh(ctx context.Context, start bool) {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	was := t.served
	next := map[string]*served{}
	targets := map[string]target{}
	uis := map[string]string{}
	seen := map[string]int{} // "kind name": how many servers give it
	shown := map[string]*mcp.Tool{}
	running := map[string]bool{}
	for _, o := range t.dir.Offers(ctx, start) {
		running[o.Server] = o.Running
		if o.Unlisted || o.Err != nil {
			if old := was[o.Server]; old != nil {
				next[o.Server] = old
			}
			if o.Err != nil {
				t.logger.Warn("listing a server for the tools lane; it keeps its last listing", "server", o.Server, "err", o.Err)
			}
			continue
		}
		sv := &served{tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}}
		next[o.Server] = sv
		for _, tool := range o.Tools {
			name := t.name(o.Server, tool.Name)
			seen["tool "+name]++
			targets[name] = target{o.Server, tool.Name, false}
			enc, _ := json.Marshal(tool)
			sv.tools[name] = string(enc)
			shown[name] = tool
			if uri := uiResource(tool); uri != "" {
				seen["ui "+uri]++
				uis[uri] = o.Server
			}
		}
		for _, name := range o.Hidden {
			lname := t.name(o.Server, name)
			seen["tool "+lname]++
			targets[lname] = target{o.Server, name, true}
		}
		if o.Running {
			t.listCatalog(ctx, o.Server, sv, seen)
		}
	}
	for key, n := range seen {
		if n < 2 {
			continue
		}
		t.logger.Warn("two servers give the tools lane the same name or URI; it is served for neither", "name", key)
		kind, name, _ := strings.Cut(key, " ")
		switch kind {
		case "tool":
			delete(targets, name)
		case "ui":
			delete(uis, name)
			continue
		}
		for _, sv := range next {
			delete(sv.of(kind), name)
		}
	}

	// Remove what is gone, then register what is new or changed.
	for _, kind := range kinds {
		var gone []string
		for server, sv := range was {
			for k := range sv.of(kind) {
				if nv := next[server]; nv == nil || nv.of(kind)[k] == "" {
					gone = append(gone, k)
				}
			}
		}
		if len(gone) == 0 {
			continue
		}
		switch kind {
		case "tool":
			t.srv.RemoveTools(gone...)
		case "prompt":
			t.srv.RemovePrompts(gone...)
		case "resource":
			t.srv.RemoveResources(gone...)
		case "template":
			t.srv.RemoveResourceTemplates(gone...)
		}
	}
	for server, sv := range next {
		for _, kind := range kinds {
			for k, enc := range sv.of(kind) {
				if old := was[server]; old != nil && old.of(kind)[k] == enc {
					continue
				}
				t.add(kind, server, k, enc, shown[k])
			}
		}
	}
	prompts, tmpls := map[string]target{}, map[string]string{}
	for server, sv := range next {
		for name, enc := range sv.prompts {
			var p struct{ Name string }
			json.Unmarshal([]byte(enc), &p)
			prompts[name] = target{server: server, name: p.Name}
		}
		for uri := range sv.templates {
			tmpls[uri] = server
		}
	}
	t.mu.Lock()
	t.targets, t.uis, t.running, t.prompts, t.tmpls = targets, uis, running, prompts, tmpls
	t.mu.Unlock()
	t.served = next
}

// kinds are the kinds of item a downstream server gives the lane.
var kinds = []string{"tool", "prompt", "resource", "template"}

// of is sv's items of kind.
func (sv *served) of(kind string) map[string]string {
	switch kind {
	case "tool":
		return sv.tools
	case "prompt":
		return sv.prompts
	case "resource":
		return sv.resources
	}
	return sv.templates
}

// listCatalog lists the resources, templates and prompts of the running
// server through the host into sv (encoded, by lane name or URI); seen
// counts them. A server that offers none, or whose policy closes it, adds
// none.
func (t *Tools) listCatalog(ctx context.Context, server string, sv *served, seen map[string]int) {
	h := t.dir.Host(host.Run{})
	if res, err := h.ListResources(ctx, protocol.ServerParams{Server: server}); err == nil {
		var list []*mcp.Resource
		json.Unmarshal(res.RawMessage, &list)
		for _, r := range list {
			seen["resource "+r.URI]++
			enc, _ := json.Marshal(r)
			sv.resources[r.URI] = string(enc)
		}
	}
	if res, err := h.ListResourceTemplates(ctx, protocol.ServerParams{Server: server}); err == nil {
		var list []*mcp.ResourceTemplate
		json.Unmarshal(res.RawMessage, &list)
		for _, rt := range list {
			seen["template "+rt.URITemplate]++
			enc, _ := json.Marshal(rt)
			sv.templates[rt.URITemplate] = string(enc)
		}
	}
	if res, err := h.ListPrompts(ctx, protocol.ServerParams{Server: server}); err == nil {
		var list []*mcp.Prompt
		json.Unmarshal(res.RawMessage, &list)
		for _, p := range list {
			name := t.name(server, p.Name)
			seen["prompt "+name]++
			enc, _ := json.Marshal(p)
			sv.prompts[name] = string(enc)
		}
	}
}

// add registers one item of server with the go-sdk server: key is its
// lane name or URI, enc its definition as the server gave it (tool is the
// tool's, decoded). The SDK panics on what it cannot serve (a tool whose
// input schema is not an object, an invalid URI): such an item is logged
// and left out.
func (t *Tools) add(kind, server, key, enc string, tool *mcp.Tool) {
	defer func() {
		if r := recover(); r != nil {
			t.logger.Warn("the tools lane cannot serve this downstream item; left out", "server", server, "name", key, "err", fmt.Sprint(r))
		}
	}()
	switch kind {
	case "tool":
		shown := *tool
		shown.Name = key
		tg := target{server: server, name: tool.Name}
		t.srv.AddTool(&shown, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return t.call(ctx, req, tg)
		})
	case "prompt":
		p := new(mcp.Prompt)
		json.Unmarshal([]byte(enc), p)
		tg := target{server: server, name: p.Name}
		p.Name = key
		t.srv.AddPrompt(p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return t.getPrompt(ctx, req, tg)
		})
	case "resource":
		r := new(mcp.Resource)
		json.Unmarshal([]byte(enc), r)
		t.srv.AddResource(r, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return t.read(ctx, req, server)
		})
	case "template":
		rt := new(mcp.ResourceTemplate)
		json.Unmarshal([]byte(enc), rt)
		t.srv.AddResourceTemplate(rt, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return t.read(ctx, req, server)
		})
	}
}

// uiResource is the ui:// resource an MCP App's tool names in its _meta.
func uiResource(tool *mcp.Tool) string {
	ui, _ := tool.Meta["ui"].(map[string]any)
	uri, _ := ui["resourceUri"].(string)
	if uri == "" {
		uri, _ = tool.Meta["ui/resourceUri"].(string)
	}
	return uri
}
