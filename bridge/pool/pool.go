package pool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/codebridge-mcp/codebridge/bridge/tracing"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// Defaults for the zero values in [Options], and the recommended
// [Options.IdleTimeout].
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultListTimeout    = 30 * time.Second
	DefaultCallTimeout    = 5 * time.Minute
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultStderrLines    = 50
	DefaultConcurrency    = 16
	DefaultQueue          = 256
)

// Options configures a [Pool]. Zero values select the defaults.
type Options struct {
	// Logger receives the pool's logs. Nil means discard.
	Logger *slog.Logger
	// ConnectTimeout bounds starting a server: spawning or dialing it, and
	// the initialize handshake. Default [DefaultConnectTimeout].
	ConnectTimeout time.Duration
	// ListTimeout bounds listing a server's tools (all pages). Default
	// [DefaultListTimeout].
	ListTimeout time.Duration
	// CallTimeout bounds a tool call that the caller's context does not bound
	// more tightly. Default [DefaultCallTimeout].
	CallTimeout time.Duration
	// IdleTimeout stops a server that has had no request for this long; it
	// starts again on its next use. Zero or negative means never; unlike the
	// other fields, zero is not the default, because users configure "0" to
	// keep servers running. [DefaultIdleTimeout] is the recommended value.
	IdleTimeout time.Duration
	// Concurrency is how many tool calls a server whose definition sets
	// no MaxConcurrency is given at once, across every caller; more wait
	// in line. Default [DefaultConcurrency].
	Concurrency int
	// Queue is how many tool calls may wait for a slot on one server;
	// past it a call fails at once with a [BusyError]. Default
	// [DefaultQueue].
	Queue int
	// StderrLines is how many of a server's last stderr lines are kept for
	// error messages. Default [DefaultStderrLines].
	StderrLines int
	// Client is what the pool calls itself in initialize. Default
	// {Name: "codebridge", Version: "dev"}.
	Client *mcp.Implementation
	// OnTools, if set, receives every fresh tool list: a server's first
	// listing after it starts, and each after it reports tools/list_changed,
	// with the definition it was started from and the instructions of its
	// initialize result. It runs on the caller's goroutine, outside the
	// pool's locks; it must not block for long.
	OnTools func(def *discovery.Server, tools []*mcp.Tool, instructions string)
	// OAuth, if set, gives the OAuth handler of a streamable HTTP server
	// that sends no Authorization header of its own: it adds the server's
	// stored sign-in to its requests (bridge/oauth). Nil means none.
	OAuth func(def *discovery.Server) auth.OAuthHandler
	// Tracing gives the tracer of the spans of server starts; nil traces
	// nothing. The trace context of a call's ctx goes to the server in
	// the request's _meta either way.
	Tracing trace.TracerProvider
}

// A Pool keeps one MCP client session per configured downstream server. A
// server starts on its first use, exactly once however many callers ask at
// the same moment, stays warm until it has been idle for
// [Options.IdleTimeout], and is started again after it crashed.
//
// [Pool.Update] applies a new configuration without interrupting requests in
// flight. All methods are safe for concurrent use.
type Pool struct {
	opts   Options
	logger *slog.Logger
	tracer trace.Tracer
	seq    atomic.Uint64 // progress tokens
	stop   chan struct{} // closed by Close: ends the janitor
	wg     sync.WaitGroup

	// Test hooks, set before first use.
	testTransport func(*discovery.Server) (mcp.Transport, error)
	now           func() time.Time

	// clientCaps is what servers started from now on are told their client
	// can do ([Pool.SetClientCapabilities]); nil until it is set.
	clientCaps atomic.Pointer[mcp.ClientCapabilities]

	mu      sync.Mutex // protects following, and the fields of entry and startOp marked as such
	servers map[string]*entry
	live    map[*conn]struct{} // every conn whose session has not ended
	closed  bool
}

// An entry is one configured server name. Its fields are guarded by Pool.mu.
type entry struct {
	// def is replaced by Update, never modified: runs hold the same pointer.
	def      *discovery.Server
	cur      *conn    // serves new requests, and is active; nil if not running
	starting *startOp // the start in progress, if any
	err      error    // why the last start failed or the last process ended
	lastUsed time.Time
}

// A startOp is one attempt to start a server that callers wait for together.
type startOp struct {
	done       chan struct{} // closed when c and err are set
	cancel     context.CancelFunc
	c          *conn
	err        error
	superseded bool // the definition changed or was removed meanwhile (guarded by Pool.mu)
}

// New returns a pool with no servers; [Pool.Update] adds them.
func New(opts Options) *Pool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.ConnectTimeout = cmp.Or(opts.ConnectTimeout, DefaultConnectTimeout)
	opts.ListTimeout = cmp.Or(opts.ListTimeout, DefaultListTimeout)
	opts.CallTimeout = cmp.Or(opts.CallTimeout, DefaultCallTimeout)
	opts.StderrLines = cmp.Or(opts.StderrLines, DefaultStderrLines)
	opts.Concurrency = cmp.Or(opts.Concurrency, DefaultConcurrency)
	opts.Queue = cmp.Or(opts.Queue, DefaultQueue)
	if opts.Client == nil {
		opts.Client = &mcp.Implementation{Name: "codebridge", Version: "dev"}
	}
	p := &Pool{
		opts:    opts,
		logger:  opts.Logger,
		tracer:  tracing.Tracer(opts.Tracing, "github.com/codebridge-mcp/codebridge/bridge/pool"),
		stop:    make(chan struct{}),
		now:     time.Now,
		servers: make(map[string]*entry),
		live:    make(map[*conn]struct{}),
	}
	if opts.IdleTimeout > 0 {
		p.wg.Add(1)
		go p.janitor(opts.IdleTimeout)
	}
	return p
}

// Update makes servers the configured set, starting nothing:
//   - a new server becomes known and starts on first use;
//   - a removed server is stopped once its requests in flight have finished;
//   - a changed server (any field but Source and Description) is stopped the
//     same way, and its next use starts the new definition;
//   - an unchanged server stays running, even if its Description or Source
//     changed (the new ones are reported).
//
// A server whose Disabled is set is known but refuses to start.
//
// The pool keeps the definitions it is given, shared with whoever else holds
// them (a run's snapshot), and never modifies one: a later Update replaces it.
func (p *Pool) Update(servers []*discovery.Server) {
	next := make(map[string]*discovery.Server, len(servers))
	for _, s := range servers {
		if s == nil || s.Name == "" {
			continue
		}
		if _, dup := next[s.Name]; dup {
			p.logger.Warn("server defined twice; using the later definition", "server", s.Name, "source", s.Source)
		}
		next[s.Name] = s
	}

	var toClose []*conn
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	for name, e := range p.servers {
		s, ok := next[name]
		switch {
		case !ok:
			toClose = p.detachLocked(e, toClose)
			delete(p.servers, name)
			p.logger.Info("server removed", "server", name)
		case e.def.SameEndpoint(s):
			e.def = s
		default:
			toClose = p.detachLocked(e, toClose)
			e.def = s
			e.err = nil
			p.logger.Info("server changed; it restarts on next use", "server", name)
		}
	}
	for name, s := range next {
		if _, ok := p.servers[name]; !ok {
			p.servers[name] = &entry{def: s}
		}
	}
	p.mu.Unlock()
	for _, c := range toClose {
		p.goClose(c)
	}
}

// detachLocked makes e take no more requests on its current session and
// abandons its start in progress. It appends to toClose the conns to close now.
func (p *Pool) detachLocked(e *entry, toClose []*conn) []*conn {
	if op := e.starting; op != nil {
		op.superseded = true
		op.cancel()
		e.starting = nil
	}
	if c := e.cur; c != nil {
		e.cur = nil
		if c.retire() {
			toClose = append(toClose, c)
		}
	}
	return toClose
}

// goClose closes c in the background; [Pool.Close] waits for it. c must have
// just become closing from a state whose session had not ended, so that its
// watch goroutine is still counted and this Add cannot race Close's Wait.
func (p *Pool) goClose(c *conn) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.logger.Debug("stopping server", "server", c.name, "pid", c.PID())
		_ = c.session.Close() // for stdio: closes stdin, then SIGTERM, then SIGKILL
		c.kill()              // and whatever the server started
		<-c.done
	}()
}

// acquire returns the session serving name, starting it if needed, with a
// request counted on it. The caller must [Pool.release] it.
func (p *Pool) acquire(ctx context.Context, name string) (*conn, error) {
	for range 3 {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		e, ok := p.servers[name]
		if !ok {
			err := p.unknownServerLocked(name)
			p.mu.Unlock()
			return nil, err
		}
		if e.def.Disabled {
			p.mu.Unlock()
			return nil, disabledError(e.def)
		}
		if c := e.cur; c != nil {
			now := p.now()
			if c.use(now) {
				e.lastUsed = now
				p.mu.Unlock()
				return c, nil
			}
		}
		op := e.starting
		if op == nil {
			op = p.startLocked(ctx, e)
		}
		p.mu.Unlock()

		select {
		case <-op.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for MCP server %q to start: %w", name, ctx.Err())
		}
		p.mu.Lock()
		switch c := op.c; {
		case op.superseded:
			// The configuration changed while it started: use the new one.
		case op.err != nil:
			p.mu.Unlock()
			return nil, op.err
		case c.getState().gone():
			p.mu.Unlock()
			c.waitDone(time.Second) // for the whole stderr tail
			return nil, &StartError{Server: name, Source: c.def.Source,
				Err:        fmt.Errorf("it exited right after initialize; %s", hint(c.def)),
				StderrTail: c.stderr.Tail()}
		case e.cur == c:
			now := p.now()
			if c.use(now) {
				e.lastUsed = now
				p.mu.Unlock()
				return c, nil
			}
		}
		p.mu.Unlock()
	}
	return nil, fmt.Errorf("MCP server %q: its configuration kept changing while it started; try again", name)
}

// startLocked starts e's server in the background.
func (p *Pool) startLocked(ctx context.Context, e *entry) *startOp {
	// The start serves every caller waiting for it, so it must not end
	// when the first caller's context does.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.ConnectTimeout)
	op := &startOp{done: make(chan struct{}), cancel: cancel}
	e.starting = op
	def := e.def
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		begin := time.Now()
		p.logger.Info("starting server", "server", def.Name, "transport", def.Transport)
		sctx, span := p.tracer.Start(sctx, "mcp_server.start")
		c, err := p.dial(sctx, def)
		// End the connect context before anyone can use the session: a
		// session that depended on it fails at once, in tests too.
		cancel()
		describeStart(span, def, err)
		span.End()

		p.mu.Lock()
		op.c, op.err = c, err
		current := !op.superseded && !p.closed
		if e.starting == op {
			e.starting = nil
		}
		if c != nil {
			p.live[c] = struct{}{}
			c.mu.Lock()
			if current {
				e.cur = c
				e.err = nil
				c.lastUsed = p.now()
				c.setStateLocked(connActive)
			} else {
				c.setStateLocked(connClosing)
			}
			c.mu.Unlock()
		} else if current {
			e.err = err
		}
		p.mu.Unlock()
		close(op.done)

		if err != nil {
			p.logger.Warn("server failed to start", "server", def.Name, "err", err)
			return
		}
		p.logger.Info("server started", "server", def.Name, "pid", c.PID(), "duration", time.Since(begin))
		p.wg.Add(1)
		go p.watch(e, c)
		if !current {
			p.goClose(c)
		}
	}()
	return op
}

// watch waits for c's session to end, by close, crash or disconnect, and
// cleans up after it.
func (p *Pool) watch(e *entry, c *conn) {
	defer p.wg.Done()
	werr := c.session.Wait()

	p.mu.Lock()
	c.mu.Lock()
	expected := c.state == connClosing
	if expected {
		c.setStateLocked(connClosed)
	} else {
		c.setStateLocked(connExited)
	}
	c.mu.Unlock()
	if e.cur == c {
		e.cur = nil
	}
	p.mu.Unlock()

	// Reap the process and read the rest of its stderr.
	_ = c.session.Close()
	c.kill()

	p.mu.Lock()
	delete(p.live, c)
	if !expected && e.cur == nil && e.starting == nil && e.def.SameEndpoint(c.def) {
		e.err = fmt.Errorf("%w: %v%s", ErrServerExited, exitReason(c, werr), tailText(c.stderr.Tail()))
	}
	p.mu.Unlock()
	if !expected {
		p.logger.Warn("server exited; it restarts on next use", "server", c.name, "pid", c.PID(), "err", werr, "stderr", c.stderr.Tail())
	}
	close(c.done)
}

func exitReason(c *conn, werr error) string {
	if c.cmd != nil && c.cmd.ProcessState != nil {
		return "process " + c.cmd.ProcessState.String()
	}
	if werr != nil {
		return werr.Error()
	}
	return "connection closed"
}

// release ends a request begun by acquire.
func (p *Pool) release(c *conn) {
	if c.unuse(p.now()) {
		p.goClose(c)
	}
}

// Tools returns the tools of server, starting it if needed. The list is
// cached until the server reports a change or restarts. The caller must not
// modify the tools.
func (p *Pool) Tools(ctx context.Context, server string) ([]*mcp.Tool, error) {
	for attempt := 0; ; attempt++ {
		c, err := p.acquire(ctx, server)
		if err != nil {
			return nil, err
		}
		tools, err := c.listTools(ctx, p.opts.ListTimeout)
		p.release(c)
		if err == nil {
			return slices.Clip(tools), nil
		}
		if attempt == 0 && ctx.Err() == nil && gone(c, err) {
			continue // listing is safe to repeat on a fresh process
		}
		return nil, p.requestError(c, "listing the tools of MCP server "+strconv.Quote(server), err)
	}
}

// Call calls tool on server with args, which must marshal to a JSON object
// (map[string]any, json.RawMessage, a struct) or be nil, and returns the
// server's result; a tool that failed has IsError set. tool must be the exact
// name the server uses.
//
// The call ends at ctx's deadline or after [Options.CallTimeout], whichever
// is first. If progress is non-nil, it receives this call's progress
// notifications; it must not block for long.
//
// A server that exits during the call makes Call fail with [ErrServerExited]
// and the tail of its stderr; the next use starts it again.
//
// A server's session is sent at most its definition's MaxConcurrency tool
// calls at once, else [Options.Concurrency]: the calls past that wait for
// a slot in the order they came, until ctx is done, and past
// [Options.Queue] of them waiting a call fails at once with a [BusyError].
// Every caller of the pool shares a server's slots.
func (p *Pool) Call(ctx context.Context, server, tool string, args any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	return p.CallFor(ctx, nil, server, tool, args, progress)
}

// CallFor is [Pool.Call] made for peer: while it is in flight, what the
// server asks of its client (elicitation, sampling, roots) and its log
// messages go to peer, or to another peer of the same MCP session
// ([Peer.Principal]) whose call began later. While calls of more than one
// MCP session, or a call without a peer, are in flight too, the server's
// requests are refused with [ErrSessionsShareServer] and its log messages
// dropped (counted in [ServerStatus.DroppedLogs]): a request does not say
// which call it serves. The questions of a server speaking MCP 2026-07-28,
// asked in the call's result (input_required), go to peer whatever else
// is in flight.
func (p *Pool) CallFor(ctx context.Context, peer Peer, server, tool string, args any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	if raw, ok := args.(json.RawMessage); ok && len(raw) == 0 {
		args = nil
	}
	c, err := p.acquire(ctx, server)
	if err != nil {
		return nil, err
	}
	defer p.release(c)

	if err := p.checkTool(ctx, c, tool); err != nil {
		return nil, err
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if peer != nil {
		// From MCP 2026-07-28 a request carries the log level it wants;
		// before, followLogs set it for the session. The peer's client
		// filters at the level it set.
		params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "debug"}
	}
	// The server's spans join the caller's trace.
	params.Meta = tracing.Inject(ctx, params.Meta)
	if progress != nil {
		tok := "codebridge-" + strconv.FormatUint(p.seq.Add(1), 10)
		params.SetProgressToken(tok)
		c.progress.Store(tok, progress)
		defer c.progress.Delete(tok)
	}
	if err := c.slots.acquire(ctx); err != nil {
		if errors.Is(err, errQueueFull) {
			return nil, &BusyError{Server: server, Source: c.def.Source, Concurrency: c.slots.size, Configured: c.def.MaxConcurrency > 0, Queue: c.slots.queue}
		}
		return nil, fmt.Errorf("calling tool %q of MCP server %q: waiting for one of its %d call slots: %w", tool, server, c.slots.size, err)
	}
	defer c.slots.release()
	defer c.calls.begin(peer)()
	cctx, cancel := context.WithTimeout(withCall(ctx, peer), p.opts.CallTimeout)
	defer cancel()
	res, err := c.session.CallTool(cctx, params)
	if err != nil {
		what := fmt.Sprintf("calling tool %q of MCP server %q", tool, server)
		if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, fmt.Errorf("%s: no result within %s (the pool's call timeout); the call was cancelled: %w", what, p.opts.CallTimeout, context.DeadlineExceeded)
		}
		return nil, p.requestError(c, what, err)
	}
	return res, nil
}

// checkTool returns an error wrapping ErrUnknownTool unless c's server has tool.
func (p *Pool) checkTool(ctx context.Context, c *conn, tool string) error {
	found, cached := c.lookupTool(tool)
	if found {
		return nil
	}
	if cached { // the list may be stale: ask again once
		c.invalidateTools()
	}
	tools, err := c.listTools(ctx, p.opts.ListTimeout)
	if err != nil {
		return p.requestError(c, "listing the tools of MCP server "+strconv.Quote(c.name), err)
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.Name == tool {
			return nil
		}
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return fmt.Errorf("%w %q on MCP server %q; its tools are: %s", ErrUnknownTool, tool, c.name, strings.Join(names, ", "))
}

// requestError describes err from a request on c, with the server's stderr
// tail if the server has gone away, and its secrets masked (an HTTP
// transport's error quotes the URL).
func (p *Pool) requestError(c *conn, what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return masked(c.def, fmt.Errorf("%s: %w", what, err))
	}
	if gone(c, err) {
		return masked(c.def, fmt.Errorf("%s: %w (%v); it will be started again on its next use%s",
			what, ErrServerExited, err, tailText(c.stderr.Tail())))
	}
	return masked(c.def, fmt.Errorf("%s: %w", what, err))
}

// gone reports whether err from a request on c means the server has gone
// away. If so it waits (briefly) until the pool has cleaned up after it, so
// that its stderr tail is complete.
func gone(c *conn, err error) bool {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false // the server answered, or did not in time
	}
	// A transport error (EOF, broken pipe, connection closed): the session
	// ends at the same moment, or the error was not about the session.
	return c.waitDone(2 * time.Second)
}

// AllTools returns the tools of every enabled server, starting at most limit
// servers at a time (no limit if limit <= 0) and stopping at ctx's deadline.
// A server that fails is reported in errs and does not affect the others.
func (p *Pool) AllTools(ctx context.Context, limit int) (tools map[string][]*mcp.Tool, errs map[string]error) {
	p.mu.Lock()
	var names []string
	for name, e := range p.servers {
		if !e.def.Disabled {
			names = append(names, name)
		}
	}
	p.mu.Unlock()
	slices.Sort(names)

	tools = make(map[string][]*mcp.Tool)
	errs = make(map[string]error)
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	if limit > 0 {
		g.SetLimit(limit)
	}
	for _, name := range names {
		g.Go(func() error {
			t, err := p.Tools(gctx, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[name] = err
				p.logger.Warn("listing tools failed", "server", name, "err", err)
			} else {
				tools[name] = t
			}
			return nil // one server failing must not cancel the others
		})
	}
	_ = g.Wait()
	return tools, errs
}

// Running reports whether server has a live session now, so that using it
// starts nothing.
func (p *Pool) Running(server string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.servers[server]
	return e != nil && e.cur != nil && !e.cur.getState().gone()
}

// LastFailure returns why server's last start failed (or its process
// ended), if it is not running and no start is under way; nil otherwise.
func (p *Pool) LastFailure(server string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.servers[server]
	if e == nil || e.starting != nil || e.cur != nil && !e.cur.getState().gone() {
		return nil
	}
	return e.err
}

// State is what a server is doing, as [Pool.Status] reports it.
type State string

const (
	StateConfigured State = "configured" // known, not running
	StateStarting   State = "starting"
	StateRunning    State = "running"
	StateFailed     State = "failed" // the last start failed or the process exited on its own
	StateDisabled   State = "disabled"
)

// ServerStatus describes one configured server.
type ServerStatus struct {
	Name        string
	Source      string
	Description string
	Transport   discovery.Transport
	State       State
	Err         string    // why it failed, for StateFailed
	PID         int       // the server's process, for a running stdio server
	Tools       int       // number of tools, once listed; 0 before
	LastUsed    time.Time // zero if never used
	// DroppedLogs counts the log messages of a running server dropped
	// since it started because it sent them while serving calls of more
	// than one MCP session (see [Peer]).
	DroppedLogs int
}

// Status describes every configured server, sorted by name.
func (p *Pool) Status() []ServerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ServerStatus, 0, len(p.servers))
	for name, e := range p.servers {
		st := ServerStatus{
			Name:        name,
			Source:      e.def.Source,
			Description: e.def.Description,
			Transport:   e.def.Transport,
			State:       StateConfigured,
			LastUsed:    e.lastUsed,
		}
		switch {
		case e.def.Disabled:
			st.State = StateDisabled
		case e.cur != nil && !e.cur.getState().gone():
			st.State = StateRunning
			st.PID = e.cur.PID()
			st.Tools, _ = e.cur.cachedTools()
			st.DroppedLogs = e.cur.calls.droppedLogs()
		case e.starting != nil:
			st.State = StateStarting
		case e.err != nil:
			st.State = StateFailed
			st.Err = e.err.Error()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b ServerStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// janitor stops servers that have been idle for idle.
func (p *Pool) janitor(idle time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(max(idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.stopIdle(idle)
		}
	}
}

// stopIdle stops every running server with no request in flight and none
// begun or ended within idle.
func (p *Pool) stopIdle(idle time.Duration) {
	now := p.now()
	var toClose []*conn
	p.mu.Lock()
	for _, e := range p.servers {
		c := e.cur
		if c == nil {
			continue
		}
		d := c.idle(now)
		if d < idle {
			continue
		}
		e.cur = nil
		if c.retire() {
			toClose = append(toClose, c)
		}
		p.logger.Info("stopping idle server", "server", c.name, "idle", d)
	}
	p.mu.Unlock()
	for _, c := range toClose {
		p.goClose(c)
	}
}

// Close stops every server and waits until they have exited. Requests in
// flight may finish until ctx is done; then their servers are killed. Close
// returns ctx's error in that case. After Close, every method fails with
// [ErrClosed].
func (p *Pool) Close(ctx context.Context) error {
	var toClose []*conn
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
		for _, e := range p.servers {
			toClose = p.detachLocked(e, toClose)
		}
	}
	p.mu.Unlock()
	for _, c := range toClose {
		p.goClose(c)
	}

	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	live := slices.Collect(maps.Keys(p.live))
	p.mu.Unlock()
	var closers sync.WaitGroup
	for _, c := range live {
		c.kill()
		closers.Go(func() { _ = c.session.Close() })
	}
	<-done
	closers.Wait()
	return fmt.Errorf("closing server pool: requests still in flight were ended: %w", ctx.Err())
}

func (p *Pool) unknownServerLocked(name string) error {
	names := slices.Sorted(maps.Keys(p.servers))
	if len(names) == 0 {
		return fmt.Errorf("%w %q: no servers are configured", ErrUnknownServer, name)
	}
	return fmt.Errorf("%w %q; configured servers: %s", ErrUnknownServer, name, strings.Join(names, ", "))
}

func disabledError(def *discovery.Server) error {
	where := "its configuration"
	if def.Source != "" {
		where = def.Source
	}
	return fmt.Errorf("%w: %q is disabled in %s; set \"disabled\": false there to use it", ErrDisabled, def.Name, where)
}
