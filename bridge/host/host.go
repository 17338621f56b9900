package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/policy"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/tracing"
	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// host answers one run's requests from the sandbox. It sees the configuration
// as it was when the run started, so a reload never changes a run's view.
type host struct {
	dir      *Directory
	snap     *snapshot
	session  string // the run's sandbox session and its number there
	run      int
	progress func(message string, progress, total float64)
	ask      *elicit.Session // nil cannot ask
	deadline time.Time       // when the run's time limit ends; zero if unknown
	trace    *observe.Trace  // the run's call trace; nil keeps none

	calls atomic.Int64 // the call_tool requests the run has sent
}

// SearchParallelism bounds how many servers a search starts at once, and
// searchStartTimeout how long it waits for them: a server slower than that is
// reported as unavailable rather than holding up the run.
const (
	SearchParallelism  = 8
	searchStartTimeout = 30 * time.Second
)

// ListTools implements [protocol.Handler].
func (h *host) ListTools(ctx context.Context, p protocol.ServerParams) (protocol.ToolDocs, error) {
	srv, l, err := h.tools(ctx, p.Server, true)
	if err != nil {
		return nil, err
	}
	return docsFor(h.snap, srv, l.tools, l.saved, "full", true), nil
}

// Attach implements [protocol.Handler]: a run's attachments are collected
// by its [Attachments], whose host answers attach before this one.
func (h *host) Attach(context.Context, protocol.AttachParams) (protocol.NoResult, error) {
	return protocol.NoResult{}, &protocol.Error{Code: protocol.CodeInternal, Message: "attach: this run does not collect attachments"}
}

// memoryInfo describes a memory as the sandbox's helpers return it.
func memoryInfo(m memory.Memory) *protocol.MemoryInfo {
	return &protocol.MemoryInfo{Key: m.Key, Metadata: m.Metadata, Bytes: m.Bytes, CreatedAt: epoch(m.Created), UpdatedAt: epoch(m.Updated)}
}

// SavedHelpers gives a new session the helpers agents saved with save_tool.
func SavedHelpers(st *memory.Store, logger *slog.Logger) func() []protocol.Source {
	return func() []protocol.Source {
		tools, err := st.Tools()
		if err != nil {
			logger.Warn("reading saved helpers; new sessions start without them", "err", err)
		}
		out := make([]protocol.Source, len(tools))
		for i, t := range tools {
			out[i] = protocol.Source{Name: t.Name, Source: t.Source}
		}
		return out
	}
}

// epoch is t in seconds since 1970, as Python's time.time().
func epoch(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// store is the memory store, or an error saying it is not available.
func (h *host) store() (*memory.Store, error) {
	if h.dir.store == nil {
		return nil, &protocol.Error{Code: protocol.CodeInternal, Message: "memory is not available in this codebridge (no state directory)"}
	}
	return h.dir.store, nil
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
				return srv, hidden, l.saved, &protocol.Error{Code: protocol.CodePolicyDenied, Message: why}
			}
		}
		if held, herr := findTool(srv, l.held, name); herr == nil {
			if len(l.repeated) > 0 {
				return srv, held, l.saved, repeatedListing(srv.Name, held.Name, l.repeated)
			}
			if f, ok := l.flagged[held.Name]; ok {
				return srv, held, l.saved, flaggedTool(srv.Name, held.Name, f)
			}
			return srv, held, l.saved, quarantined(srv.Name, held.Name, l.unvetted[held.Name], h.dir.setting)
		}
		if missing := h.ask.Undeclared(); len(missing) > 0 {
			var perr *protocol.Error
			// Not for a misspelt name, which has suggestions.
			if errors.As(err, &perr) && !misspelt(perr) {
				perr.Message += fmt.Sprintf(". Some servers offer tools only to clients that declare %s: the agent's client did not, so codebridge did not declare them to %s either",
					strings.Join(missing, ", "), srv.Name)
			}
		}
		return srv, nil, l.saved, err
	}
	return srv, t, l.saved, nil
}

// misspelt reports whether an unknown_tool error suggests close names.
func misspelt(err *protocol.Error) bool {
	data, _ := err.Data.(map[string]any)
	close, _ := data["suggestions"].([]string)
	return len(close) > 0
}

// quarantined is the refusal of a quarantined tool; unvetted says it is new
// rather than changed.
func quarantined(server, tool string, unvetted bool, setting func(key string) string) *protocol.Error {
	why := "its definition changed since it was pinned"
	if unvetted {
		why = "it is new, and " + settingOf(setting, "quarantine_new") + "=1 holds new tools back"
	}
	return &protocol.Error{Code: protocol.CodeQuarantined, Message: fmt.Sprintf(
		"tool %s.%s is quarantined: %s, so it is hidden and refused until a person approves it. "+
			"Ask them to run 'codebridge tools review %s' to see the change, then 'codebridge tools approve %s %s' if it is expected.",
		server, tool, why, server, server, tool)}
}

// flaggedTool is the refusal of a tool the tool-poisoning scanner holds. It
// names what fired and where, not the text itself: that text is what the
// server meant the model to read.
func flaggedTool(server, tool string, f manifest.Flag) *protocol.Error {
	what := "its definition reads"
	if len(f.Findings) > 0 && f.Findings[0].Field == "instructions" {
		what = fmt.Sprintf("the instructions of MCP server %s read", server)
	}
	// Only the part of the definition: a property's name is the server's
	// text too.
	reasons := make([]map[string]string, len(f.Findings))
	var says []string
	for i, x := range f.Findings {
		part, _, _ := strings.Cut(x.Field, ".")
		part, _, _ = strings.Cut(part, " ")
		reasons[i] = map[string]string{"code": x.Code, "part": part}
		if s := x.Code + " in " + part; !slices.Contains(says, s) {
			says = append(says, s)
		}
	}
	return &protocol.Error{Code: protocol.CodeQuarantined, Message: fmt.Sprintf(
		"tool %s.%s is quarantined: %s as tool poisoning (%s), so it is hidden and refused until a person approves it. "+
			"Ask them to run 'codebridge tools review %s' to see what was found, then 'codebridge tools approve %s %s' if it is expected.",
		server, tool, what, strings.Join(says, ", "), server, server, tool), Data: map[string]any{"findings": reasons}}
}

// repeatedListing is the refusal of a tool of a server whose listing names
// some tool more than once: every tool of it is held.
func repeatedListing(server, tool string, repeats []string) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeQuarantined, Message: fmt.Sprintf(
		"tool %s.%s is quarantined: MCP server %s lists %s more than once, so which definition a call would get is the server's choice; "+
			"every tool of %s is hidden and refused until it lists each name once. Ask the person to run 'codebridge tools review %s'.",
		server, tool, server, policy.QuoteList(repeats), server, server)}
}

// DescribeServer implements [protocol.Handler].
func (h *host) DescribeServer(ctx context.Context, p protocol.ServerParams) (protocol.ServerDescription, error) {
	srv, l, err := h.tools(ctx, p.Server, true)
	if err != nil {
		return protocol.ServerDescription{}, err
	}
	desc := protocol.ServerDescription{
		Name:        srv.Name,
		Alias:       h.snap.alias[srv.Name],
		Description: srv.Description,
		Tools:       docsFor(h.snap, srv, l.tools, l.saved, "summary", true),
	}
	if h.dir.pool.Running(srv.Name) && h.snap.policy[srv.Name].Closed(srv.Name) == "" {
		desc.Resources = count(ctx, srv.Name, h.dir.pool.Resources)
		desc.ResourceTemplates = count(ctx, srv.Name, h.dir.pool.ResourceTemplates)
		desc.Prompts = count(ctx, srv.Name, h.dir.pool.Prompts)
	}
	return desc, nil
}

// QueryToolDocs implements [protocol.Handler].
func (h *host) QueryToolDocs(ctx context.Context, p protocol.QueryToolDocsParams) (protocol.ToolDocs, error) {
	if p.Tool != nil {
		srv, t, saved, err := h.tool(ctx, p.Server, *p.Tool, true)
		if err != nil {
			return nil, err
		}
		return docsFor(h.snap, srv, []*mcp.Tool{t}, saved, p.Detail, false), nil
	}
	srv, l, err := h.tools(ctx, p.Server, true)
	if err != nil {
		return nil, err
	}
	return docsFor(h.snap, srv, l.tools, l.saved, p.Detail, false), nil
}

// SearchToolDocs implements [protocol.Handler].
func (h *host) SearchToolDocs(ctx context.Context, p protocol.SearchToolDocsParams) (protocol.SearchResult, error) {
	query, limit, detail := p.Query, p.Limit, p.Detail
	if strings.TrimSpace(query) == "" {
		return protocol.SearchResult{}, &protocol.Error{Code: protocol.CodeBadArguments, Message: "search_tool_docs needs a query, e.g. search_tool_docs(\"read a file\")"}
	}
	if limit <= 0 {
		limit = 5
	}
	sctx, cancel := context.WithTimeout(ctx, searchStartTimeout)
	all, failed := h.everyServer(sctx)
	cancel()
	var keys []searchKey
	type ref struct {
		srv   *discovery.Server
		tool  *mcp.Tool
		saved time.Time
	}
	refs := map[[2]string]ref{}
	out := protocol.SearchResult{Results: []protocol.ToolDoc{}, Unavailable: []protocol.Unavailable{}}
	for _, srv := range h.snap.servers {
		if err := failed[srv.Name]; err != nil {
			out.Unavailable = append(out.Unavailable, protocol.Unavailable{Server: srv.Name, Error: typed.FirstLine(err.Error())})
			continue
		}
		l := all[srv.Name]
		for _, t := range h.snap.admitted(srv.Name, l.tools) {
			keys = append(keys, searchKey{server: srv.Name, tool: t})
			refs[[2]string{srv.Name, t.Name}] = ref{srv, t, l.saved}
		}
	}
	saved := map[string]memory.Tool{}
	if h.dir.store != nil {
		tools, _ := h.dir.store.Tools()
		for _, t := range tools {
			keys = append(keys, searchKey{server: savedServer, name: t.Name, description: t.Description})
			saved[t.Name] = t
		}
	}
	hits := h.dir.search.index(keys).Search(query, limit)
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

// CallTool implements [protocol.Handler]: it calls a tool for the sandbox's
// code, the one way code reaches a downstream tool (call_tool, the
// mcp_<alias> proxies and tool functions all send call_tool): the policy is
// checked here, and the call is audited.
func (h *host) CallTool(ctx context.Context, p protocol.CallToolParams) (protocol.CallToolResult, error) {
	if p.Tool == nil {
		return protocol.CallToolResult{}, &protocol.Error{Code: protocol.CodeBadArguments, Message: "call_tool needs a tool name: call_tool(server, tool, arguments)"}
	}
	ctx, span := h.dir.tracer.Start(ctx, tracing.MethodCallTool, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	// The names as the code wrote them, until they resolve (call): capped,
	// so made-up ones cannot fill the log.
	rec := audit.Record{Time: time.Now(), Server: auditName(p.Server), Tool: auditName(*p.Tool), ArgBytes: len(p.Arguments)}
	rec.Session, rec.Run = h.session, h.run
	var c called
	var known observe.Known
	err := h.countCall()
	if err == nil {
		c, err = withSignIn(ctx, h, p.Server, func(again bool) (called, error) {
			return h.call(ctx, p.Server, *p.Tool, p.Arguments, p.StartFailed && !again, &rec, &known)
		})
	}
	if c.release != nil {
		defer c.release()
	}
	var secrets secret.List // the server's, masked in its errors and audit record
	if srv, err := h.snap.resolve(p.Server); err == nil {
		secrets = h.secrets(srv) // after the call: a sign-in or refresh may have changed its token
	}
	err = maskError(secrets, err)
	rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
	rec.Outcome, rec.ResultBytes = outcome(ctx, c.isError, err), len(c.raw)
	h.observed(rec, known)
	describeCall(span, rec)
	if h.dir.audit != nil {
		args, _ := secrets.MaskJSON(p.Arguments)
		h.record(rec, c.raw, args, err)
	}
	if err != nil {
		return protocol.CallToolResult{}, err
	}
	return protocol.CallToolResult{RawMessage: c.raw}, nil
}

// countCall counts a call_tool request of the run, and refuses the one
// past the cap on a run's calls. Every request counts, those then refused
// (policy, quarantine, an unknown tool) too: a loop that keeps failing is
// as much a runaway as one that succeeds.
func (h *host) countCall() error {
	n := h.dir.maxCalls
	if n <= 0 || h.calls.Add(1) <= int64(n) {
		return nil
	}
	setting := settingOf(h.dir.setting, "max_calls_per_run")
	return &protocol.Error{Code: protocol.CodeTooManyCalls, Message: fmt.Sprintf(
		"this run has made %d tool calls, the most a run may make (%s), so this one was not sent: "+
			"batch the work into fewer calls (a tool that takes many items at once), or go on in the next run; "+
			"the person running codebridge can raise %s", n, setting, setting)}
}

// called is the result of one tool call: encoded once, with secrets
// masked, and the share of the results budget it holds until release.
type called struct {
	raw     json.RawMessage
	isError bool
	release func()
}

// maxAuditName bounds a server or tool name that sandboxed code sent, as
// the audit records it, in bytes.
const maxAuditName = 256

// auditName is name cut to maxAuditName bytes of whole UTF-8 characters,
// ending in "…" when it was cut.
func auditName(name string) string { return observe.Cut(name, maxAuditName) }

// outcome is how a call ended, as the audit log and the call trace name
// it: ok, tool_error (toolError: the result is marked isError), cancelled,
// or err's code.
func outcome(ctx context.Context, toolError bool, err error) string {
	switch {
	case err != nil:
		code := string(protocol.CodeOf(err))
		if ctx.Err() != nil && code != string(protocol.CodeDeclined) {
			return observe.OutcomeCancelled
		}
		return code
	case toolError:
		return observe.OutcomeToolError
	}
	return observe.OutcomeOK
}

// record audits a call: rec with its outcome, the sizes and, when the audit
// keeps contents, the arguments and the result.
func (h *host) record(rec audit.Record, raw, args json.RawMessage, err error) {
	switch {
	case err != nil:
		rec.Error, rec.ResultBytes = err.Error(), 0
	case h.dir.audit.Contents():
		rec.Result = raw
	}
	if h.dir.audit.Contents() && json.Valid(args) {
		rec.Arguments = args
	}
	h.dir.audit.Record(rec)
}

// observed hands a call that ended to the run's trace and the directory's
// sink; known says which of rec's names resolved.
func (h *host) observed(rec audit.Record, known observe.Known) {
	c := observe.Call{Kind: rec.Kind, Server: rec.Server, Tool: rec.Tool, MS: rec.DurationMS, Outcome: rec.Outcome,
		Start: rec.Time, Session: h.session, Run: h.run, ResultBytes: rec.ResultBytes, Known: known}
	h.trace.Add(c)
	if h.dir.sink != nil {
		h.dir.sink.Call(c)
	}
}

// call is callTool without the audit; it fills rec's Server and Tool with
// the names they resolve to, and known with which did. startFailed says the sandbox's request for the
// tool's docs, just before, failed to start the server: then a server still
// not running fails the call with that start's error rather than being
// started a second time.
func (h *host) call(ctx context.Context, key, tool string, args json.RawMessage, startFailed bool, rec *audit.Record, known *observe.Known) (called, error) {
	if h.dir.maxArgs > 0 && len(args) > h.dir.maxArgs {
		name := key
		if srv, err := h.snap.resolve(key); err == nil {
			name, *known = srv.Name, observe.KnownServer
		}
		rec.Server = auditName(name)
		return called{}, h.checkSize(name, tool, args)
	}
	if startFailed {
		if srv, err := h.snap.resolve(key); err == nil {
			if failure := h.dir.pool.LastFailure(srv.Name); failure != nil {
				rec.Server, *known = srv.Name, observe.KnownServer
				return called{}, poolError(srv, failure)
			}
		}
	}
	srv, t, _, err := h.tool(ctx, key, tool, false)
	if srv != nil {
		rec.Server, *known = srv.Name, observe.KnownServer
	}
	if t != nil {
		rec.Tool, *known = t.Name, *known|observe.KnownTool
	}
	if err != nil {
		return called{}, err
	}
	// The run sees the configuration it started with, but a policy edited
	// since then applies at once: the tool must be admitted now too, and
	// asked about if the policy now says so.
	cur := h.dir.snap.Load()
	if cur != h.snap {
		if why := cur.blocked(srv.Name, t); why != "" {
			return called{}, &protocol.Error{Code: protocol.CodePolicyDenied, Message: why}
		}
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return called{}, &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf("arguments for %s.%s must be a dict of parameter names to values", srv.Name, t.Name)}
	}
	if why := cur.confirm(srv.Name, t); why != "" {
		if h.ask.CanAsk() {
			// The person approves the arguments as the server gets them: one
			// form, each key once.
			canon, err := elicit.Canonical(args)
			if err != nil {
				return called{}, &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf("arguments for %s.%s, which asks the person first (%s): %v", srv.Name, t.Name, why, err)}
			}
			if err := h.checkSize(srv.Name, t.Name, canon); err != nil {
				return called{}, err
			}
			args = canon
		}
		actx, cancel := h.questionContext(ctx)
		answer, err := h.ask.Confirm(actx, srv.Name, t.Name, args, why)
		cancel()
		rec.Confirm = string(answer)
		if errors.Is(err, elicit.ErrCannotShow) {
			return called{}, &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf(
				"the call of tool %q of MCP server %q needs the person's approval (%s), and %v: send smaller arguments (fewer keys, shorter names), "+
					"e.g. pass the data as a file path or URL the tool can read, or split it over several calls", t.Name, srv.Name, why, err)}
		}
		if !answer.Allowed() {
			return called{}, declined(fmt.Sprintf("the call of tool %q of MCP server %q", t.Name, srv.Name), why,
				"To call the tool, the user can remove it from that rule", answer, h.ask.WhyNot(), err)
		}
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
				msg += ": " + h.secrets(srv).Mask(p.Message)
			}
			h.progress(msg, p.Progress, p.Total)
		}
	}
	res, err := h.dir.pool.CallFor(ctx, h.peer(srv), srv.Name, t.Name, args, progress)
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams {
		return called{}, &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf("%s.%s rejected the arguments: %s. query_tool_docs(%q, %q, detail=\"full\") shows its input schema.",
			srv.Name, t.Name, werr.Message, srv.Name, t.Name)}
	}
	if be, ok := errors.AsType[*pool.BusyError](err); ok {
		return called{}, h.busy(be)
	}
	if err != nil {
		return called{}, poolError(srv, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return called{}, &protocol.Error{Code: protocol.CodeInternal, Message: fmt.Sprintf("encoding the result of %s.%s: %v", srv.Name, t.Name, err)}
	}
	release, err := h.dir.inflight.hold(ctx, len(raw), srv.Name, t.Name)
	if err != nil {
		return called{}, err
	}
	c := called{raw: raw, isError: res.IsError, release: release}
	if masked, changed := h.secrets(srv).MaskJSON(raw); changed {
		// The masked result is what the code, the audit log and the
		// result types learnt from it see.
		c.raw, res = masked, new(mcp.CallToolResult)
		if err := json.Unmarshal(masked, res); err != nil {
			release()
			return called{}, &protocol.Error{Code: protocol.CodeInternal, Message: fmt.Sprintf("decoding the masked result of %s.%s: %v", srv.Name, t.Name, err)}
		}
	}
	if !res.IsError && t.OutputSchema == nil {
		h.dir.results.Observe(srv.Name, t.Name, res.StructuredContent)
	}
	return c, nil
}

// busy is the refusal of a call that found its server's call slots
// taken and its queue full, naming both limits and the settings that set
// them.
func (h *host) busy(e *pool.BusyError) error {
	where := "its entry"
	if e.Source != "" {
		where = "its entry in " + e.Source
	}
	field := fmt.Sprintf(`"maxConcurrency" in %s`, where)
	limit, raise := field, field
	if !e.Configured {
		global := settingOf(h.dir.setting, "server_concurrency")
		limit = fmt.Sprintf(`%s, as %s sets no "maxConcurrency"`, global, where)
		raise = fmt.Sprintf("%s, or %s for this server alone", global, field)
	}
	queue := settingOf(h.dir.setting, "server_queue")
	return &protocol.Error{Code: protocol.CodeBusy, Message: fmt.Sprintf(
		"MCP server %q is busy, so this call was not sent: %d tool calls are in flight on it, the most it is given at once (%s), "+
			"and %d more are waiting, the most that may wait (%s). Await some of the calls before sending more "+
			"(e.g. an asyncio.Semaphore around them), or try again later; the person running codebridge can raise %s, or %s",
		e.Server, e.Concurrency, limit, e.Queue, queue, queue, raise),
		Data: map[string]any{"concurrency": e.Concurrency, "queue": e.Queue}}
}

// checkSize refuses arguments of server's tool over the limit on one call
// (MCP_BRIDGE_MAX_ARGUMENT_SIZE), before the server is even started: a stdio
// server given a message over its SDK's cap (about 10 MiB) dies, and with
// it every other run's calls.
func (h *host) checkSize(server, tool string, args json.RawMessage) error {
	if h.dir.maxArgs <= 0 || len(args) <= h.dir.maxArgs {
		return nil
	}
	return &protocol.Error{Code: protocol.CodeBadArguments, Message: fmt.Sprintf(
		"arguments for %s.%s are %d bytes (%s), over the %d byte limit (%s) on one tool call (%s): "+
			"pass the data another way, e.g. a file path or URL the tool can read, or split it over several calls",
		server, tool, len(args), ByteSize(len(args)), h.dir.maxArgs, ByteSize(h.dir.maxArgs), settingOf(h.dir.setting, "max_argument_size"))}
}

// savedServer is the server name search results give saved helpers.
const savedServer = "saved_tools"

// savedDoc describes a saved helper as a search result: a global function of
// every session, not a tool to call through call_tool.
func savedDoc(t memory.Tool, score *float64) protocol.ToolDoc {
	return protocol.ToolDoc{
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
	return nil, unknownName(protocol.CodeUnknownTool, "tool of server "+srv.Name+":", key, names,
		fmt.Sprintf("query_tool_docs(%q) lists them", srv.Name))
}

// questionContext bounds a question to the person: it gives up a moment
// (a tenth of the time left, at most questionMargin) before the run's time
// limit, so that the code gets its refusal and can still act on it.
func (h *host) questionContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	left := time.Until(h.deadline)
	return context.WithDeadline(ctx, h.deadline.Add(-min(left/10, questionMargin)))
}

// questionMargin is the most time a run keeps, after a question to the
// person went unanswered, to act on the refusal.
const questionMargin = 2 * time.Second

// declined is the refusal of call (what code asked for, e.g. "the call of
// tool ...") that the person did not approve; why says why they were asked,
// and remedy how to go ahead without asking ("To call the tool, the user can
// ...").
func declined(call, why, remedy string, answer elicit.Answer, whyNot string, err error) error {
	var msg string
	switch answer {
	case elicit.CannotAsk:
		msg = fmt.Sprintf("%s needs the person's approval (%s), but the agent's client cannot ask: %s. "+
			"%s, or connect with an agent client that supports MCP elicitation", call, why, whyNot, remedy)
	case elicit.NoAnswer:
		msg = fmt.Sprintf("%s needs the person's approval (%s), and no answer came within the run's time limit", call, why)
	case elicit.Cancel:
		msg = fmt.Sprintf("the person dismissed the question about %s without allowing it: do not retry it unless they ask you to", call)
	default:
		msg = fmt.Sprintf("the person declined %s: do not retry it unless they ask you to", call)
	}
	if err != nil {
		msg = fmt.Sprintf("%s needs the person's approval (%s), and asking failed: %v", call, why, err)
	}
	return &protocol.Error{Code: protocol.CodeDeclined, Message: msg, Data: map[string]any{"answer": string(answer)}}
}

// poolError turns a pool failure of srv into an error the sandbox can branch
// on, srv's secrets masked: a transport's error can quote a URL, and a start
// error the server's stderr.
func poolError(srv *discovery.Server, err error) error {
	var se *pool.StartError
	e := &protocol.Error{Code: protocol.CodeInternal, Message: err.Error()}
	var ae *oauth.AuthRequiredError
	switch {
	case errors.As(err, &ae):
		e.Code, e.Message = protocol.CodeAuthRequired, ae.Error()
	case errors.As(err, &se):
		e.Code = protocol.CodeServerFailed
	case errors.Is(err, context.DeadlineExceeded):
		e.Code, e.Message = protocol.CodeTimeout, fmt.Sprintf("MCP server %q did not answer in time: %v", srv.Name, err)
	case errors.Is(err, pool.ErrDisabled), errors.Is(err, pool.ErrServerExited), errors.Is(err, pool.ErrUnknownServer):
		e.Code = protocol.CodeServerFailed
	case errors.Is(err, pool.ErrUnsupported):
		e.Code = protocol.CodeUnsupported
	}
	e.Message = srv.Secrets.Mask(e.Message)
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
	if e, ok := errors.AsType[*protocol.Error](err); ok {
		return &protocol.Error{Code: e.Code, Message: masked, Data: e.Data}
	}
	return &protocol.Error{Code: protocol.CodeOf(err), Message: masked}
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

// NoServers is the handler of a run when no servers are configured: it
// refuses every request, saying how to configure a server.
var NoServers protocol.Handler = protocol.Refuse(func(method string) error {
	return fmt.Errorf("no MCP servers are configured (%s): add a JSON file with an \"mcpServers\" object to the config folder", method)
})
