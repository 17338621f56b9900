package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/stdio"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateGrace is how long closing a stdio server waits for it to exit after
// its stdin is closed, before SIGTERM (and as long again before SIGKILL).
const terminateGrace = 3 * time.Second

// A conn is one running session with one definition of a server: one process
// for stdio, one connection for HTTP. A changed definition gets a new conn.
type conn struct {
	name    string
	def     *discovery.Server // the definition it was started from
	session *mcp.ClientSession
	cmd     *exec.Cmd    // stdio only
	pid     atomic.Int64 // stdio only: set once the process has started
	stderr  *lineRing
	life    context.Context    // the transport's long-lived context
	cancel  context.CancelFunc // ends life
	done    chan struct{}      // closed once the session has ended and the process is reaped

	// mu protects following: the conn's lifecycle, and the requests that
	// hold it alive. Pool.mu, when needed too, is taken first. State
	// changes only through setStateLocked.
	mu       sync.Mutex
	state    connState
	refs     int       // requests in flight
	lastUsed time.Time // when the last request began or ended

	progress sync.Map                // progress token (string) -> func(*mcp.ProgressNotificationParams)
	calls    calls                   // the peers of the tool calls in flight
	caps     *mcp.ClientCapabilities // what its client declared: Pool.clientCaps when it started

	slots    *limiter      // the tool calls in flight and waiting
	toolsSem chan struct{} // one slot: held while listing tools
	token    tokenHolder   // streamable HTTP with OAuth only: its sign-in, set before the session starts

	toolsMu sync.Mutex // protects following
	tools   []*mcp.Tool
	byName  map[string]*mcp.Tool
	toolsOK bool   // tools is the current list
	listed  bool   // a listing has completed: the session is set up
	toolGen uint64 // bumped by notifications/tools/list_changed

	onTools   func(*discovery.Server, []*mcp.Tool, string) // Options.OnTools
	relisting atomic.Bool                                  // a background listing after list_changed is under way
}

// newConn returns the conn of def, whose tool calls take one of
// concurrency slots, waiting in a queue of at most queue for one.
func newConn(def *discovery.Server, concurrency, queue, stderrLines int, logger *slog.Logger) *conn {
	c := &conn{
		name:     def.Name,
		def:      def,
		done:     make(chan struct{}),
		slots:    newLimiter(cmp.Or(def.MaxConcurrency, concurrency), queue),
		toolsSem: make(chan struct{}, 1),
	}
	c.calls.name, c.calls.logger = def.Name, logger
	c.stderr = newLineRing(stderrLines, func(line string) {
		logger.Debug("server stderr", "server", def.Name, "line", line)
	})
	c.stderr.mask = def.Secrets.Mask // a server may print its token
	return c
}

// toolsChanged handles notifications/tools/list_changed.
func (c *conn) toolsChanged(context.Context, *mcp.ToolListChangedRequest) {
	c.toolsMu.Lock()
	c.toolsOK = false
	c.toolGen++
	c.toolsMu.Unlock()
}

// relist lists c's tools again in the background after the server reported a
// change, so that OnTools (codebridge's saved manifest) follows the change
// even when nothing asks for the tools. A burst of notifications costs one
// listing: listTools reads again while the list keeps changing. A change
// announced before the first listing has completed (servers announce one as
// they start, while the session is still being set up) is left to that
// listing.
func (p *Pool) relist(c *conn) {
	c.toolsMu.Lock()
	listed := c.listed
	c.toolsMu.Unlock()
	if !listed || c.onTools == nil || !c.relisting.CompareAndSwap(false, true) {
		return
	}
	p.mu.Lock()
	// Counted only while c's session has not ended, as for goClose: its
	// watch goroutine is then still counted (watch holds p.mu to record the
	// end), so this Add cannot race Close's Wait.
	if st := c.getState(); st != connActive && st != connDraining || p.closed {
		p.mu.Unlock()
		c.relisting.Store(false)
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		for {
			_, err := c.listTools(c.life, p.opts.ListTimeout)
			c.relisting.Store(false)
			if err != nil {
				p.logger.Debug("listing tools again after tools/list_changed", "server", c.name, "err", masked(c.def, err))
				return
			}
			// A change announced after the last read, while this
			// goroutine still held the flag, is read too.
			if _, ok := c.cachedTools(); ok || !c.relisting.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// onProgress routes a progress notification to the call that set its token.
func (c *conn) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	if f, ok := c.progress.Load(tok); ok {
		f.(func(*mcp.ProgressNotificationParams))(req.Params)
	}
}

// lookupTool reports whether name is in the cached list, and whether there is
// a cached list.
func (c *conn) lookupTool(name string) (found, cached bool) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if !c.toolsOK {
		return false, false
	}
	_, found = c.byName[name]
	return found, true
}

func (c *conn) cachedTools() (n int, ok bool) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	return len(c.tools), c.toolsOK
}

func (c *conn) invalidateTools() { c.toolsChanged(context.TODO(), nil) }

// listTools returns the server's tools, from the cache or by listing every
// page within timeout.
func (c *conn) listTools(ctx context.Context, timeout time.Duration) ([]*mcp.Tool, error) {
	c.toolsMu.Lock()
	if c.toolsOK {
		t := c.tools
		c.toolsMu.Unlock()
		return t, nil
	}
	c.toolsMu.Unlock()

	select {
	case c.toolsSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.toolsSem }()

	for attempt := 0; ; attempt++ {
		c.toolsMu.Lock()
		if c.toolsOK { // another caller listed them while we waited
			t := c.tools
			c.toolsMu.Unlock()
			return t, nil
		}
		gen := c.toolGen
		c.toolsMu.Unlock()

		tools, err := c.listPages(ctx, timeout)
		if err != nil {
			return nil, err
		}
		c.toolsMu.Lock()
		current := c.toolGen == gen // no list_changed arrived meanwhile
		c.listed = true
		if current {
			c.tools = tools
			c.byName = make(map[string]*mcp.Tool, len(tools))
			for _, t := range tools {
				c.byName[t.Name] = t
			}
			c.toolsOK = true
		}
		c.toolsMu.Unlock()
		// A list that changed while it was read is read again, a few times:
		// servers often announce a change just after they start.
		if !current && attempt < 2 {
			continue
		}
		if c.onTools != nil {
			var instructions string
			if r := c.session.InitializeResult(); r != nil {
				instructions = r.Instructions
			}
			c.onTools(c.def, tools, instructions)
		}
		return tools, nil
	}
}

// listPages lists every page of the server's tools within timeout.
func (c *conn) listPages(ctx context.Context, timeout time.Duration) ([]*mcp.Tool, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tools, err := listPages(lctx, "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		r, err := c.session.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Tools, r.NextCursor, nil
	})
	if err != nil {
		if lctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer to tools/list within %s: %w", timeout, err)
		}
		return nil, err
	}
	return maskTools(c.secrets(), tools), nil
}

// waitDone waits up to d for the session's end to be fully processed, so that
// the stderr tail is complete. It reports whether the session has ended.
func (c *conn) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
		return false
	}
}

// ended reports whether the session has ended and been cleaned up after.
func (c *conn) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// PID returns the server's process ID, or 0.
func (c *conn) PID() int { return int(c.pid.Load()) }

// kill ends the server at once: the process group for stdio, the connection
// for HTTP. It is safe to call at any time, also while the server starts.
func (c *conn) kill() {
	if pid := c.PID(); pid > 0 {
		killGroup(pid)
		_ = c.cmd.Process.Kill() // where there are no process groups
	}
	c.cancel()
}

// dial starts def and initializes an MCP session with it within ctx's deadline.
// The session itself outlives ctx.
func (p *Pool) dial(ctx context.Context, def *discovery.Server) (*conn, error) {
	c := newConn(def, p.opts.Concurrency, p.opts.Queue, p.opts.StderrLines, p.logger)
	c.onTools = p.opts.OnTools
	longCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.life, c.cancel = longCtx, cancel
	fail := func(err error) (*conn, error) {
		c.kill()
		if c.PID() > 0 {
			// Connect closes the session on failure, which reaps the
			// process; make sure, and that stderr has been read to the end.
			_ = c.cmd.Wait()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer to initialize within %s (%w)", p.opts.ConnectTimeout, err)
		}
		return nil, &StartError{
			Server:     def.Name,
			Source:     def.Source,
			Err:        masked(def, withHint(def, err)),
			StderrTail: c.stderr.Tail(),
		}
	}

	t, err := p.transport(def, c)
	if err != nil {
		return fail(err)
	}
	c.caps = p.clientCaps.Load()
	opts := c.clientOptions(cmp.Or(c.caps, &mcp.ClientCapabilities{}))
	opts.Logger = p.logger
	opts.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		c.toolsChanged(ctx, req)
		p.relist(c)
	}
	opts.ProgressNotificationHandler = c.onProgress
	client := mcp.NewClient(p.opts.Client, &opts)
	client.AddReceivingMiddleware(c.rootsMiddleware)
	// A server that does not answer in time, or whose start is abandoned, is
	// killed at once rather than asked to exit.
	stop := afterFunc(ctx, c.kill)
	cs, err := client.Connect(ctx, &detachedTransport{t, longCtx, cancel}, nil)
	if !stop() {
		// Killed for ctx: report that, not the EOF it caused.
		if err == nil {
			_ = cs.Close()
		}
		err = ctx.Err()
	}
	if err != nil {
		return fail(err)
	}
	c.session = cs
	c.followLogs(ctx, p)
	return c, nil
}

// perRequestLogLevel is the first MCP version in which each request says
// the log level it wants, in _meta, and logging/setLevel is gone.
const perRequestLogLevel = "2026-07-28"

// followLogs asks a server that logs for every level, so that the agent's
// client, which sets its own level, can be given what it asked for.
func (c *conn) followLogs(ctx context.Context, p *Pool) {
	r := c.session.InitializeResult()
	if r == nil || r.Capabilities == nil || r.Capabilities.Logging == nil || r.ProtocolVersion >= perRequestLogLevel {
		return
	}
	if err := c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		p.logger.Debug("asking for the server's log messages", "server", c.name, "err", masked(c.def, err))
	}
}

// transport returns how to reach def. For stdio it prepares c.cmd.
func (p *Pool) transport(def *discovery.Server, c *conn) (mcp.Transport, error) {
	if p.testTransport != nil {
		return p.testTransport(def)
	}
	switch def.Transport {
	case discovery.Stdio, "":
		if def.Command == "" {
			return nil, errors.New(`no "command" given`)
		}
		cmd := exec.Command(def.Command, def.Args...)
		cmd.Dir = def.Cwd
		cmd.Env = childEnv(os.Environ(), def.Env)
		cmd.Stderr = c.stderr
		cmd.WaitDelay = 2 * time.Second // a grandchild holding stderr open must not block Wait
		setProcAttr(cmd)
		c.cmd = cmd
		return &commandTransport{cmd: cmd, c: c}, nil
	case discovery.Streamable:
		client, err := httpClient(def.URL, def.Headers)
		if err != nil {
			return nil, err
		}
		t := &mcp.StreamableClientTransport{Endpoint: def.URL, HTTPClient: client}
		if p.opts.OAuth != nil && !hasHeader(def.Headers, "Authorization") {
			t.OAuthHandler = p.opts.OAuth(def)
			c.token, _ = t.OAuthHandler.(tokenHolder)
		}
		return t, nil
	case discovery.SSE:
		client, err := httpClient(def.URL, def.Headers)
		if err != nil {
			return nil, err
		}
		return &mcp.SSEClientTransport{Endpoint: def.URL, HTTPClient: client}, nil
	default:
		return nil, fmt.Errorf("unknown transport %q (want %q, %q or %q)", def.Transport, discovery.Stdio, discovery.Streamable, discovery.SSE)
	}
}

// A detachedTransport connects within the deadline of the ctx it is given, but
// hands the inner transport a long-lived context: SSEClientTransport keeps its
// event stream on the context Connect receives.
type detachedTransport struct {
	mcp.Transport
	long   context.Context
	cancel context.CancelFunc // cancels long
}

func (t *detachedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stop := afterFunc(ctx, t.cancel)
	c, err := t.Transport.Connect(t.long)
	if !stop() { // ctx ended while connecting, and long with it
		if c != nil {
			_ = c.Close()
		}
		return nil, ctx.Err()
	}
	return c, err
}

// afterFunc is [context.AfterFunc], except that stop, if f has been started,
// waits for f to return: the goroutine that runs f has an owner.
func afterFunc(ctx context.Context, f func()) (stop func() bool) {
	done := make(chan struct{})
	stopFunc := context.AfterFunc(ctx, func() {
		defer close(done)
		f()
	})
	return func() bool {
		if stopFunc() {
			return true
		}
		<-done
		return false
	}
}

// A commandTransport starts a stdio server's command and speaks MCP with it
// over its stdin and stdout (package stdio), as go-sdk's CommandTransport
// does, but reading each message in go-sdk's own read loop, with no
// goroutine of its own in between. It records the PID, so that kill can
// reach the process while initialize is still under way.
type commandTransport struct {
	cmd *exec.Cmd
	c   *conn
}

func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	t.c.pid.Store(int64(t.cmd.Process.Pid))
	return stdio.NewConn(stdout, stdin, 0, func() error { return stopProcess(t.cmd, stdin) }), nil
}

// stopProcess ends a stdio server as the MCP specification asks: it closes
// the server's stdin and waits for it to exit, then sends SIGTERM, then
// SIGKILL, each after terminateGrace. Waiting for the process also closes
// its stdout, which ends a read in progress.
func stopProcess(cmd *exec.Cmd, stdin io.Closer) error {
	if err := stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(terminateGrace)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the server process did not exit after SIGKILL")
}

// hasHeader reports whether headers has name, in any case.
func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// Inherited environment: a stdio server sees only these variables from
// codebridge's environment (plus its configured "env"), so secrets meant for
// codebridge or for other servers do not leak into it.
var (
	inheritedVars = []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TEMP", "TMP",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
		// Windows needs these to start most programs.
		"SYSTEMROOT", "SystemRoot", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA",
		"ProgramFiles", "ProgramData",
	}
	inheritedPrefixes = []string{"LC_", "XDG_", "npm_config_"}
)

// childEnv returns the environment of a stdio server: the inherited subset of
// parent, then extra (which wins), sorted.
func childEnv(parent []string, extra map[string]string) []string {
	env := make(map[string]string)
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if slices.Contains(inheritedVars, k) || slices.ContainsFunc(inheritedPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			env[k] = v
		}
	}
	maps.Copy(env, extra)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
