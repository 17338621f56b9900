package host

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/policy"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/scan"
	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Downstream is what the directory needs from the pool of MCP clients
// (bridge/pool.Pool in production).
type Downstream interface {
	Tools(ctx context.Context, server string) ([]*mcp.Tool, error)
	// CallFor calls a tool for peer, which answers what the server asks
	// of its client during the call (nil answers nothing).
	CallFor(ctx context.Context, peer pool.Peer, server, tool string, args any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
	Running(server string) bool
	LastFailure(server string) error
	// AccessToken is the OAuth access token server's requests carry now,
	// if any: masked in what it sends, as its Secrets are.
	AccessToken(server string) secret.Value
	Catalog
}

// Directory is run_python's view of the configured servers (what
// bridge/server calls a Directory): an immutable
// snapshot of the configuration, swapped whole on every reload, in front of the
// pool of downstream clients.
type Directory struct {
	pool     Downstream
	maxArgs  int                     // largest arguments of one tool call, in bytes (MCP_BRIDGE_MAX_ARGUMENT_SIZE)
	maxCalls int                     // tool calls one run may make (MCP_BRIDGE_MAX_CALLS_PER_RUN); 0 no cap
	setting  func(key string) string // names a setting for messages; nil names the key
	store    *memory.Store           // memories and saved helpers; nil means none
	tools    discovery.ToolPolicy    // the global tool policy, which each server's entry refines; set before the first update
	audit    *audit.Log              // records every tool call; nil records none
	sink     observe.Sink            // receives every call as it ends; nil none
	tracer   trace.Tracer            // of the calls' spans
	// manifests holds each server's last tool list, from which docs and
	// search answer for a server that is not running; nil means none.
	manifests *manifest.Store
	results   *typed.Results // the shapes of the tools' structured results
	inflight  *byteBudget    // the bytes of results the calls hold at once
	logger    *slog.Logger
	snap      atomic.Pointer[snapshot]

	// quarantineNew holds back tools without a pin in manifests
	// (MCP_BRIDGE_QUARANTINE_NEW).
	quarantineNew bool
	// confirmSave asks the person before code saves a helper
	// (MCP_BRIDGE_CONFIRM_SAVE_TOOL).
	confirmSave bool
	// signIn signs in to a server that code's request needs; nil: code
	// gets auth_required.
	signIn  SignIn
	signing signIns

	statesMu sync.Mutex             // protects following
	states   map[string]pinnedState // by server: the last listing's states, so a call hashes nothing

	search searchIndex // the last search's index, while the tools are the same
}

// pinnedState is where the tools of one listing stand against one version
// of their server's pins.
type pinnedState struct {
	pins   *manifest.Pins
	tools  []*mcp.Tool
	states []manifest.State // states[i] is tools[i]'s
}

// snapshot is the configured, enabled servers of one configuration, with the
// Python aliases the sandbox knows them by.
type snapshot struct {
	servers []*discovery.Server // enabled only, sorted by name
	alias   map[string]string   // name → alias
	byKey   map[string]*discovery.Server
	// unusable says why a named server is not among servers: its
	// definition is invalid, or it is disabled. Keyed by name.
	unusable map[string]string
	// policy is each server's tool policy, by name; nil (absent) admits
	// every tool.
	policy map[string]*policy.Policy
	// results is the directory's memory of the tools' structured results,
	// shared by every snapshot; nil in listings outside a directory.
	results *typed.Results
}

func newSnapshot(cfg *discovery.Config, global discovery.ToolPolicy) *snapshot {
	s := &snapshot{alias: map[string]string{}, byKey: map[string]*discovery.Server{}, unusable: map[string]string{}, policy: map[string]*policy.Policy{}}
	if cfg == nil {
		return s
	}
	var names []string
	for _, srv := range cfg.Servers {
		if srv.Disabled {
			where := ""
			if srv.Source != "" {
				where = " in " + srv.Source
			}
			s.unusable[srv.Name] = fmt.Sprintf(`MCP server %q is disabled%s ("disabled": true): remove that line to use it`, srv.Name, where)
			continue
		}
		s.servers = append(s.servers, srv)
		names = append(names, srv.Name)
	}
	for _, p := range cfg.Problems { // a broken definition that was not loaded
		if p.Server != "" && !p.Warning && s.unusable[p.Server] == "" && !slices.Contains(names, p.Server) {
			s.unusable[p.Server] = fmt.Sprintf("the definition of MCP server %q is invalid: %s; fix the file and the next call sees it (no restart)", p.Server, p)
		}
	}
	s.alias = discovery.Aliases(names)
	for _, srv := range s.servers {
		s.byKey[srv.Name] = srv
		if p := policy.New(global, srv); p != nil {
			s.policy[srv.Name] = p
		}
	}
	for _, srv := range s.servers { // aliases second: a real name always wins
		if a := s.alias[srv.Name]; s.byKey[a] == nil {
			s.byKey[a] = srv
		}
	}
	return s
}

// newDirectory returns a directory with no servers in front of pool. A tool
// call whose arguments are over maxArgs bytes is refused. A nil logger discards.
func newDirectory(pool Downstream, maxArgs int, logger *slog.Logger) *Directory {
	d := &Directory{pool: pool, maxArgs: maxArgs, results: typed.NewResults(), inflight: newByteBudget(DefaultResultBudget), tracer: tracer(nil), logger: cmp.Or(logger, slog.New(slog.DiscardHandler))}
	d.Update(nil)
	return d
}

// Update publishes a new configuration. The caller has already told the pool.
func (d *Directory) Update(cfg *discovery.Config) {
	s := newSnapshot(cfg, d.tools)
	s.results = d.results
	d.snap.Store(s)
}

// admitted returns the tools of server that code may see and call.
func (s *snapshot) admitted(server string, tools []*mcp.Tool) []*mcp.Tool {
	return s.policy[server].Admitted(server, tools)
}

// confirm says why a call of t of server waits for the person's approval,
// or "" when it does not.
func (s *snapshot) confirm(server string, t *mcp.Tool) string {
	return s.policy[server].Confirm(t)
}

// blocked says why code may not use t of server, or "" when it may.
func (s *snapshot) blocked(server string, t *mcp.Tool) string {
	return s.policy[server].Blocked(server, t)
}

// visible lists the snapshot's servers for the sandbox.
func (s *snapshot) visible() []protocol.ServerInfo {
	out := make([]protocol.ServerInfo, len(s.servers))
	for i, srv := range s.servers {
		out[i] = protocol.ServerInfo{Name: srv.Name, Alias: s.alias[srv.Name], Description: srv.Description}
	}
	return out
}

// resolve finds a server by name or alias.
func (s *snapshot) resolve(key string) (*discovery.Server, error) {
	if srv := s.byKey[key]; srv != nil {
		return srv, nil
	}
	if why := s.unusable[key]; why != "" {
		return nil, &protocol.Error{Code: protocol.CodeUnknownServer, Message: why}
	}
	names := make([]string, len(s.servers))
	for i, srv := range s.servers {
		names[i] = srv.Name
	}
	if len(names) == 0 {
		return nil, &protocol.Error{Code: protocol.CodeUnknownServer, Message: fmt.Sprintf("unknown MCP server %q: no servers are configured; add a JSON file to the config folder", key)}
	}
	return nil, unknownName(protocol.CodeUnknownServer, "MCP server", key, names, "discovered_servers() lists them")
}

// Prepare implements bridge/server.Directory: every name must be a configured server
// (name or alias); those are started and their tools listed, in parallel, and
// come back marked loaded with their tools.
func (d *Directory) Prepare(ctx context.Context, names []string) ([]protocol.ServerInfo, error) {
	s := d.snap.Load()
	infos := s.visible()
	loaded := map[string]bool{}
	for _, n := range names {
		srv, err := s.resolve(n)
		if err != nil {
			return nil, fmt.Errorf("servers: %v", err)
		}
		loaded[srv.Name] = true
	}
	if len(loaded) == 0 {
		return infos, nil
	}
	var g errgroup.Group
	g.SetLimit(SearchParallelism)
	for i := range infos {
		info := &infos[i]
		if !loaded[info.Name] {
			continue
		}
		info.Loaded = true
		g.Go(func() error {
			l, err := d.listTools(ctx, s.byKey[info.Name], false)
			if err != nil {
				// Not fatal: the run's first call reports it with the server's stderr.
				d.logger.Warn("starting a server named in run_python's servers", "server", info.Name, "err", err)
				return nil
			}
			for _, doc := range docsFor(s, s.byKey[info.Name], s.admitted(info.Name, l.tools), time.Time{}, "summary", false) {
				info.Tools = append(info.Tools, protocol.ToolSummary{Name: doc.Tool, Alias: doc.ToolAlias, Description: doc.Description})
			}
			return nil
		})
	}
	g.Wait()
	return infos, nil
}

// listing is a server's tools and where they came from.
type listing struct {
	tools []*mcp.Tool
	saved time.Time // when the manifest they came from was written; zero when the running server listed them
	// held are the tools quarantined, left out of tools: changed since
	// pinned, or without a pin under quarantineNew (those also in unvetted),
	// or flagged by the tool-poisoning scanner (those also in flagged).
	held     []*mcp.Tool
	unvetted map[string]bool
	flagged  map[string]manifest.Flag
	// repeated are the names the server listed more than once; when there
	// are any, every tool of the listing is held.
	repeated []string
}

// listTools lists srv's tools. For docs and search (docs), a server that is
// not running answers from its manifest, if its definition has one, so
// nothing starts; otherwise the server is started and lists them, and that
// fresh listing is saved as its manifest (the pool's OnTools). Quarantined
// tools are moved to the listing's held.
func (d *Directory) listTools(ctx context.Context, srv *discovery.Server, docs bool) (listing, error) {
	if docs && d.manifests != nil && !d.pool.Running(srv.Name) {
		if m, ok := d.manifests.Load(srv); ok {
			return d.hold(srv.Name, listing{tools: m.Tools, saved: m.Written}), nil
		}
	}
	tools, err := d.pool.Tools(ctx, srv.Name)
	return d.hold(srv.Name, listing{tools: tools}), err
}

// hold moves the quarantined tools of l, server's listing, to l.held. A pin
// file that cannot be read holds every tool: without it nothing is vetted.
func (d *Directory) hold(server string, l listing) listing {
	if d.manifests == nil || len(l.tools) == 0 {
		return l
	}
	pins, _, err := d.manifests.LoadPins(server)
	if err != nil {
		d.logger.Warn("reading pinned tool definitions; the server's tools are quarantined", "server", server, "err", err)
		l.held, l.tools = l.tools, nil
		return l
	}
	states := d.pinStates(server, pins, l.tools)
	use := make([]*mcp.Tool, 0, len(l.tools))
	for i, t := range l.tools {
		switch states[i] {
		case manifest.Repeated:
			l.held = append(l.held, t)
		case manifest.Changed:
			l.held = append(l.held, t)
		case manifest.Flagged:
			l.held = append(l.held, t)
			if f, ok := pins.Flag(t); ok {
				if l.flagged == nil {
					l.flagged = map[string]manifest.Flag{}
				}
				l.flagged[t.Name] = f
			}
		case manifest.Unpinned:
			if !d.quarantineNew {
				use = append(use, t) // pinned as it is listed (SaveManifest)
				continue
			}
			l.held = append(l.held, t)
			if l.unvetted == nil {
				l.unvetted = map[string]bool{}
			}
			l.unvetted[t.Name] = true
		default:
			use = append(use, t)
		}
	}
	l.tools = use
	l.repeated = manifest.Repeats(l.held)
	return l
}

// pinStates is pins.States(tools), remembered for the server's last listing:
// the pool hands out the same listing until the server lists again, and
// hashing every tool of a server on every call would cost milliseconds.
func (d *Directory) pinStates(server string, pins *manifest.Pins, tools []*mcp.Tool) []manifest.State {
	d.statesMu.Lock()
	c, ok := d.states[server]
	d.statesMu.Unlock()
	if ok && c.pins == pins && slices.Equal(c.tools, tools) {
		return c.states
	}
	states := pins.States(tools)
	d.statesMu.Lock()
	if d.states == nil {
		d.states = map[string]pinnedState{}
	}
	d.states[server] = pinnedState{pins: pins, tools: tools, states: states}
	d.statesMu.Unlock()
	return states
}

// SaveManifest records a server's fresh tool list, the pool calls it; and
// checks it against the server's pins, scanning and pinning new tools and
// auditing each newly quarantined one.
func (d *Directory) SaveManifest(def *discovery.Server, tools []*mcp.Tool, instructions string) {
	if d.manifests == nil {
		return
	}
	if err := d.manifests.Save(def, tools); err != nil {
		d.logger.Warn("saving a server's tool list", "server", def.Name, "err", err)
	}
	var servers []*discovery.Server
	if snap := d.snap.Load(); snap != nil {
		servers = snap.servers
	}
	CheckPins(d.manifests, d.audit, PinCheck{QuarantineNew: d.quarantineNew, Setting: d.setting, Servers: servers},
		def, tools, instructions, d.logger)
}

// PinCheck is how [CheckPins] treats a listing.
type PinCheck struct {
	QuarantineNew bool                    // MCP_BRIDGE_QUARANTINE_NEW
	Setting       func(key string) string // names the settings messages mention (see [Options.Setting])
	// Servers are the configured servers: the tools of the others, from
	// their saved manifests, are what a definition may shadow.
	Servers []*discovery.Server
}

// CheckPins checks a fresh listing of def's tools against its pins in
// store ([manifest.Store.Check]): unless def is trusted, new and changed
// definitions and the server's instructions are scanned for tool poisoning
// first; new tools are pinned, unless a finding or opts.QuarantineNew
// holds them back, and each newly quarantined tool is logged as a warning
// and recorded in log (nil records none).
func CheckPins(store *manifest.Store, log *audit.Log, opts PinCheck, def *discovery.Server, tools []*mcp.Tool, instructions string, logger *slog.Logger) {
	server := def.Name
	others := func() []scan.Name {
		var out []scan.Name
		for _, srv := range opts.Servers {
			if srv.Name == server {
				continue
			}
			if m, ok := store.Load(srv); ok {
				for _, t := range m.Tools {
					out = append(out, scan.Name{Server: srv.Name, Tool: t.Name})
				}
			}
		}
		return out
	}
	held, err := store.Check(server, tools, manifest.CheckOptions{QuarantineNew: opts.QuarantineNew, Scan: !def.Trusted, Instructions: instructions, Others: others})
	if err != nil {
		logger.Warn("pinning a server's tool definitions", "server", server, "err", err)
	}
	for _, q := range held {
		why := "new, and " + settingOf(opts.Setting, "quarantine_new") + " holds new tools until approved"
		switch {
		case q.State == manifest.Flagged && q.Tool == "":
			why = "the server's instructions read as tool poisoning, so every tool of it is held: " + scan.Summary(q.Findings)
		case q.State == manifest.Flagged && len(q.Findings) > 0 && q.Findings[0].Field == "instructions":
			why = "held with the server's instructions, which read as tool poisoning"
		case q.State == manifest.Flagged:
			why = "its definition reads as tool poisoning: " + scan.Summary(q.Findings)
		case q.State == manifest.Changed:
			why = "changed since pinned: " + strings.Join(q.Changed, ", ")
		case q.State == manifest.Repeated:
			why = fmt.Sprintf("the server lists it %d times, so every tool of the server is held until it lists each name once", q.Times)
		}
		logger.Warn("quarantined a tool: 'codebridge tools review' shows it", "server", server, "tool", q.Tool, "why", why)
		if log != nil {
			log.Record(audit.Record{Kind: audit.KindPin, Time: time.Now(), Server: server, Tool: q.Tool,
				Outcome: audit.OutcomeQuarantined, Error: why})
		}
	}
}

// listedNote is a doc's Listed for tools listed at saved.
func listedNote(saved time.Time) string {
	if saved.IsZero() {
		return ""
	}
	age := time.Since(saved)
	switch {
	case age < time.Minute:
		age = age.Round(time.Second)
	case age < time.Hour:
		age = age.Round(time.Minute)
	default:
		age = age.Round(time.Hour)
	}
	return fmt.Sprintf("from the tool list the server gave %s ago (it is not running; calling a tool starts it)", age)
}

// Run is what the host of one run knows about the run.
type Run struct {
	// Session and Run name the run's sandbox session and the run's number
	// in it, for the audit log.
	Session string
	Run     int
	// Progress, if non-nil, receives progress from downstream calls.
	Progress func(message string, progress, total float64)
	// Ask puts questions to the person through the agent's client (calls
	// the policy asks them to approve, sign-ins a server needs); it belongs
	// to the run's MCP session, which outlives the run. Nil, like a client
	// without elicitation, cannot ask: such calls are refused, and a server
	// that needs a sign-in gives auth_required.
	Ask *elicit.Session
	// Deadline is when the run's time limit ends; a question gets no answer
	// after a moment before it, so the code learns it was declined while it
	// can still act. Zero leaves the run's ctx alone to bound questions.
	Deadline time.Time
	// Trace, if non-nil, collects the run's calls as they end, for its
	// result.
	Trace *observe.Trace
}

// Host implements bridge/server.Directory: it answers one run's requests.
func (d *Directory) Host(run Run) protocol.Handler {
	return d.host(run)
}

func (d *Directory) host(run Run) *host {
	return &host{dir: d, snap: d.snap.Load(), session: run.Session, run: run.Run, progress: run.Progress, ask: run.Ask, deadline: run.Deadline, trace: run.Trace}
}

// unknownName is an error for a name that is not among known, suggesting the
// closest ones.
func unknownName(code protocol.Code, what, name string, known []string, how string) *protocol.Error {
	close := closest(name, known, 3)
	var b strings.Builder
	fmt.Fprintf(&b, "unknown %s %q", what, name)
	if len(close) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", policy.QuoteList(close))
	}
	if len(known) <= 20 {
		fmt.Fprintf(&b, " Known: %s.", policy.QuoteList(known))
	}
	if how != "" {
		fmt.Fprintf(&b, " (%s)", how)
	}
	return &protocol.Error{Code: code, Message: b.String(), Data: map[string]any{"suggestions": close}}
}
