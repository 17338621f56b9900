package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/search"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// host answers one run's requests from the sandbox. It sees the configuration
// as it was when the run started, so a reload never changes a run's view.
type host struct {
	dir      *Directory
	snap     *snapshot
	progress func(message string, progress, total float64)
}

// SearchParallelism bounds how many servers a search starts at once, and
// searchStartTimeout how long it waits for them: a server slower than that is
// reported as unavailable rather than holding up the run.
const (
	SearchParallelism  = 8
	searchStartTimeout = 30 * time.Second
)

// handler answers one request method with its parameters decoded.
type handler func(h *host, ctx context.Context, raw json.RawMessage) (any, error)

// method makes a handler that decodes the parameters into P first.
func method[P any](f func(h *host, ctx context.Context, p P) (any, error)) handler {
	return func(h *host, ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &rpcError{code: "bad_arguments", msg: fmt.Sprintf("malformed parameters: %v", err)}
			}
		}
		return f(h, ctx, p)
	}
}

// methods is the dispatch table of the sandbox's requests.
var methods = map[string]handler{
	python.MethodListServers: method(func(h *host, _ context.Context, _ python.NoParams) (any, error) {
		names := make([]string, len(h.snap.servers))
		for i, s := range h.snap.servers {
			names[i] = s.Name
		}
		return names, nil
	}),
	python.MethodDescribeServer: method(func(h *host, ctx context.Context, p python.ServerParams) (any, error) {
		return h.describeServer(ctx, p.Server)
	}),
	python.MethodListTools: method(func(h *host, ctx context.Context, p python.ServerParams) (any, error) {
		srv, l, err := h.tools(ctx, p.Server, true)
		if err != nil {
			return nil, err
		}
		return docsFor(h.snap, srv, l.tools, l.saved, "full", true), nil
	}),
	python.MethodQueryToolDocs: method(func(h *host, ctx context.Context, p python.QueryToolDocsParams) (any, error) {
		return h.queryToolDocs(ctx, p.Server, p.Tool, p.Detail)
	}),
	python.MethodSearchToolDocs: method(func(h *host, ctx context.Context, p python.SearchToolDocsParams) (any, error) {
		return h.searchToolDocs(ctx, p.Query, p.Limit, p.Detail)
	}),
	python.MethodCallTool: method(func(h *host, ctx context.Context, p python.CallToolParams) (any, error) {
		if p.Tool == nil {
			return nil, &rpcError{code: "bad_arguments", msg: "call_tool needs a tool name: call_tool(server, tool, arguments)"}
		}
		return h.callTool(ctx, p.Server, *p.Tool, p.Arguments, p.StartFailed)
	}),
}

// The memory and saved-helper methods, added to the table by init.
var memoryMethods = map[string]handler{
	python.MethodMemorySave: method(func(h *host, _ context.Context, p python.MemorySaveParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		if p.IfRev != nil {
			return nil, st.SaveIf(p.Key, p.Value, p.Metadata, *p.IfRev)
		}
		return nil, st.Save(p.Key, p.Value, p.Metadata)
	}),
	python.MethodMemoryLoad: method(func(h *host, _ context.Context, p python.KeyParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		m, ok, err := st.Load(p.Key)
		if !ok || err != nil {
			return python.MemoryLoadResult{}, err
		}
		return python.MemoryLoadResult{Found: true, MemoryInfo: memoryInfo(m), Value: m.Value, Rev: m.Rev}, nil
	}),
	python.MethodMemoryDelete: method(func(h *host, _ context.Context, p python.KeyParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		return st.Delete(p.Key)
	}),
	python.MethodMemoryExists: method(func(h *host, _ context.Context, p python.KeyParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		return st.Exists(p.Key)
	}),
	python.MethodMemoryList: method(func(h *host, _ context.Context, _ python.NoParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		list, err := st.List()
		out := make([]*python.MemoryInfo, len(list))
		for i, m := range list {
			out[i] = memoryInfo(m)
		}
		return out, err
	}),
	python.MethodToolSave: method(func(h *host, _ context.Context, p python.ToolSaveParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		return nil, st.SaveTool(memory.Tool{Name: p.Name, Source: p.Source, Description: p.Description, Signature: p.Signature})
	}),
	python.MethodToolList: method(func(h *host, _ context.Context, _ python.NoParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		tools, err := st.Tools()
		out := make([]python.SavedToolInfo, len(tools))
		for i, t := range tools {
			out[i] = python.SavedToolInfo{Name: t.Name, Description: t.Description, Signature: t.Signature, UpdatedAt: epoch(t.Updated)}
		}
		return out, err
	}),
	python.MethodToolDelete: method(func(h *host, _ context.Context, p python.NameParams) (any, error) {
		st, err := h.store()
		if err != nil {
			return nil, err
		}
		return st.DeleteTool(p.Name)
	}),
}

func init() { maps.Copy(methods, memoryMethods) }

// memoryInfo describes a memory as the sandbox's helpers return it.
func memoryInfo(m memory.Memory) *python.MemoryInfo {
	return &python.MemoryInfo{Key: m.Key, Metadata: m.Metadata, Bytes: m.Bytes, CreatedAt: epoch(m.Created), UpdatedAt: epoch(m.Updated)}
}

// SavedHelpers gives a new session the helpers agents saved with save_tool.
func SavedHelpers(st *memory.Store, logger *slog.Logger) func() []python.Source {
	return func() []python.Source {
		tools, err := st.Tools()
		if err != nil {
			logger.Warn("reading saved helpers; new sessions start without them", "err", err)
		}
		out := make([]python.Source, len(tools))
		for i, t := range tools {
			out[i] = python.Source{Name: t.Name, Source: t.Source}
		}
		return out
	}
}

// epoch is t in seconds since 1970, as Python's time.time().
func epoch(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// store is the memory store, or an error saying it is not available.
func (h *host) store() (*memory.Store, error) {
	if h.dir.store == nil {
		return nil, &rpcError{code: "internal", msg: "memory is not available in this codebridge (no state directory)"}
	}
	return h.dir.store, nil
}

// Call implements python.Host.
func (h *host) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	f, ok := methods[method]
	if !ok {
		return nil, &rpcError{code: "internal", msg: fmt.Sprintf("unknown request %q (the sandbox helper and codebridge disagree; update both)", method)}
	}
	res, err := f(h, ctx, params)
	var re *rpcError
	if errors.As(err, &re) && strings.HasPrefix(re.msg, "malformed parameters") {
		re.msg = method + ": " + re.msg
	}
	return res, err
}

// tools resolves a server and lists the tools its policy admits, starting
// it if needed; for docs, a server not running answers from its manifest.
func (h *host) tools(ctx context.Context, key string, docs bool) (*discovery.Server, listing, error) {
	srv, l, err := h.allTools(ctx, key, docs)
	if err != nil {
		return nil, l, err
	}
	l.tools = h.snap.admitted(srv.Name, l.tools)
	return srv, l, nil
}

// allTools is tools with the tools its policy blocks.
func (h *host) allTools(ctx context.Context, key string, docs bool) (*discovery.Server, listing, error) {
	srv, err := h.snap.resolve(key)
	if err != nil {
		return nil, listing{}, err
	}
	l, err := h.dir.listTools(ctx, srv, docs)
	if err != nil {
		return nil, l, poolError(srv, err)
	}
	return srv, l, nil
}

// tool resolves one tool that code may use. A tool the policy blocks is
// refused with policy_denied, saying which rule and where it is written;
// an unknown one with unknown_tool, suggesting only admitted names. Calls
// (docs false) always resolve against the running server's own list.
func (h *host) tool(ctx context.Context, key, name string, docs bool) (*discovery.Server, *mcp.Tool, time.Time, error) {
	srv, l, err := h.allTools(ctx, key, docs)
	if err != nil {
		return nil, nil, l.saved, err
	}
	t, err := findTool(srv, h.snap.admitted(srv.Name, l.tools), name)
	if err != nil {
		if hidden, herr := findTool(srv, l.tools, name); herr == nil {
			if why := h.snap.blocked(srv.Name, hidden); why != "" {
				return srv, hidden, l.saved, &rpcError{code: codePolicyDenied, msg: why}
			}
		}
		return srv, nil, l.saved, err
	}
	return srv, t, l.saved, nil
}

// codePolicyDenied is the MCPError code of a tool the policy blocks.
const codePolicyDenied = "policy_denied"

func (h *host) describeServer(ctx context.Context, key string) (any, error) {
	srv, l, err := h.tools(ctx, key, true)
	if err != nil {
		return nil, err
	}
	return python.ServerDescription{
		Name:        srv.Name,
		Alias:       h.snap.alias[srv.Name],
		Description: srv.Description,
		Tools:       docsFor(h.snap, srv, l.tools, l.saved, "summary", true),
	}, nil
}

func (h *host) queryToolDocs(ctx context.Context, key string, tool *string, detail string) (any, error) {
	if tool != nil {
		srv, t, saved, err := h.tool(ctx, key, *tool, true)
		if err != nil {
			return nil, err
		}
		return docsFor(h.snap, srv, []*mcp.Tool{t}, saved, detail, false), nil
	}
	srv, l, err := h.tools(ctx, key, true)
	if err != nil {
		return nil, err
	}
	return docsFor(h.snap, srv, l.tools, l.saved, detail, false), nil
}

func (h *host) searchToolDocs(ctx context.Context, query string, limit int, detail string) (any, error) {
	if strings.TrimSpace(query) == "" {
		return nil, &rpcError{code: "bad_arguments", msg: "search_tool_docs needs a query, e.g. search_tool_docs(\"read a file\")"}
	}
	if limit <= 0 {
		limit = 5
	}
	sctx, cancel := context.WithTimeout(ctx, searchStartTimeout)
	all, failed := h.everyServer(sctx)
	cancel()
	var docs []search.Doc
	type ref struct {
		srv   *discovery.Server
		tool  *mcp.Tool
		saved time.Time
	}
	refs := map[[2]string]ref{}
	out := python.SearchResult{Results: []python.ToolDoc{}, Unavailable: []python.Unavailable{}}
	for _, srv := range h.snap.servers {
		if err := failed[srv.Name]; err != nil {
			out.Unavailable = append(out.Unavailable, python.Unavailable{Server: srv.Name, Error: typed.FirstLine(err.Error())})
			continue
		}
		l := all[srv.Name]
		for _, t := range h.snap.admitted(srv.Name, l.tools) {
			docs = append(docs, search.Doc{Server: srv.Name, Tool: t.Name, Description: t.Description, Params: typed.ParamNames(t)})
			refs[[2]string{srv.Name, t.Name}] = ref{srv, t, l.saved}
		}
	}
	saved := map[string]memory.Tool{}
	if h.dir.store != nil {
		tools, _ := h.dir.store.Tools()
		for _, t := range tools {
			docs = append(docs, search.Doc{Server: savedServer, Tool: t.Name, Description: t.Description})
			saved[t.Name] = t
		}
	}
	hits := search.NewIndex(docs).Search(query, limit)
	for _, hit := range hits {
		if t, ok := saved[hit.Doc.Tool]; ok && hit.Doc.Server == savedServer {
			out.Results = append(out.Results, savedDoc(t, &hit.Score))
			continue
		}
		r := refs[[2]string{hit.Doc.Server, hit.Doc.Tool}]
		d := docsFor(h.snap, r.srv, []*mcp.Tool{r.tool}, r.saved, detail, false)[0]
		d.Score = &hit.Score
		out.Results = append(out.Results, d)
	}
	return out, nil
}

// everyServer lists the tools of every server of the snapshot, at most
// SearchParallelism at once: from the running server or its manifest, else
// by starting it. One server failing does not stop the others.
func (h *host) everyServer(ctx context.Context) (map[string]listing, map[string]error) {
	all := map[string]listing{}
	failed := map[string]error{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(SearchParallelism)
	for _, srv := range h.snap.servers {
		g.Go(func() error {
			l, err := h.dir.listTools(ctx, srv, true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[srv.Name] = err
				h.dir.logger.Warn("listing tools failed", "server", srv.Name, "err", err)
			} else {
				all[srv.Name] = l
			}
			return nil
		})
	}
	g.Wait()
	return all, failed
}

// callTool calls a tool for the sandbox's code, the one way code reaches a
// downstream tool (call_tool, the mcp_<alias> proxies and tool functions all
// send call_tool): the policy is checked here, and the call is audited.
func (h *host) callTool(ctx context.Context, key, tool string, args json.RawMessage, startFailed bool) (any, error) {
	var secrets secret.List // the server's, masked in its errors and audit record
	if srv, err := h.snap.resolve(key); err == nil {
		secrets = srv.Secrets
	}
	if h.dir.audit == nil {
		res, err := h.call(ctx, key, tool, args, startFailed, &audit.Record{})
		if err != nil {
			return nil, maskError(secrets, err)
		}
		return res, nil
	}
	rec := audit.Record{Time: time.Now(), Server: key, Tool: tool, ArgBytes: len(args)}
	rec.Session, rec.Run, _ = sandbox.RunFrom(ctx)
	res, err := h.call(ctx, key, tool, args, startFailed, &rec)
	err = maskError(secrets, err)
	rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
	var out any
	switch {
	case err != nil:
		rec.Outcome, rec.Error = "internal", err.Error()
		var coded interface{ RPCCode() string }
		if errors.As(err, &coded) {
			rec.Outcome = coded.RPCCode()
		}
		if ctx.Err() != nil {
			rec.Outcome = audit.OutcomeCancelled
		}
	default:
		// Encoded once here, for its size, and handed on as it is.
		raw, merr := json.Marshal(res)
		if merr != nil {
			err = &rpcError{code: "internal", msg: fmt.Sprintf("encoding the result of %s.%s: %v", rec.Server, rec.Tool, merr)}
			rec.Outcome, rec.Error = "internal", err.Error()
			break
		}
		rec.Outcome, rec.ResultBytes, out = audit.OutcomeOK, len(raw), json.RawMessage(raw)
		if res.IsError {
			rec.Outcome = audit.OutcomeToolError
		}
		if h.dir.audit.Contents() {
			rec.Result = raw
		}
	}
	if h.dir.audit.Contents() && json.Valid(args) {
		rec.Arguments, _ = secrets.MaskJSON(args)
	}
	h.dir.audit.Record(rec)
	return out, err
}

// call is callTool without the audit; it fills rec's Server and Tool with
// the names they resolve to. startFailed says the sandbox's request for the
// tool's docs, just before, failed to start the server: then a server still
// not running fails the call with that start's error rather than being
// started a second time.
func (h *host) call(ctx context.Context, key, tool string, args json.RawMessage, startFailed bool, rec *audit.Record) (*mcp.CallToolResult, error) {
	// Refuse oversized arguments before the server is even started: a stdio
	// server given a message over its SDK's cap (about 10 MiB) dies, and with
	// it every other run's calls.
	if h.dir.maxArgs > 0 && len(args) > h.dir.maxArgs {
		name := key
		if srv, err := h.snap.resolve(key); err == nil {
			name = srv.Name
		}
		rec.Server = name
		return nil, &rpcError{code: "bad_arguments", msg: fmt.Sprintf(
			"arguments for %s.%s are %d bytes (%s), over the %d byte limit (%s) on one tool call (MCP_BRIDGE_MAX_ARGUMENT_SIZE): "+
				"pass the data another way, e.g. a file path or URL the tool can read, or split it over several calls",
			name, tool, len(args), ByteSize(len(args)), h.dir.maxArgs, ByteSize(h.dir.maxArgs))}
	}
	if startFailed {
		if srv, err := h.snap.resolve(key); err == nil {
			if failure := h.dir.pool.LastFailure(srv.Name); failure != nil {
				rec.Server = srv.Name
				return nil, poolError(srv, failure)
			}
		}
	}
	srv, t, _, err := h.tool(ctx, key, tool, false)
	if srv != nil {
		rec.Server = srv.Name
	}
	if t != nil {
		rec.Tool = t.Name
	}
	if err != nil {
		return nil, err
	}
	// The run sees the configuration it started with, but a policy edited
	// since then applies at once: the tool must be admitted now too.
	if cur := h.dir.snap.Load(); cur != h.snap {
		if why := cur.blocked(srv.Name, t); why != "" {
			return nil, &rpcError{code: codePolicyDenied, msg: why}
		}
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return nil, &rpcError{code: "bad_arguments", msg: fmt.Sprintf("arguments for %s.%s must be a dict of parameter names to values", srv.Name, t.Name)}
	}
	var progress func(*mcp.ProgressNotificationParams)
	if h.progress != nil {
		progress = func(p *mcp.ProgressNotificationParams) {
			msg := fmt.Sprintf("%s.%s", srv.Name, t.Name)
			if p.Total > 0 {
				msg += fmt.Sprintf(" %g/%g", p.Progress, p.Total)
			} else {
				msg += fmt.Sprintf(" %g", p.Progress)
			}
			if p.Message != "" {
				msg += ": " + srv.Secrets.Mask(p.Message)
			}
			h.progress(msg, p.Progress, p.Total)
		}
	}
	res, err := h.dir.pool.Call(ctx, srv.Name, t.Name, args, progress)
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams {
		return nil, &rpcError{code: "bad_arguments", msg: fmt.Sprintf("%s.%s rejected the arguments: %s. query_tool_docs(%q, %q, detail=\"full\") shows its input schema.",
			srv.Name, t.Name, werr.Message, srv.Name, t.Name)}
	}
	if err != nil {
		return nil, poolError(srv, err)
	}
	if res, err = maskResult(srv, res); err != nil {
		return nil, &rpcError{code: "internal", msg: err.Error()}
	}
	if !res.IsError && t.OutputSchema == nil {
		h.dir.results.Observe(srv.Name, t.Name, res.StructuredContent)
	}
	return res, nil
}

// savedServer is the server name search results give saved helpers.
const savedServer = "saved_tools"

// savedDoc describes a saved helper as a search result: a global function of
// every session, not a tool to call through call_tool.
func savedDoc(t memory.Tool, score *float64) python.ToolDoc {
	return python.ToolDoc{
		Server: savedServer, ServerAlias: savedServer, Tool: t.Name, ToolAlias: t.Name, Name: t.Name, Alias: t.Name,
		Description: "saved helper, already defined as a global: call " + t.Name + "(...) directly. " + typed.FirstLine(t.Description),
		Signature:   cmp.Or(t.Signature, t.Name+"(...)"), Score: score,
	}
}

// findTool resolves a tool by exact name, alias, or case-insensitive name.
func findTool(srv *discovery.Server, tools []*mcp.Tool, key string) (*mcp.Tool, error) {
	names := make([]string, len(tools))
	for i, t := range tools {
		if t.Name == key {
			return t, nil
		}
		names[i] = t.Name
	}
	aliases := discovery.Aliases(names)
	for _, t := range tools {
		if aliases[t.Name] == key || strings.EqualFold(t.Name, key) {
			return t, nil
		}
	}
	return nil, unknownName("unknown_tool", "tool of server "+srv.Name+":", key, names,
		fmt.Sprintf("query_tool_docs(%q) lists them", srv.Name))
}

// poolError turns a pool failure of srv into an error the sandbox can branch
// on, srv's secrets masked: a transport's error can quote a URL, and a start
// error the server's stderr.
func poolError(srv *discovery.Server, err error) error {
	var se *pool.StartError
	e := &rpcError{code: "internal", msg: err.Error()}
	switch {
	case errors.As(err, &se):
		e.code = "server_failed"
	case errors.Is(err, context.DeadlineExceeded):
		e.code, e.msg = "timeout", fmt.Sprintf("MCP server %q did not answer in time: %v", srv.Name, err)
	case errors.Is(err, pool.ErrDisabled), errors.Is(err, pool.ErrServerExited), errors.Is(err, pool.ErrUnknownServer):
		e.code = "server_failed"
	}
	e.msg = srv.Secrets.Mask(e.msg)
	return e
}

// maskError returns err with secrets masked in its message: a server's
// JSON-RPC error can quote what it was given.
func maskError(secrets secret.List, err error) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	masked := secrets.Mask(msg)
	if masked == msg {
		return err
	}
	var e *rpcError
	if errors.As(err, &e) {
		return &rpcError{code: e.code, msg: masked, data: e.data}
	}
	return &rpcError{code: "internal", msg: masked}
}

// maskResult returns res with every secret of srv that it holds replaced by
// [secret.Placeholder], so a server that echoes its token back does not
// hand it to the code, the audit log or the result types learnt from it.
// Secrets shorter than [secret.MinMasked] are left, and so is base64 data.
func maskResult(srv *discovery.Server, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	if len(srv.Secrets) == 0 {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding the result of %s: %w", srv.Name, err)
	}
	masked, changed := srv.Secrets.MaskJSON(raw)
	if !changed {
		return res, nil
	}
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal(masked, out); err != nil {
		return nil, fmt.Errorf("decoding the masked result of %s: %w", srv.Name, err)
	}
	return out, nil
}

// ByteSize formats n bytes for a message, to one decimal: "20 MiB", "1.5 KiB", "900 B".
func ByteSize(n int) string {
	unit, div := "B", 1.0
	switch {
	case n >= 1<<30:
		unit, div = "GiB", 1<<30
	case n >= 1<<20:
		unit, div = "MiB", 1<<20
	case n >= 1<<10:
		unit, div = "KiB", 1<<10
	}
	v := math.Round(float64(n)/div*10) / 10
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
}

// NoServers is the python.Host of a run when no servers are configured.
type NoServers struct{}

// Call refuses every request, saying how to configure a server.
func (NoServers) Call(_ context.Context, method string, _ json.RawMessage) (any, error) {
	return nil, fmt.Errorf("no MCP servers are configured (%s): add a JSON file with an \"mcpServers\" object to the config folder", method)
}
