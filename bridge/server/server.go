package server

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/internal/inflight"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/tasks"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// ManualURI is the resource holding the sandbox manual.
const ManualURI = "codebridge://manual"

//go:embed manual.md
var manual string

// Options are a [Server]'s collaborators.
type Options struct {
	Runner  Runner       // runs code; required
	Logger  *slog.Logger // nil discards
	Version string       // reported to clients
	// Servers is the configured downstream servers; nil means none.
	Servers Directory
	// OnClient, if set, receives the capabilities each agent client
	// declared, once per MCP session before its first run (bridge/pool's
	// SetClientCapabilities, so downstream servers are told what can pass
	// through).
	OnClient func(*mcp.ClientCapabilities)
	// Limits bound what run_python takes.
	Limits Limits
	// ConfigDir is the config folder, named when no server is configured.
	ConfigDir string
	// Debug logs the SDK's session chatter.
	Debug bool
	// Setting names, for messages that say which setting to change, the
	// setting of a limit by its key: max_queued, sessions, max_code_size,
	// max_timeout. Nil names the key itself.
	Setting func(key string) string
	// Sink, if set, receives every run that ran code, when it ends.
	Sink observe.Sink
	// Tracing gives the tracer of run_python's spans; nil traces nothing
	// (the trace context a client sends is passed on all the same).
	Tracing trace.TracerProvider
}

// Limits bound run_python's calls, filled in from the settings by the
// composition root.
type Limits struct {
	Sessions    bool          // sandbox sessions are kept between calls
	MaxCodeSize int           // bytes of code, at most
	Timeout     time.Duration // a run's, unless the call asks
	MaxTimeout  time.Duration // the most a call may ask
	OutputLimit int           // bytes of output kept
	MaxQueued   int           // calls in progress or waiting, at most; 0 unbounded
	CheckArgs   bool          // a run's tool calls are checked against their schemas before it runs
	Attachments host.AttachLimits
	// Tasks (tasks.go): a run of a client of the tasks extension becomes a
	// task once it has taken TaskAfter (0: only when the call asks); at most
	// MaxTasks are kept, each TaskTTL after it ends.
	TaskAfter time.Duration
	MaxTasks  int
	TaskTTL   time.Duration
}

// Directory is what run_python needs from the configured MCP servers.
type Directory interface {
	// Prepare lists the enabled servers for a run, after starting the named
	// ones (an unknown name is an error) so the run's first call finds them warm.
	Prepare(ctx context.Context, names []string) ([]protocol.ServerInfo, error)
	// Host answers one run's requests (see [host.Run]).
	Host(run host.Run) protocol.Handler
}

// Server is codebridge's MCP server.
type Server struct {
	lim    Limits
	opts   Options
	logger *slog.Logger
	mcp    *mcp.Server
	tasks  *tasks.Store // the runs that became tasks
	tracer trace.Tracer

	// ended has one goroutine per MCP session, which ends the session's
	// sandbox when the MCP session ends; Close waits for them.
	ended sync.WaitGroup
	// bg has the runs of clients asked through input_required results,
	// which outlive the call that started them (rounds.go); Close waits.
	bg sync.WaitGroup

	mu       sync.Mutex // protects following
	sessions map[*mcp.ServerSession]mcpSession
	draining bool                            // Drain was called: new runs are refused
	quitting bool                            // runs in progress were cancelled; new ones are refused
	cancels  map[*mcp.CallToolRequest]func() // of the runs in progress
	queued   map[*mcp.ServerSession]int      // run_python calls in progress or waiting, by MCP session
	// suspended has the runs waiting for their client's answers, by the
	// requestState of the input_required result that asked (rounds.go).
	suspended map[string]*suspended

	runs inflight.Counter // run_python calls in progress or waiting their turn
}

// sessionEndTimeout bounds ending (or detaching) the sandbox session of an
// MCP session that ended: a call to the engine made when the client went
// away, with no caller whose context could carry its deadline. A shutdown
// waits for these calls within its own budget ([Server.Close]).
const sessionEndTimeout = 30 * time.Second

// NewServer builds the MCP server with its one tool and the manual resource.
func NewServer(opts Options) *Server {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{lim: opts.Limits, opts: opts, logger: logger, tracer: tracer(opts.Tracing), sessions: map[*mcp.ServerSession]mcpSession{}, cancels: map[*mcp.CallToolRequest]func(){}, queued: map[*mcp.ServerSession]int{}, suspended: map[string]*suspended{},
		tasks: tasks.NewStore(max(1, opts.Limits.MaxTasks), opts.Limits.TaskTTL)}
	var sdkLogger *slog.Logger // the SDK's session chatter only when debugging
	if opts.Debug {
		sdkLogger = logger.With("component", "mcp")
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codebridge", Title: "codebridge", Version: opts.Version},
		&mcp.ServerOptions{Logger: sdkLogger, SetCacheable: cacheHints, Capabilities: &mcp.ServerCapabilities{
			// Downstream servers' log messages pass through (bridge/pool).
			Logging:    &mcp.LoggingCapabilities{},
			Extensions: map[string]any{tasks.Extension: map[string]any{}},
			// The SDK answers prompts/list whether or not a server has
			// prompts, and a server that answers must say so (2026-07-28's
			// server/discover): codebridge lists none, and the list never
			// changes.
			Prompts: &mcp.PromptCapabilities{},
		}})
	s.registerTasks(s.mcp)
	s.mcp.AddTool(newTool(opts.Limits), s.runPython)
	s.mcp.AddResource(&mcp.Resource{
		URI:         ManualURI,
		Name:        "codebridge-manual",
		Title:       "codebridge sandbox manual",
		Description: "How to find, inspect and call MCP tools from run_python code.",
		MIMEType:    "text/markdown",
		Size:        int64(len(manual)),
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ManualURI, MIMEType: "text/markdown", Text: manual}}}, nil
	})
	return s
}

// MCP returns the underlying go-sdk server, for transports other than stdio.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t until the client goes away or ctx ends. When
// ctx ends, runs in progress are cancelled (interrupted, and killed if they do
// not stop): the SDK's shutdown waits for every request in progress.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	served, cancelled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(cancelled)
		select {
		case <-ctx.Done():
			s.quit()
		case <-served:
		}
	}()
	err := s.mcp.Run(ctx, t)
	close(served)
	<-cancelled
	return err
}

// Close cancels the runs in progress and waits, until ctx ends, for the
// sandbox sessions of ended MCP sessions to be ended.
func (s *Server) Close(ctx context.Context) error {
	s.quit()
	done := make(chan struct{})
	go func() { s.ended.Wait(); s.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ending the sandbox sessions of closed MCP sessions: %w", ctx.Err())
	}
}

// quit cancels every run in progress and refuses new ones.
func (s *Server) quit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quitting = true
	for _, cancel := range s.cancels {
		cancel()
	}
}

// Drain stops taking runs (a new one fails with a busy error) and waits for
// the runs in progress to finish, or for ctx to end; then it cancels those
// still running and returns.
func (s *Server) Drain(ctx context.Context) {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	if !s.runs.Wait(ctx) {
		s.logger.Warn("cancelling the runs still in progress at shutdown", "runs", s.Runs())
	}
	s.quit()
}

// setting names the setting of the limit key (see [Options.Setting]).
func (s *Server) setting(key string) string {
	if s.opts.Setting == nil {
		return key
	}
	return s.opts.Setting(key)
}

// MaxQueued is the bound on run_python calls in progress or waiting
// ([Limits.MaxQueued]) now.
func (s *Server) MaxQueued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim.MaxQueued
}

// SetMaxQueued changes the bound on run_python calls in progress or waiting.
func (s *Server) SetMaxQueued(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim.MaxQueued = n
}

// Runs is the number of run_python calls in progress or waiting their turn.
func (s *Server) Runs() int { return s.runs.Count() }

// startRun counts a run in, or says why it cannot start: MaxQueued are in
// progress or waiting, its MCP session has half of them (so that a burst from
// one session leaves room for the others' calls), or the server is draining.
// The run's ctx ends with ctx or when the server quits; done counts the run
// out.
func (s *Server) startRun(ctx context.Context, req *mcp.CallToolRequest) (_ context.Context, done func(), refused *mcp.CallToolResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch n := s.runs.Count(); {
	case s.draining || s.quitting:
		return nil, nil, toolError(protocol.FailBusy, "codebridge is shutting down and takes no new runs: try again when it is back.")
	case s.lim.MaxQueued > 0 && n >= s.lim.MaxQueued:
		return nil, nil, toolError(protocol.FailBusy, "%d run_python calls are already in progress or waiting, the most codebridge queues (%s): try again when one finishes, or ask the operator to raise %[2]s.", n, s.setting("max_queued"))
	case s.lim.MaxQueued > 1 && s.queued[req.Session] >= s.lim.MaxQueued/2:
		return nil, nil, toolError(protocol.FailBusy, "this session has %d run_python calls in progress or waiting, half of what codebridge queues (%s), the most one session may have so that others are served too: wait for some to finish before sending more.", s.queued[req.Session], s.setting("max_queued"))
	}
	s.runs.Add(1)
	s.queued[req.Session]++
	ctx, cancel := context.WithCancel(ctx)
	s.cancels[req] = cancel
	return ctx, func() {
		s.mu.Lock()
		delete(s.cancels, req)
		if s.queued[req.Session]--; s.queued[req.Session] == 0 {
			delete(s.queued, req.Session)
		}
		s.mu.Unlock()
		cancel()
		s.runs.Add(-1)
	}, nil
}

// runPython is the run_python handler. A problem with the caller's input or code
// is a tool result with IsError, written for a model to act on. A client
// speaking MCP 2026-07-28 or later is asked questions through the call's
// result, and answers by calling again (rounds.go); a client of the tasks
// extension may be handed a task instead of the result (tasks.go).
func (s *Server) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		r := s.resume(req)
		if r == nil {
			return unknownState(), nil
		}
		return s.wait(ctx, req, r)
	}
	ask := req.Session != nil && elicit.MultiRoundTrip(req.Session)
	if ok, _, _ := s.taskPlan(req); ask || ok {
		return s.background(ctx, req, ask, func(ctx context.Context, r *suspended) (*mcp.CallToolResult, error) {
			return s.run(ctx, req, r)
		})
	}
	return s.run(ctx, req, nil)
}

// run runs the code of req, traced; bg is its background run, if it has
// one, through whose inbox its questions go; without one, or one without an
// inbox, they go as requests of the server's own.
func (s *Server) run(ctx context.Context, req *mcp.CallToolRequest, bg *suspended) (*mcp.CallToolResult, error) {
	return s.traced(ctx, req, func(ctx context.Context) (*mcp.CallToolResult, error) { return s.runCode(ctx, req, bg) })
}

// runCode is run without its span.
func (s *Server) runCode(ctx context.Context, req *mcp.CallToolRequest, bg *suspended) (*mcp.CallToolResult, error) {
	ctx, done, refused := s.startRun(ctx, req)
	if refused != nil {
		return refused, nil
	}
	defer done()
	var in toolInput
	dec := json.NewDecoder(bytes.NewReader(orEmptyObject(req.Params.Arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return inputError("run_python arguments are invalid: %v. Pass {\"code\": \"print(1)\"}, optionally with \"servers\" (list of names) and \"timeout\" (seconds).", err), nil
	}
	if strings.TrimSpace(in.Code) == "" {
		return inputError("code is empty: pass the Python source to run in \"code\"."), nil
	}
	if in.Session != "" && !s.lim.Sessions {
		return inputError("\"session\" continues a sandbox session, and sessions are off here (%s=false): every call starts fresh, so call again without \"session\".", s.setting("sessions")), nil
	}
	if len(in.Code) > s.lim.MaxCodeSize {
		return inputError("code is %d bytes, over the %d byte limit (%s): send less code, or have it read data through an MCP tool.", len(in.Code), s.lim.MaxCodeSize, s.setting("max_code_size")), nil
	}
	codeSize(ctx, len(in.Code))
	timeout := s.lim.Timeout
	if in.Timeout != nil {
		var err error
		if timeout, err = runTimeout(*in.Timeout, s.lim.MaxTimeout, s.setting("max_timeout")); err != nil {
			return inputError("%v", err), nil
		}
	}

	prog := python.Program{Code: in.Code, OutputLimit: s.lim.OutputLimit, CheckArgs: s.lim.CheckArgs}
	att := host.NewAttachments(s.lim.Attachments)
	trace := new(observe.Trace)
	progress, stopProgress := s.progressFunc(ctx, req)
	defer stopProgress()
	bg.onTask(stopProgress)
	runHost := func(sandbox.SessionInfo) python.Host { return att.Host(host.NoServers) }
	sess := s.session(req)
	if ch := bg.route(); ch != nil {
		sess.ask = sess.ask.Via(ch)
	}
	if d := s.opts.Servers; d != nil {
		servers, err := d.Prepare(ctx, in.Servers)
		if err != nil {
			return inputError("%v", err), nil
		}
		prog.Servers = servers
		runHost = func(run sandbox.SessionInfo) python.Host {
			// The run starts now: its time limit runs from here.
			return att.Host(d.Host(host.Run{Session: run.ID, Run: run.Run, Progress: progress, Ask: sess.ask, Deadline: time.Now().Add(timeout), Trace: trace}))
		}
	} else if len(in.Servers) > 0 {
		return inputError("no MCP servers are configured, so %q cannot be used: add a JSON file to %s.", in.Servers, s.opts.ConfigDir), nil
	}

	// The first run may wait while Podman pulls the sandbox image: it sees the
	// pull's progress, and waits no longer than its own time limit.
	var pulled atomic.Bool
	var waited atomic.Int64
	wait := sandbox.Wait{
		Limit: timeout,
		Progress: func(line string) {
			pulled.Store(true)
			if progress != nil {
				progress("sandbox image: "+line, 0, 0)
			}
		},
		Waited: func(d time.Duration) { waited.Add(int64(d)) },
	}
	sreq := sandbox.Request{
		Session: sess.key, Handle: in.Session, Owner: principal(req),
		Reset: in.Reset, Program: prog, Host: runHost, Timeout: timeout, Wait: wait,
	}
	if sreq.Session == "" && sessionless(req) {
		// Its MCP session ends with this request: the state lives on under the handle.
		sreq.Session, sreq.Detached = detachedKey(), true
	}
	started := time.Now()
	res, err := s.opts.Runner.Run(ctx, sreq)
	unknown := err == nil && errors.Is(res.Cause, sandbox.ErrUnknownHandle)
	if unknown && requireSession(req) {
		return toolError(failUnknownSession, "%s. Nothing ran: this call asked (%s) to continue that session only. Call again without \"session\" to start a new one.", unknownHandle, metaRequireSession), nil
	}
	if unknown {
		sreq.Handle, sreq.Session, sreq.Detached = "", detachedKey(), true
		res, err = s.opts.Runner.Run(ctx, sreq)
		if err == nil && res.Session.New {
			res.Session.Reason = sandbox.ReasonUnknownHandle
		}
	}
	if err != nil {
		// The client cancelled the request or went away: a protocol-level end.
		return nil, err
	}
	s.logger.Debug("run finished", "session", res.Session.ID, "run", res.Session.Run, "duration", res.Duration,
		"exit", res.ExitCode, "error", res.Error != nil)
	calls, more := trace.Calls()
	result := formatResult(res.Result, &res.Session, att, calls, more)
	if s.opts.Sink != nil {
		s.opts.Sink.Run(observe.Run{Session: res.Session.ID, Run: res.Session.Run, Start: started, Duration: res.Duration,
			Outcome: runOutcome(res.Result), Calls: calls, CallsMore: more})
	}
	if pulled.Load() && (res.Error == nil || res.Error.Kind != protocol.FailUnavailable) {
		w := time.Duration(waited.Load())
		prepend(result, fmt.Sprintf("[sandbox] this run first waited %s for Podman to pull the sandbox image; later runs do not wait.", w.Round(100*time.Millisecond)))
	}
	if sreq.Detached && in.Session == "" && res.Session.New && res.Session.Handle != "" {
		// A client without an MCP session keeps nothing unless it passes the handle.
		prepend(result, fmt.Sprintf("[session] to keep this session's variables for your next call, pass \"session\": %q.", res.Session.Handle))
	}
	return result, nil
}

// mcpSession is what codebridge keeps for one MCP session while it lasts.
type mcpSession struct {
	key string          // its sandbox session; "" for none of its own
	ask *elicit.Session // questions to the person through its client, and what they allowed for the session
	// evicted is set when the MCP session was closed to make room for
	// others (Evict): its sandbox session then stays, for its handle.
	evicted bool
}

// session returns what codebridge keeps for the MCP session of req, and
// ends its sandbox session and forgets its approvals when the MCP session
// ends. A call without an MCP session (tests calling the handler directly)
// gets a fresh sandbox and cannot ask; a sessionless one (its MCP session
// lasts this request) gets no sandbox session of its own, and its questions
// go through this call only.
func (s *Server) session(req *mcp.CallToolRequest) mcpSession {
	ss := req.Session
	switch {
	case ss == nil:
		return mcpSession{}
	case sessionless(req):
		return mcpSession{ask: elicit.ForClient(ss)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[ss]
	if ok {
		return sess
	}
	// Random, not derived from ss: a detached sandbox session outlives ss,
	// whose address a later MCP session may reuse.
	sess = mcpSession{key: "mcp-" + rand.Text(), ask: elicit.ForClient(ss)}
	s.sessions[ss] = sess
	if ip := ss.InitializeParams(); s.opts.OnClient != nil && ip != nil {
		s.opts.OnClient(ip.Capabilities)
	}
	s.ended.Add(1)
	go func() {
		defer s.ended.Done()
		ss.Wait()
		s.endSuspended(ss)
		s.mu.Lock()
		gone := s.sessions[ss]
		delete(s.sessions, ss)
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), sessionEndTimeout)
		defer cancel()
		if gone.evicted {
			s.opts.Runner.Detach(ctx, gone.key)
			return
		}
		s.opts.Runner.End(ctx, gone.key)
	}()
	return sess
}

// runTimeout converts a caller's timeout in seconds to a duration: a larger one
// than maxTimeout is capped to it, as the tool schema's maximum announces. The
// range is checked before converting, since a float64 beyond time.Duration's
// range (about 9.2e9 seconds) converts to a negative number.
func runTimeout(seconds float64, maxTimeout time.Duration, setting string) (time.Duration, error) {
	switch {
	case math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds <= 0:
		return 0, fmt.Errorf("timeout must be a positive number of seconds, at most %g (%s; a larger one is capped to it); got %v",
			maxTimeout.Seconds(), setting, seconds)
	case seconds >= maxTimeout.Seconds():
		return maxTimeout, nil
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// progressFunc forwards progress (of downstream tool calls, of pulling the
// sandbox image) to the client as progress on this run_python request, if the
// client asked for progress; nil if it did not. After stop, nothing is sent:
// the request has been answered.
func (s *Server) progressFunc(ctx context.Context, req *mcp.CallToolRequest) (progress func(string, float64, float64), stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil, func() {}
	}
	// Progress must increase for the token, across all calls of the run, and
	// the run's tool calls report concurrently: count and send under one lock,
	// so the notifications also leave in increasing order.
	var (
		mu      sync.Mutex
		n       float64
		stopped bool
	)
	stop = func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
	return func(message string, _, _ float64) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		n++
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: n, Message: message,
		}); err != nil {
			s.logger.Debug("forwarding progress", "err", err)
		}
	}, stop
}

// output is run_python's structuredContent.
type output struct {
	Stdout          string            `json:"stdout"`
	Stderr          string            `json:"stderr"`
	ExitCode        int               `json:"exit_code"`
	DurationMS      int64             `json:"duration_ms"`
	StdoutBytes     int64             `json:"stdout_bytes"`
	StderrBytes     int64             `json:"stderr_bytes"`
	StdoutTruncated bool              `json:"stdout_truncated,omitempty"`
	StderrTruncated bool              `json:"stderr_truncated,omitempty"`
	Error           *protocol.Failure `json:"error,omitempty"`
	// Session says which sandbox session ran the code; absent for input errors.
	Session *sandbox.SessionInfo `json:"session,omitempty"`
	// Background is output that code left running wrote since the last run.
	Background string `json:"background,omitempty"`
	// Attachments lists the images and files after the text, in order;
	// DroppedAttachments those over the run's limits, with the reason.
	Attachments        []host.AttachmentInfo `json:"attachments,omitempty"`
	DroppedAttachments []host.AttachmentInfo `json:"dropped_attachments,omitempty"`
	// DroppedMore counts dropped attachments past the first 20 listed.
	DroppedMore int `json:"dropped_attachments_more,omitempty"`
	// Calls is the run's call trace: its tool calls, resource reads and
	// prompt gets in the order they ended, the first observe.MaxTraceCalls;
	// CallsMore counts the rest.
	Calls     []observe.Call `json:"calls,omitempty"`
	CallsMore int            `json:"calls_more,omitempty"`
}

// runOutcome is how a run ended, for sinks: ok, exit (a non-zero exit
// status), or its failure's kind.
func runOutcome(r *python.Result) string {
	switch {
	case r.Error != nil:
		return string(r.Error.Kind)
	case r.ExitCode != 0:
		return "exit"
	}
	return observe.OutcomeOK
}

// formatResult turns a run into a tool result: the printed output as text,
// then the images and files the run returned (att may be nil), and every
// detail, the run's calls among them, as structured content.
func formatResult(r *python.Result, sess *sandbox.SessionInfo, att *host.Attachments, calls []observe.Call, callsMore int) *mcp.CallToolResult {
	extra, kept, dropped, droppedMore := att.Contents()
	var text strings.Builder
	if note := sessionNote(sess); note != "" {
		text.WriteString(note + "\n")
	}
	if r.Background != "" {
		fmt.Fprintf(&text, "[output from code left running after the previous run]\n%s", r.Background)
		if !strings.HasSuffix(r.Background, "\n") {
			text.WriteByte('\n')
		}
	}
	text.WriteString(r.Stdout)
	section := func(title, body string) {
		if body == "" {
			return
		}
		if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
			text.WriteByte('\n')
		}
		if text.Len() > 0 || title != "" {
			fmt.Fprintf(&text, "[%s]\n", title)
		}
		text.WriteString(body)
	}
	section("stderr", r.Stderr)
	if len(dropped) > 0 {
		var b strings.Builder
		for _, d := range dropped {
			fmt.Fprintf(&b, "%s %q (%s) not returned: %s.\n", d.Kind, d.Name, d.MIMEType, d.Reason)
		}
		if droppedMore > 0 {
			fmt.Fprintf(&b, "and %d more not returned.\n", droppedMore)
		}
		section("attachments", b.String())
	}
	if f := r.Error; f != nil {
		switch {
		case f.Traceback != "":
			section(string(f.Kind), f.Traceback)
		default:
			section(string(f.Kind), f.Message)
		}
	} else if r.ExitCode != 0 {
		section("exit", fmt.Sprintf("exit status %d", r.ExitCode))
	}
	if text.Len() == 0 {
		text.WriteString("(no output)")
	}
	exit := r.ExitCode
	if r.Error != nil && exit == 0 {
		exit = -1 // a failure never reads as success, even when no status came back
	}
	out := output{
		Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: exit, DurationMS: r.Duration.Milliseconds(),
		StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated, Error: r.Error,
		Session: sess, Background: r.Background, Attachments: kept, DroppedAttachments: dropped, DroppedMore: droppedMore,
		Calls: calls, CallsMore: callsMore,
	}
	return &mcp.CallToolResult{
		Content:           append([]mcp.Content{&mcp.TextContent{Text: text.String()}}, extra...),
		StructuredContent: out,
		IsError:           r.Error != nil || r.ExitCode != 0,
	}
}

// sessionNote is the one line that tells a model its earlier state is gone,
// or will be: "" when nothing was lost.
func sessionNote(s *sandbox.SessionInfo) string {
	if s == nil {
		return ""
	}
	var notes []string
	if s.New {
		switch s.Reason {
		case "", sandbox.ReasonFirst, sandbox.ReasonOneShot:
		case sandbox.ReasonReset:
			notes = append(notes, "[session] started a fresh session as asked (reset): earlier variables, imports and files are gone.")
		case sandbox.ReasonUnknownHandle:
			notes = append(notes, fmt.Sprintf("[session] %s, so this run started a new session: redo any setup, and pass its handle %q from now on.", unknownHandle, s.Handle))
		default:
			notes = append(notes, fmt.Sprintf("[session] started a new session: the previous one ended (%s), so earlier variables, imports and files are gone; redo any setup.", strings.ReplaceAll(s.Reason, "_", " ")))
		}
	}
	if s.Ended != "" {
		notes = append(notes, fmt.Sprintf("[session] this run ended the session (%s): the next run starts a new one without this run's state.", strings.ReplaceAll(s.Ended, "_", " ")))
	}
	return strings.Join(notes, "\n")
}

// prepend puts line before the text of result.
func prepend(result *mcp.CallToolResult, line string) {
	text := result.Content[0].(*mcp.TextContent)
	text.Text = line + "\n" + text.Text
}

func inputError(format string, args ...any) *mcp.CallToolResult {
	return toolError("invalid_input", format, args...)
}

// toolError is a run_python result that ran no code, failed for reason kind.
func toolError(kind protocol.FailureKind, format string, args ...any) *mcp.CallToolResult {
	msg := fmt.Sprintf(format, args...)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: msg}},
		StructuredContent: output{ExitCode: -1, Error: &protocol.Failure{Kind: kind, Message: msg}},
		IsError:           true,
	}
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}
