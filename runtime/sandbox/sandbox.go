// Package sandbox runs Python programs in containers, as sessions: each
// session is one container with one long-lived interpreter whose global
// namespace all of the session's runs share. It keeps containers started
// ahead of time, serializes a session's runs in arrival order, ends idle
// sessions, bounds how many live at once, and turns every way a run can end
// (time limit, memory limit, crash, protocol abuse) into a [python.Result] and
// a clean container state.
//
// It knows containers only through the small [Engine] interface, so its logic
// is tested with a fake engine; the Engine of each driver under runtime/
// (runtime/podman, runtime/docker, runtime/kube) is a real one.
package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Engine starts sandbox containers running [python.Command].
type Engine interface {
	// Start starts a container; w says how the caller waits when the engine
	// must first prepare (Podman pulls the sandbox image).
	Start(ctx context.Context, w Wait) (Container, error)
}

// Wait is how a run waits when its engine must prepare before a container
// can start, such as Podman pulling the sandbox image: the preparation runs
// once, for every run waiting on it. The zero value waits as long as the
// context lets it and ignores the progress.
type Wait struct {
	// Progress receives what the engine reports while the run waits, line by
	// line; nil ignores it.
	Progress func(message string)
	// Limit is how long the run waits for the preparation before the start
	// fails with an error that explains the wait; 0 waits as long as the
	// context lets it.
	Limit time.Duration
	// Waited, if non-nil, is told how long the run waited for the
	// preparation when it had to wait, once the wait ends.
	Waited func(time.Duration)
}

// Container is one started sandbox container.
type Container interface {
	ID() string
	Started() time.Time
	// Stream is the protocol stream (the container's stdin and stdout, or a
	// socket it connected to); closing it unblocks every read and write.
	Stream() io.ReadWriteCloser
	// Done is closed when the container's output has ended.
	Done() <-chan struct{}
	// Exit waits for the container to stop and reports how it ended.
	Exit(ctx context.Context) (code int, oom bool, err error)
	// Stderr is what the container wrote outside the protocol, for diagnostics.
	Stderr() string
	// Remove kills and removes the container; removing twice is not an error.
	Remove(ctx context.Context) error
}

// Defaults for [Options].
const (
	DefaultIdleTimeout = 15 * time.Minute
	// DefaultWarmLimit is how long a warm container waits for its first
	// run; its bootstrap exits a little later ([python.WaitLimitEnv]).
	DefaultWarmLimit = 29 * time.Minute
	cleanupTimeout   = 30 * time.Second
	// assumedMemory is the container memory limit the default bounds assume
	// when [Options.Memory] does not say it.
	assumedMemory = 512 << 20
)

// Options configure a [Manager].
type Options struct {
	// Warm is how many started containers wait for a new session, so its
	// first run does not pay for a container start; 0 means none.
	Warm int
	// WarmLimit is how long a warm container may wait; 0 means DefaultWarmLimit.
	WarmLimit time.Duration
	// Spare keeps one container started ahead of time (besides Warm) only
	// after a session lost its container to a reset, a time limit, a crash
	// or its memory limit, until a session takes it: the run after such a
	// loss then does not wait for a container start, and a sandbox whose
	// sessions lose none holds no idle container. A spare that exits unused
	// (it waited WarmLimit) is not replaced.
	Spare bool
	// Sessions keeps a session's interpreter between runs. When false every
	// run gets a fresh container, removed afterwards.
	Sessions bool
	// MaxSessions bounds live sessions (each holding a container); 0 means
	// [DefaultBounds] for [LocalMachine], counting what Preload costs a
	// session until an interpreter says its image has none of Preload:
	// then the bound is worked out again without it, and OnBounds is told.
	// At the bound the session idle longest is ended to make room; when
	// every session is running code, a run that needs a new one fails with
	// a [SessionLimitError].
	MaxSessions int
	// OnBounds, if set, receives the bound on live sessions when it is
	// worked out again (see MaxSessions).
	OnBounds func(maxSessions int)
	// MaxRuns bounds the runs executing at once, across sessions; 0 means no
	// bound. A run past it waits for a slot, for at most its time limit, then
	// fails with a [RunLimitError]. Each session (named by [Request.Session],
	// with or without Sessions) queues its own runs, and a freed slot goes to
	// the sessions with runs waiting in turn, round-robin, so a burst from
	// one session cannot starve the others; see [DefaultBounds].
	MaxRuns int
	// IdleTimeout ends a session unused this long; 0 means DefaultIdleTimeout,
	// negative means never.
	IdleTimeout time.Duration
	// WaitLimit, sent in each interpreter's start frame, is how long it
	// waits for its next run before it exits ([protocol.Init.WaitLimit]);
	// 0 leaves it to the container's environment.
	WaitLimit time.Duration
	// Memory is the containers' memory limit, for messages; 0 omits it.
	Memory int64
	Limits python.Limits
	// Preload names modules a session's interpreter imports ahead of its
	// first run (see [protocol.Init.Preload]); used only with Sessions.
	Preload []string
	// Prelude returns the saved helpers a new session defines; nil means none.
	Prelude func() []protocol.Source
	// Handles records which session each handle names; nil keeps them in
	// this process ([NewMemoryHandles]).
	Handles Handles
	// Started, if set, is told of each container start as it ends: how
	// long it took and its error (nil: started). It must not block.
	Started func(took time.Duration, err error)
	Logger  *slog.Logger // nil discards
	// Tracing gives the tracer of the spans of container starts and
	// claims; nil traces nothing.
	Tracing trace.TracerProvider
}

// Request is one run.
type Request struct {
	// Session names the caller's session (e.g. the MCP session); "" runs in a
	// fresh container that is removed afterwards. Without Sessions it still
	// names the queue the run waits in for a run slot ([Options.MaxRuns]).
	Session string
	// Handle, if set, continues the session it names ([SessionInfo.Handle])
	// instead of the one Session names, if Owner created that session;
	// otherwise nothing runs and the Result's Cause is [ErrUnknownHandle].
	Handle string
	// Owner is who asks for the run: an opaque name of the authenticated
	// caller. A session the run creates belongs to it, and only its owner may
	// continue it by handle.
	Owner string
	// Detached marks a session this run creates as reachable by its handle
	// only: nobody will End it by key, so once it idles out or is evicted it
	// is forgotten and its handle is unknown.
	Detached bool
	// Reset discards the session's state first.
	Reset   bool
	Program python.Program
	// Host returns what answers the run's requests, once the run knows its
	// session and its number there; nil answers none.
	Host    func(run SessionInfo) python.Host
	Timeout time.Duration
	// Wait says how the run waits if its container cannot start until the
	// engine has prepared.
	Wait Wait
}

// host returns the host of the run info names.
func (r *Request) host(info SessionInfo) python.Host {
	if r.Host == nil {
		return nil
	}
	return r.Host(info)
}

// Result is a run's result with what happened to its session.
type Result struct {
	*python.Result
	Session SessionInfo
	// Cause is why the sandbox could not run the code, when Error says it
	// was unavailable: an error such as a [*SessionLimitError] or the
	// engine's, whose message Error repeats, for a caller that words it.
	Cause error
}

// SessionLimitError is why a run that needs a new session cannot have one:
// [Options.MaxSessions] sessions live and none can be ended to make room.
type SessionLimitError struct {
	Limit int
	// Busy is true when every session is running code; otherwise one is
	// only about to (a run holds its turn).
	Busy bool
}

func (e *SessionLimitError) Error() string {
	if e.Busy {
		return fmt.Sprintf("all %d sandbox sessions are running code; try again when one finishes, or raise the session limit", e.Limit)
	}
	return fmt.Sprintf("all %d sandbox sessions are in use; try again in a moment, or raise the session limit", e.Limit)
}

// RunLimitError is why a run did not start: [Options.MaxRuns] runs were
// executing for as long as its time limit.
type RunLimitError struct {
	Limit  int
	Waited time.Duration
}

func (e *RunLimitError) Error() string {
	return fmt.Sprintf("all %d run slots were busy for the whole %s of this run's time limit; try again when a run finishes, or raise the run limit",
		e.Limit, e.Waited.Round(time.Millisecond))
}

// SessionInfo tells the caller which session a run used.
type SessionInfo struct {
	ID string `json:"id"`
	// Handle continues this session from any call of the same owner
	// ([Request.Handle]); it stays the same when the session starts a new
	// interpreter (ID then changes). Empty for a run without a session.
	Handle string `json:"handle,omitempty"`
	Run    int    `json:"run"` // 1 for the first run of the session
	// New is true when this run started the session; Reason then says why
	// earlier state (if any) is gone.
	New    bool   `json:"new"`
	Reason string `json:"reason,omitempty"`
	// Ended is set when this run ended the session (e.g. "timeout"); the next
	// run starts a new one.
	Ended string `json:"ended,omitempty"`
}

// Reasons a session starts or ends.
const (
	ReasonFirst    = "first_run"
	ReasonReset    = "reset"
	ReasonTimeout  = "timeout"
	ReasonOOM      = "out_of_memory"
	ReasonCrash    = "crashed"
	ReasonProtocol = "protocol_error"
	ReasonCancel   = "cancelled"
	ReasonIdle     = "idle"
	ReasonEvicted  = "evicted"
	ReasonOneShot  = "sessions_off"
	// ReasonUnknownHandle: the run passed a handle that names no session of
	// its owner, so it started a new session (said by the caller that retries).
	ReasonUnknownHandle = "unknown_handle"
)

// Manager runs programs in sessions.
type Manager struct {
	eng     Engine
	opts    Options
	log     *slog.Logger
	tracer  trace.Tracer
	handles Handles
	adoptMu sync.Mutex // one adoption at a time ([Adopter])

	mu       sync.Mutex // protects following
	sessions map[string]*session
	warm     []*primed
	filling  int
	spare    bool // Options.Spare wants a container started ahead, until one is taken
	closed   bool

	bg sync.WaitGroup // warm-container starts and removals in the background

	// slots bounds the runs executing at once when MaxRuns is set; nil when
	// nothing does.
	slots *slots

	// maxSessions is the bound on live sessions (Options.MaxSessions, or
	// the default); noPreload is set once an interpreter said its image
	// has none of Options.Preload, after which nothing is preloaded and a
	// default bound counts no preload.
	maxSessions   atomic.Int64
	defaultBound  bool
	noPreload     atomic.Bool
	noPreloadOnce sync.Once
}

// New returns a manager; nothing starts until [Manager.Warm] or a run.
func New(eng Engine, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	defaultBound := opts.MaxSessions <= 0
	if defaultBound {
		opts.MaxSessions = defaultSessions(opts.Memory, len(opts.Preload) > 0)
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.WarmLimit <= 0 {
		opts.WarmLimit = DefaultWarmLimit
	}
	m := &Manager{eng: eng, opts: opts, log: opts.Logger, tracer: tracer(opts.Tracing), handles: cmp.Or(opts.Handles, NewMemoryHandles()), sessions: map[string]*session{}, defaultBound: defaultBound}
	m.maxSessions.Store(int64(opts.MaxSessions))
	if opts.MaxRuns > 0 {
		m.slots = newSlots(opts.MaxRuns)
	}
	return m
}

// defaultSessions is the default bound on live sessions for containers of
// memory limit memory (0: assumed), counting a preload's cost or not.
func defaultSessions(memory int64, preload bool) int {
	return DefaultBounds(LocalMachine(), cmp.Or(memory, assumedMemory), IdleMemory(preload)).Sandboxes
}

// MaxSessions is the bound on live sessions now (see [Options.MaxSessions]).
func (m *Manager) MaxSessions() int { return int(m.maxSessions.Load()) }

// learnPreload takes in what an interpreter's first run said of the image:
// the modules of Options.Preload it lacks. When it lacks them all, no
// interpreter started after this preloads, and a default bound on
// sessions no longer counts what a preload costs: a minimal image gets
// the sessions its containers really hold.
func (m *Manager) learnPreload(missing []string) {
	if len(m.opts.Preload) == 0 || len(missing) < len(m.opts.Preload) {
		return
	}
	m.noPreloadOnce.Do(func() {
		m.noPreload.Store(true)
		if !m.defaultBound {
			m.log.Info("the sandbox image has none of the modules to preload: not preloading", "preload", m.opts.Preload)
			return
		}
		n := defaultSessions(m.opts.Memory, false)
		was := m.maxSessions.Swap(int64(n))
		m.log.Info("the sandbox image has none of the modules to preload: not preloading, and more live sessions fit",
			"preload", m.opts.Preload, "max_sessions", n, "was", was)
		if m.opts.OnBounds != nil {
			m.opts.OnBounds(n)
		}
	})
}

// slot waits for a place among the runs executing at once, shared fairly
// with the other sessions' runs, for at most timeout, and returns the
// function that gives it back.
func (m *Manager) slot(ctx context.Context, key string, timeout time.Duration) (release func(), res *Result, err error) {
	if m.slots == nil {
		return func() {}, nil, nil
	}
	err = m.slots.acquire(ctx, key, timeout)
	var limit *RunLimitError
	if errors.As(err, &limit) {
		res := failed(protocol.FailBusy, limit.Error())
		res.Cause = limit
		return nil, res, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return m.slots.release, nil, nil
}

// Warm starts the warm containers and waits for them.
func (m *Manager) Warm(ctx context.Context) {
	var wg sync.WaitGroup
	for range m.reserve() {
		wg.Go(func() { m.fill(ctx) })
	}
	wg.Wait()
}

// Run runs req.Program. Failures of the code or of the sandbox are in the
// Result; the error is non-nil only when ctx ended first.
func (m *Manager) Run(ctx context.Context, req Request) (*Result, error) {
	if !m.opts.Sessions || (req.Session == "" && req.Handle == "") {
		return m.runOnce(ctx, req)
	}
	s, err := m.session(ctx, req)
	if err != nil {
		return unavailable(err), nil
	}
	// End and Close cancel the run through rctx when they cannot wait for it.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := s.acquire(rctx, stop); err != nil {
		return nil, err
	}
	defer m.runDone(rctx, s)
	release, refused, err := m.slot(rctx, s.key, req.Timeout)
	if refused != nil || err != nil {
		return refused, err
	}
	defer release()
	res, err := m.runTurn(rctx, s, req)
	if err != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// runTurn runs req in s, whose turn the caller holds. The error is non-nil
// when the run did not finish (its Result says why).
func (m *Manager) runTurn(ctx context.Context, s *session, req Request) (*Result, error) {
	if s.current() == stateGone {
		if req.Handle != "" { // forgotten while this run waited for its turn
			return unavailable(ErrUnknownHandle), nil
		}
		return failed(protocol.FailUnavailable, "the sandbox session has ended: its client disconnected or the sandbox shut down"), nil
	}
	if s.it != nil && s.dead() && !m.moved(ctx, s) {
		s.endIfDead(ctx)
	}
	if s.away {
		m.takeBack(ctx, s)
	}
	lost := false // a reset took the session's container
	if req.Reset && s.it != nil {
		s.end(ctx, ReasonReset)
		lost = true
	} else if req.Reset {
		s.reason = ReasonReset
	}
	info := SessionInfo{}
	if s.it == nil {
		if err := m.makeRoom(ctx, s); err != nil {
			return unavailable(err), nil
		}
		if res := m.startSession(ctx, s, req.Wait); res != nil {
			return res, ctx.Err()
		}
		info.New, info.Reason = true, s.reason
		req.Program.Prelude = m.prelude()
		if lost {
			m.wantSpare(ctx)
		}
	}
	// The session holds the turn, so this run is the interpreter's next.
	res, err := s.it.Run(ctx, req.Program, req.host(SessionInfo{ID: s.id, Run: s.it.Runs() + 1}), req.Timeout)
	if res != nil {
		m.learnPreload(res.PreloadMissing)
	}
	info.ID, info.Run, info.Handle = s.id, s.it.Runs(), s.handle
	if err != nil && !errors.Is(err, python.ErrBusy) && ctx.Err() == nil && m.moved(ctx, s) {
		info.Ended = ReasonMoved
		res = failed(protocol.FailUnavailable, "another codebridge replica took this session's sandbox (a call with its handle reached it) as this run started, so the code may not have run: run it again, which takes the sandbox back").Result
		return &Result{Result: res, Session: info}, err
	}
	if err != nil && !errors.Is(err, python.ErrBusy) {
		reason := m.explain(ctx, s.ct, res, err)
		s.end(ctx, reason)
		info.Ended = reason
		if ctx.Err() == nil { // not a session ending with its client
			m.wantSpare(ctx)
		}
	}
	return &Result{Result: res, Session: info}, err
}

// primed is a started container whose interpreter has been sent the helper
// modules: a warm one loads them while it waits.
type primed struct {
	ct Container
	it *python.Interpreter
}

// runOnce runs in a fresh container that is removed afterwards.
func (m *Manager) runOnce(ctx context.Context, req Request) (*Result, error) {
	release, refused, err := m.slot(ctx, req.Session, req.Timeout)
	if refused != nil || err != nil {
		return refused, err
	}
	defer release()
	b, err := m.take(ctx, req.Wait)
	if err != nil {
		return unavailable(fmt.Errorf("cannot start a sandbox container: %w", err)), ctx.Err()
	}
	defer m.refill(ctx)
	ct := b.ct
	req.Program.Prelude = m.prelude()
	info := SessionInfo{ID: ct.ID()[:min(12, len(ct.ID()))], Run: 1, New: true, Reason: ReasonOneShot}
	res, err := b.it.Run(ctx, req.Program, req.host(info), req.Timeout)
	if err != nil && !errors.Is(err, context.Canceled) {
		m.explain(ctx, ct, res, err)
	}
	b.it.Close()
	rctx, cancel := cleanupCtx(ctx)
	ct.Remove(rctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return &Result{Result: res, Session: info}, ctx.Err()
	}
	return &Result{Result: res, Session: info}, nil
}

// exitTimeout bounds asking the engine how a container whose interpreter
// died ended: the run is over, its caller may have gone, and the answer
// only words the result.
const exitTimeout = 10 * time.Second

// explain fills res.Error for a run whose interpreter died and returns the
// reason its session ended.
func (m *Manager) explain(ctx context.Context, ct Container, res *python.Result, err error) string {
	switch {
	case errors.Is(err, python.ErrStuck):
		return ReasonTimeout
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ReasonCancel
	case errors.Is(err, python.ErrProtocol):
		return ReasonProtocol
	}
	// The process died: ask the container why.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitTimeout)
	defer cancel()
	code, oom, werr := ct.Exit(wctx)
	switch {
	case werr != nil:
		res.Error = &protocol.Failure{Kind: protocol.FailUnavailable, Message: "the sandbox process ended without reporting a result, and its exit status is unknown: " + werr.Error()}
		return ReasonCrash
	case oom:
		res.ExitCode = code
		msg := "killed: the code exceeded the sandbox memory limit"
		if m.opts.Memory > 0 {
			msg += " of " + mib(m.opts.Memory)
		}
		res.Error = &protocol.Failure{Kind: protocol.FailOOM, Message: msg}
		return ReasonOOM
	}
	res.ExitCode = code
	msg := fmt.Sprintf("the Python process died with exit code %d without reporting a result", code)
	if code > 128 {
		msg = fmt.Sprintf("the Python process was killed by signal %d (exit code %d) without reporting a result", code-128, code)
	}
	if diag := strings.TrimSpace(ct.Stderr()); diag != "" {
		msg += "; stderr: " + tail(diag, 2000)
	}
	res.Error = &protocol.Failure{Kind: protocol.FailExit, Message: msg}
	return ReasonCrash
}

// endIfDead ends s (turn) if its interpreter died since its last run: code
// left running exited, crashed or exhausted memory, or the container was
// killed. The run about to start then gets a new session that says why,
// instead of that death being reported as its own.
// dead reports whether s's interpreter has ended. The caller holds the turn.
func (s *session) dead() bool {
	select {
	case <-s.it.Done():
		return true
	default:
		return false
	}
}

func (s *session) endIfDead(ctx context.Context) {
	select {
	case <-s.it.Done():
	default:
		return
	}
	res := &python.Result{}
	err := s.it.Err()
	reason := s.m.explain(ctx, s.ct, res, err)
	if res.Error != nil {
		err = errors.New(res.Error.Message)
	}
	s.m.log.Info("sandbox session ended between runs", "session", s.id, "reason", reason, "err", err)
	s.end(ctx, reason)
}

// End ends the named session and removes its container, e.g. when its MCP
// session closes. A run in progress finishes first; if ctx ends before it
// does, the run is cancelled and ends the session itself when it stops. Runs
// still waiting for the session are answered that it has ended.
func (m *Manager) End(ctx context.Context, key string) {
	m.mu.Lock()
	s := m.sessions[key]
	delete(m.sessions, key)
	m.mu.Unlock()
	if s == nil {
		return
	}
	m.handles.Unbind(ctx, s.ref)
	s.idle.Stop()
	s.retire(false)
	if err := s.acquire(ctx, nil); err != nil {
		s.retire(true)
		return
	}
	s.release(ctx)
}

// Sessions is the number of live sessions (with a running interpreter).
func (m *Manager) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		if s.current() == stateLive {
			n++
		}
	}
	return n
}

// WarmContainers is the number of started containers waiting for a new
// session (the warm pool and a spare).
func (m *Manager) WarmContainers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.warm)
}

// Close ends every session, removes every container and waits for
// background work; runs in progress are cancelled, and Close waits for them
// until ctx ends. Closing again does nothing.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	sessions := m.sessions
	m.sessions = map[string]*session{}
	warm := m.warm
	m.warm = nil
	m.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		m.handles.Unbind(ctx, s.ref)
		s.idle.Stop()
		s.retire(true)
	}
	for _, s := range sessions {
		if err := s.acquire(ctx, nil); err != nil {
			errs = append(errs, fmt.Errorf("a run in sandbox session %q did not stop: %w", s.key, err))
			continue
		}
		s.release(ctx)
	}
	for _, b := range warm {
		b.it.Close()
		rctx, cancel := cleanupCtx(ctx)
		if err := b.ct.Remove(rctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	m.bg.Wait()
	return errors.Join(errs...)
}

// session returns the session req names: the one its handle names, or
// the one for its key, created (without an interpreter) with a new handle
// owned by req.Owner.
func (m *Manager) session(ctx context.Context, req Request) (*session, error) {
	if req.Handle != "" {
		ref := refOf(req.Handle, req.Owner)
		key, err := m.handles.Resolve(ctx, ref)
		if errors.Is(err, ErrUnknownHandle) {
			return m.adopt(ctx, req, ref) // another replica's, if the engine reaches it
		}
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if s := m.sessions[key]; s != nil && s.ref == ref {
			return s, nil
		}
		return nil, ErrUnknownHandle
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errShutDown
	}
	s := m.sessions[req.Session]
	if s != nil {
		m.mu.Unlock()
		return s, nil
	}
	handle := rand.Text()
	s = &session{m: m, key: req.Session, reason: ReasonFirst, handle: handle, ref: refOf(handle, req.Owner), detached: req.Detached}
	s.idle = time.AfterFunc(time.Hour, func() { m.expire(s) })
	s.idle.Stop()
	m.sessions[req.Session] = s
	m.mu.Unlock()
	if err := m.handles.Bind(ctx, s.ref, s.key); err != nil {
		m.End(ctx, s.key)
		return nil, fmt.Errorf("recording the new session's handle: %w", err)
	}
	return s, nil
}

// Detach leaves the session key to its handle: nobody will End it by key,
// so it is forgotten once it idles out or is evicted, or at once when it
// holds no interpreter. An MCP session closed to make room for others
// leaves its sandbox session this way.
func (m *Manager) Detach(ctx context.Context, key string) {
	m.mu.Lock()
	s := m.sessions[key]
	m.mu.Unlock()
	if s == nil {
		return
	}
	s.detach()
	if s.current() == stateEmpty && s.tryAcquire() {
		if s.it == nil {
			m.forget(ctx, s)
		}
		s.release(ctx)
	}
}

// forget removes the detached session s, whose interpreter has ended and
// whose turn the caller holds: its handle is unknown from now on.
func (m *Manager) forget(ctx context.Context, s *session) {
	m.mu.Lock()
	if m.sessions[s.key] == s {
		delete(m.sessions, s.key)
	}
	m.mu.Unlock()
	m.handles.Unbind(ctx, s.ref)
	s.idle.Stop()
	s.retire(false)
}

// makeRoom ends the session idle longest when starting s would pass
// MaxSessions; it fails when every session is running code.
func (m *Manager) makeRoom(ctx context.Context, s *session) error {
	m.mu.Lock()
	live := 0
	var oldest *session
	for _, o := range m.sessions {
		if o == s || o.current() != stateLive {
			continue
		}
		live++
		if !o.busy() && (oldest == nil || o.lastUsed().Before(oldest.lastUsed())) {
			oldest = o
		}
	}
	m.mu.Unlock()
	limit := m.MaxSessions()
	if live < limit {
		return nil
	}
	if oldest == nil {
		return &SessionLimitError{Limit: limit, Busy: true}
	}
	if !oldest.tryAcquire() {
		return &SessionLimitError{Limit: limit}
	}
	m.log.Info("ending the sandbox session idle longest to make room", "session", oldest.id, "max_sessions", limit)
	oldest.end(ctx, ReasonEvicted)
	if oldest.isDetached() {
		m.forget(ctx, oldest)
	}
	oldest.release(ctx)
	return nil
}

// startSession starts s's container and interpreter; on failure it returns
// the Result to answer with.
func (m *Manager) startSession(ctx context.Context, s *session, w Wait) *Result {
	b, err := m.take(ctx, w)
	if err != nil {
		return unavailable(fmt.Errorf("cannot start a sandbox container: %w", err))
	}
	s.ct, s.it = b.ct, b.it
	s.id = newID()
	s.set(stateLive)
	m.mark(ctx, s)
	m.log.Debug("sandbox session started", "session", s.id, "container", b.ct.ID(), "reason", s.reason)
	// Replace the warm container now: the first run, which follows at once,
	// does not wait for it, and later runs of the session need none.
	m.refill(ctx)
	return nil
}

// runDone ends a run: the session's idle clock starts again and the next
// waiting run goes.
func (m *Manager) runDone(ctx context.Context, s *session) {
	s.touch()
	// A detached session that lost its interpreter idles out too: nobody
	// else would forget it.
	if d := m.opts.IdleTimeout; d > 0 && (s.current() == stateLive || s.isDetached()) {
		s.idle.Reset(d)
	}
	s.release(context.WithoutCancel(ctx))
}

// expire ends s if it has been idle for the idle timeout.
func (m *Manager) expire(s *session) {
	if !s.tryAcquire() {
		return // running code: its release starts the clock again
	}
	ctx := context.Background()
	defer s.release(ctx)
	if time.Since(s.lastUsed()) < m.opts.IdleTimeout {
		return
	}
	if s.it != nil {
		m.log.Info("ending idle sandbox session", "session", s.id, "idle", m.opts.IdleTimeout)
		s.end(ctx, ReasonIdle)
	}
	if s.isDetached() {
		m.forget(ctx, s)
	}
}

func (m *Manager) prelude() []protocol.Source {
	if m.opts.Prelude == nil {
		return nil
	}
	return m.opts.Prelude()
}

// take returns a warm container if one is ready, else starts one, waiting for the
// engine as w says.
func (m *Manager) take(ctx context.Context, w Wait) (_ *primed, err error) {
	ctx, span := m.tracer.Start(ctx, "sandbox.claim")
	warm := false
	defer func() { endClaim(span, warm, err) }()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errShutDown
	}
	var b *primed
	for len(m.warm) > 0 && b == nil {
		cand := m.warm[0]
		m.warm = m.warm[1:]
		select {
		case <-cand.ct.Done(): // exited while waiting; its watcher removes it
		default:
			if time.Since(cand.ct.Started()) < m.opts.WarmLimit {
				b, m.spare = cand, false
				break
			}
			m.bg.Go(func() { m.discard(ctx, cand) }) // it gives up waiting soon: do not race it
		}
	}
	m.mu.Unlock()
	if b != nil {
		warm = true
		return b, nil
	}
	return m.start(ctx, w, false)
}

// start starts a container and its interpreter; forWarm says it is to
// wait among the warm containers.
func (m *Manager) start(ctx context.Context, w Wait, forWarm bool) (_ *primed, err error) {
	ctx, span := m.startSpan(ctx, forWarm)
	var ct Container
	defer func() { endStart(span, ct, err) }()
	began := time.Now()
	ct, err = m.eng.Start(ctx, w)
	if m.opts.Started != nil {
		m.opts.Started(time.Since(began), err)
	}
	if err != nil {
		return nil, err
	}
	init := protocol.Init{WaitLimit: m.opts.WaitLimit.Seconds()}
	if m.opts.Sessions {
		if !m.noPreload.Load() {
			init.Preload = m.opts.Preload
		}
	}
	return &primed{ct: ct, it: python.Start(ct.Stream(), init, m.opts.Limits)}, nil
}

// discard closes b's interpreter and removes its container.
func (m *Manager) discard(ctx context.Context, b *primed) {
	b.it.Close()
	rctx, cancel := cleanupCtx(ctx)
	defer cancel()
	b.ct.Remove(rctx)
}

// remove removes a container in the background, or at once when the manager
// is closing (Close waits for the background, and nothing may be added then).
func (m *Manager) remove(ctx context.Context, ct Container) {
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.bg.Add(1)
	}
	m.mu.Unlock()
	rm := func() {
		rctx, cancel := cleanupCtx(ctx)
		defer cancel()
		ct.Remove(rctx)
	}
	if closed {
		rm()
		return
	}
	go func() {
		defer m.bg.Done()
		rm()
	}()
}

// reserve claims the missing places among the warm containers.
func (m *Manager) reserve() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0
	}
	want := m.opts.Warm
	if m.spare {
		want = max(want, 1)
	}
	n := max(want-len(m.warm)-m.filling, 0)
	m.filling += n
	return n
}

// wantSpare starts a spare container, with Options.Spare, when a session has
// just lost its container: the run after the loss takes it.
func (m *Manager) wantSpare(ctx context.Context) {
	if !m.opts.Spare {
		return
	}
	m.mu.Lock()
	m.spare = true
	m.mu.Unlock()
	m.refill(ctx)
}

// refill starts the missing warm containers in the background.
func (m *Manager) refill(ctx context.Context) {
	for range m.reserve() {
		m.bg.Go(func() { m.fill(context.WithoutCancel(ctx)) })
	}
}

// fill starts one warm container for a place reserve claimed.
func (m *Manager) fill(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	b, err := m.start(sctx, Wait{}, true)
	m.mu.Lock()
	m.filling--
	ok := err == nil && !m.closed
	if ok {
		m.warm = append(m.warm, b)
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("starting a warm sandbox container", "err", err)
		return
	}
	if !ok {
		m.discard(ctx, b)
		return
	}
	m.bg.Go(func() { m.watch(context.WithoutCancel(ctx), b) })
}

// watch replaces a warm container whose container exits before it is used.
func (m *Manager) watch(ctx context.Context, b *primed) {
	<-b.ct.Done()
	m.mu.Lock()
	inPool := false
	for i, w := range m.warm {
		if w == b {
			m.warm = append(m.warm[:i:i], m.warm[i+1:]...)
			inPool = true
			m.spare = false // unused all its life: it did not pay for itself
			break
		}
	}
	m.mu.Unlock()
	if !inPool {
		return // taken by a session, which removes it, or the manager closed
	}
	m.log.Debug("warm sandbox container exited; replacing it", "container", b.ct.ID())
	m.discard(ctx, b)
	m.refill(ctx)
}

func failed(kind protocol.FailureKind, msg string) *Result {
	return &Result{Result: &python.Result{ExitCode: -1, Error: &protocol.Failure{Kind: kind, Message: msg}}}
}

// unavailable is the Result of a run the sandbox could not run, for err.
func unavailable(err error) *Result {
	res := failed(protocol.FailUnavailable, err.Error())
	res.Cause = err
	return res
}

func cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func mib(b int64) string {
	if b%(1<<20) == 0 {
		return strconv.FormatInt(b>>20, 10) + " MiB"
	}
	return strconv.FormatInt(b, 10) + " bytes"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
