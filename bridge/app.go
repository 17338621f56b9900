package bridge

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/front"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/stdio"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/rawio"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// App is a running codebridge: every part built once from the settings by
// [New], and stopped once, in order, by [App.Shutdown].
type App struct {
	cfg     settings.Config
	logger  *slog.Logger
	state   *state
	engine  sandboxEngine
	sandbox *sandbox.Manager
	trim    *idleTrim
	pool    *pool.Pool
	dir     *host.Directory
	server  *server.Server
	lanes   lanes // the tools and search lanes

	stopWatch context.CancelFunc
	watchDone chan struct{}
	stopWarm  context.CancelFunc // ends the sandbox's warm-up; nil if none was started
	warmDone  chan struct{}      // closed when the warm-up has returned

	mu       sync.Mutex   // protects following
	front    *front.Front // serving over HTTP; nil over stdio
	stopping bool         // Shutdown has begun: ServeHTTP serves nothing

	shutdown    sync.Once
	shutdownErr error
}

// sandboxEngine is what the App needs of the container engine driver
// newEngine returns: the sandbox manager's engine, a readiness check and a
// shutdown.
type sandboxEngine interface {
	sandbox.Engine
	// Ready connects to the engine and resolves the sandbox image, waiting
	// for it as w says.
	Ready(ctx context.Context, w sandbox.Wait) error
	// Close ends every container of the engine and closes its connection
	// (and a service codebridge started).
	Close(ctx context.Context) error
}

// state is what codebridge keeps in its state folder, each store built once
// over it.
type state struct {
	memory    *memory.Store   // memories and saved helpers
	manifests *manifest.Store // each server's last tool list and its pins
	oauth     *oauth.Store    // sign-ins
	audit     *audit.Log      // nil when the audit is off
}

// newState opens the stores of cfg.StateDir.
func newState(cfg settings.Config, logger *slog.Logger) *state {
	st := &state{
		memory:    memory.New(cfg.StateDir),
		manifests: manifest.New(manifest.Dir(cfg.StateDir)),
		oauth:     oauth.NewStore(cfg.StateDir),
	}
	if cfg.Audit {
		st.audit = audit.New(audit.Dir(cfg.StateDir), audit.Options{
			MaxSize: cfg.AuditMaxSize, Keep: cfg.AuditKeep, Contents: cfg.AuditContents, Logger: logger.With("component", "audit"),
		})
	}
	return st
}

// oauthHandlers gives each streamable HTTP server's pool connection the
// sign-in stored for it (codebridge login).
func (st *state) oauthHandlers(logger *slog.Logger) func(*discovery.Server) auth.OAuthHandler {
	// Refreshes have their own client and deadline, not http.DefaultClient's none.
	return func(def *discovery.Server) auth.OAuthHandler {
		return st.oauth.Handler(def, oauth.Client(def, oauth.DefaultRefreshTimeout), logger)
	}
}

// signIn signs in to a server while code waits, as codebridge login does,
// the person sent to the sign-in page through the agent's client.
func (st *state) signIn() host.SignIn {
	return func(ctx context.Context, def *discovery.Server, ask func(context.Context, string) error) error {
		_, err := oauth.Login(ctx, def, oauth.LoginOptions{Store: st.oauth, Ask: ask})
		return err
	}
}

// Options configure [New].
type Options struct {
	Logger  *slog.Logger // nil discards
	Version string       // codebridge's, reported to clients
}

// New builds codebridge's parts from cfg, each once: the stores of the
// state folder, the container engine, the sandbox over it, the pool of
// downstream servers, the directory of their tools, and the MCP server.
// Nothing slow happens here: the config folder is read and watched, the
// container engine is contacted in the background, and no downstream
// server starts until a run needs it. Stop the App with [App.Shutdown].
func New(ctx context.Context, cfg settings.Config, opts Options) (*App, error) {
	logger := orDiscard(opts.Logger)
	if err := confine.OwnDir(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("the state directory (MCP_BRIDGE_STATE_DIR): %w", err)
	}
	eng, err := newEngine(cfg, logger)
	if err != nil {
		return nil, err
	}
	return newApp(ctx, cfg, eng, logger, opts.Version), nil
}

// newApp is [New] with the engine given.
func newApp(ctx context.Context, cfg settings.Config, eng sandboxEngine, logger *slog.Logger, version string) *App {
	a := &App{cfg: cfg, logger: logger, state: newState(cfg, logger), engine: eng, trim: newIdleTrim(idleTrimAfter, nil)}
	a.sandbox = newSandbox(cfg, eng, a.state.memory, logger)
	a.pool = pool.New(pool.Options{Logger: logger.With("component", "pool"), IdleTimeout: cfg.ServerIdle,
		Concurrency: cfg.ServerConc, Queue: cfg.ServerQueue,
		OnTools: func(def *discovery.Server, tools []*mcp.Tool, instructions string) {
			a.dir.SaveManifest(def, tools, instructions)
			a.lanes.tools.Changed()
		},
		OAuth: a.state.oauthHandlers(logger)})
	// sinks watch every run and call as it ends: each of metrics, traces
	// and the dashboard's recent runs adds its own here.
	var sinks observe.Sinks
	a.dir = host.New(a.pool, host.Options{
		MaxArgs: cfg.MaxArgSize, MaxCallsPerRun: cfg.MaxCalls, Tools: cfg.Tools, Store: a.state.memory,
		Manifests: a.state.manifests, Audit: a.state.audit, Sink: sinks.OrNil(), Logger: logger,
		QuarantineNew: cfg.QuarantineNew, ConfirmSaveTool: cfg.ConfirmSaveTool, SignIn: a.state.signIn(), Setting: settingName,
	})
	a.server = server.NewServer(serverOptions(cfg, server.Options{Runner: a, Logger: logger, Version: version,
		Servers: a.dir, OnClient: a.pool.SetClientCapabilities, Sink: sinks.OrNil()}))
	a.lanes = a.newLanes(version)

	loadOpts := discovery.Options{AllowSelf: cfg.AllowSelf}
	first := discovery.Load(cfg.ConfigDir, nil, loadOpts)
	a.apply(first)

	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.stopWatch, a.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(a.watchDone)
		err := discovery.Watch(watchCtx, cfg.ConfigDir, discovery.WatchOptions{Options: loadOpts, Initial: first}, a.apply)
		if err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("watching the config folder stopped; restart codebridge to pick up changes", "dir", cfg.ConfigDir, "err", err)
		}
	}()

	if warm, _ := cfg.Warm(); warm > 0 {
		warmCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.stopWarm, a.warmDone = cancel, make(chan struct{})
		go func() {
			defer close(a.warmDone)
			_ = a.warm(warmCtx) // it logs its own failure; runs try again
		}()
	}
	return a
}

// serverOptions is opts with the MCP server's limits from cfg.
func serverOptions(cfg settings.Config, opts server.Options) server.Options {
	opts.Limits = server.Limits{
		Sessions: cfg.Sessions, MaxCodeSize: cfg.MaxCodeSize, Timeout: cfg.Timeout, MaxTimeout: cfg.MaxTimeout,
		OutputLimit: cfg.OutputLimit, MaxQueued: cfg.MaxQueued, CheckArgs: cfg.CheckArgs, Attachments: attachLimits(cfg),
	}
	opts.ConfigDir = cfg.ConfigDir
	opts.Debug = cfg.LogLevel <= slog.LevelDebug
	opts.Setting = settingName
	return opts
}

// settingName is the environment variable of the setting key, as messages
// for the person running codebridge name it: MCP_BRIDGE_MAX_QUEUED.
func settingName(key string) string { return settings.EnvPrefix + strings.ToUpper(key) }

// attachLimits are the limits on a run's attachments in cfg.
func attachLimits(cfg settings.Config) host.AttachLimits {
	return host.AttachLimits{Max: cfg.MaxAttachment, MaxN: cfg.MaxAttachN, MaxSum: cfg.MaxAttachSum, Setting: settingName}
}

// newSandbox is the sandbox manager over eng, with the settings' sessions,
// limits and preloads; saved helpers come from mem.
func newSandbox(cfg settings.Config, eng sandbox.Engine, mem *memory.Store, logger *slog.Logger) *sandbox.Manager {
	idle := cfg.SessionIdle
	if idle == 0 {
		idle = -1 // the setting's 0 means never
	}
	warm, spare := cfg.Warm()
	return sandbox.New(eng, sandbox.Options{
		Warm:        warm,
		Spare:       spare,
		Sessions:    cfg.Sessions,
		MaxSessions: cfg.MaxSessions,
		MaxRuns:     cfg.MaxRuns,
		IdleTimeout: idle,
		// Also in the environment; a pod claimed from a warm pool has none.
		WaitLimit: waitLimit(cfg),
		Memory:    cmp.Or(cfg.Memory, confine.DefaultMemory),
		Prelude:   host.SavedHelpers(mem, logger),
		Preload:   preload(cfg, logger),
		// A request carries a tool call's arguments, or an image or file in
		// base64, plus a small envelope.
		Limits: python.Limits{
			MaxRequest:    max(cfg.MaxArgSize, base64.StdEncoding.EncodedLen(cfg.MaxAttachment)) + 64<<10,
			MaxAttachment: cfg.MaxAttachment,
		},
		Logger: logger.With("component", "sandbox"),
	})
}

// preload is what a session's interpreter imports ahead of its first run.
func preload(cfg settings.Config, logger *slog.Logger) []string {
	if !cfg.Preloads() && len(cfg.Preload) > 0 {
		logger.Info("not preloading modules: the container memory limit is under 384m", "memory", cfg.Memory, "preload", cfg.Preload)
		return nil
	}
	return cfg.Preload
}

// apply publishes a configuration: the pool starts what is new and stops what
// is gone, then runs see the new snapshot.
func (a *App) apply(cfg *discovery.Config) {
	for _, prob := range cfg.Problems {
		a.logger.Warn("config problem", "problem", settings.ExplainProblem(prob).String())
	}
	a.pool.Update(cfg.Servers)
	a.dir.Update(cfg)
	a.lanes.tools.Changed()
	a.logger.Info("servers configured", "dir", cfg.Dir, "count", len(cfg.Servers))
}

// warm connects to the engine and starts the warm containers.
func (a *App) warm(ctx context.Context) error {
	if err := a.engine.Ready(ctx, sandbox.Wait{}); err != nil {
		a.logger.Warn("sandbox not ready; run_python will explain and try again", "err", settings.Explain(err))
		return err
	}
	a.sandbox.Warm(ctx)
	return nil
}

// Server is the MCP server, for a transport to serve.
func (a *App) Server() *server.Server { return a.server }

// Run runs req.Program in the sandbox; when the sandbox could not run it,
// the result's message names the setting that would help. It makes the
// App the MCP server's [server.Runner].
func (a *App) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	a.trim.begin()
	defer a.trim.end()
	return explainedRun(ctx, a.sandbox, req)
}

// explainedRun runs req in m, the result's message naming the setting that
// would help when the sandbox could not run it.
func explainedRun(ctx context.Context, m *sandbox.Manager, req sandbox.Request) (*sandbox.Result, error) {
	res, err := m.Run(ctx, req)
	if res != nil && res.Cause != nil && res.Error != nil {
		res.Error.Message = settings.Explain(res.Cause)
	}
	return res, err
}

// End ends a sandbox session (see [server.Runner]).
func (a *App) End(ctx context.Context, key string) { a.sandbox.End(ctx, key) }

// Detach lets a sandbox session outlive its MCP session (see [server.Runner]).
func (a *App) Detach(ctx context.Context, key string) { a.sandbox.Detach(ctx, key) }

// Ready reports whether the engine answers and the image is there,
// connecting first if needed; its error says what to do.
func (a *App) Ready(ctx context.Context) error {
	if err := a.engine.Ready(ctx, sandbox.Wait{}); err != nil {
		return errors.New(settings.Explain(err))
	}
	return nil
}

// ServeStdio serves MCP over in and out (nil: os.Stdin and os.Stdout) until
// the client closes its end or ctx ends; a closed input is no error. Then
// call [App.Shutdown].
func (a *App) ServeStdio(ctx context.Context, in io.ReadCloser, out io.Writer) error {
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	// The client's pipes, read and written through the poller, so that a
	// message arriving after a pause wakes one thread (package rawio).
	pin, undo := pollable(in)
	defer undo()
	in = pin.(io.ReadCloser)
	pout, undo := pollable(out)
	defer undo()
	out = pout.(io.Writer)
	a.logger.Info("serving MCP on stdio", "config_dir", a.cfg.ConfigDir)
	var err error
	if srv := a.laneServer(a.cfg.Lane); srv != nil {
		err = srv.Run(ctx, &stdio.Transport{Reader: in, Writer: out})
	} else {
		err = a.server.Run(ctx, &stdio.Transport{Reader: in, Writer: out})
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// pollable returns, for a pipe or socket file x, a file for its descriptor
// that Go's poller waits on (rawio.Pollable), with a func that closes that
// file and puts the descriptor's mode back; else x itself.
func pollable(x any) (any, func()) {
	f, ok := x.(*os.File)
	if !ok {
		return x, func() {}
	}
	p, restore := rawio.Pollable(f)
	if p == f {
		return f, restore
	}
	return p, func() {
		p.Close() // a second Close, after the connection's, only says so
		restore()
	}
}

// FrontOptions are the options of the HTTP front the settings ask for
// (cfg.HTTP and the HTTP settings), for [front.Listen].
func FrontOptions(cfg settings.Config, logger *slog.Logger, notice io.Writer) front.Options {
	return front.Options{
		Addr: cfg.HTTP, Auth: cfg.HTTPAuth, Token: cfg.HTTPToken, StateDir: cfg.StateDir, Origins: cfg.HTTPOrigins,
		ConfigDir: cfg.ConfigDir, MaxMCPSessions: cfg.MaxMCPSessions, SessionIdle: cfg.SessionIdle, Grace: cfg.ShutdownGrace,
		Logger: logger, Debug: cfg.LogLevel <= slog.LevelDebug, Notice: notice, Setting: settingName,
	}
}

// ServeHTTP serves the MCP server through f until [App.Shutdown], which
// stops f first; it returns nil then, else the error that stopped it.
func (a *App) ServeHTTP(f *front.Front) error {
	a.mu.Lock()
	if a.stopping {
		a.mu.Unlock()
		return nil
	}
	a.front = f
	a.mu.Unlock()
	name, _ := ChooseEngine(a.cfg)
	f.SetLanes(a.pickLane, a.lanes.tools.MCP(), a.lanes.search.MCP())
	err := f.Serve(a.server, front.Health{Ready: a.Ready, Engine: name,
		MaxSessions: a.cfg.MaxSessions, MaxRuns: a.cfg.MaxRuns, MaxQueued: a.cfg.MaxQueued})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops every part, once, in this order, and waits for each:
//
//  1. the HTTP front, if one serves: no new connections, runs in progress
//     finish within the grace period, then every MCP session closes;
//  2. the MCP server: runs still in progress are cancelled, and the
//     sandbox sessions of ended MCP sessions end;
//  3. the config watcher and the sandbox's warm-up;
//  4. the pool: every downstream server stops;
//  5. the sandbox: first the engine, which ends every container (closing a
//     container's stream ends its run at once, so the manager then waits
//     for nothing the engine must do, which takes seconds when many
//     codebridge processes stop together) and closes its connection and a
//     service codebridge started; then the sandbox manager's sessions;
//  6. the audit log, last, so that it records everything before.
//
// ctx is the budget of all of it, as in net/http's Server.Shutdown: when it
// ends, each part left is cut off. The front's error and the MCP server's
// are returned; what fails after them is logged as a warning, not
// returned: the session itself ended cleanly, and what is left behind is
// removed by the next start.
func (a *App) Shutdown(ctx context.Context) error {
	a.shutdown.Do(func() {
		a.mu.Lock()
		f := a.front
		a.stopping = true
		a.mu.Unlock()
		var errs []error
		if f != nil {
			errs = append(errs, f.Shutdown(ctx))
		}
		// The client is gone: its sandbox session ends before the sandbox closes.
		errs = append(errs, a.server.Close(ctx))
		a.lanes.close()
		a.stopWatch()
		<-a.watchDone
		if a.stopWarm != nil {
			a.stopWarm()
			select {
			case <-a.warmDone:
			case <-ctx.Done():
				a.logger.Warn("the sandbox's warm-up did not stop in time; closing the sandbox anyway")
			}
		}
		if err := a.pool.Close(ctx); err != nil {
			a.logger.Warn("stopping MCP servers", "err", err)
		}
		a.trim.close()
		if err := errors.Join(a.engine.Close(ctx), a.sandbox.Close(ctx)); err != nil {
			a.logger.Warn("closing the sandbox: containers may be left behind; the next codebridge start removes them", "err", err)
		}
		if err := a.state.audit.Close(ctx); err != nil {
			a.logger.Warn("closing the audit log", "err", err)
		}
		a.shutdownErr = errors.Join(errs...)
	})
	return a.shutdownErr
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Exec runs code once in the sandbox, every configured server reachable
// from it, as `codebridge exec` does; timeout 0 means the setting's. The
// attachments are what the run returned.
func (a *App) Exec(ctx context.Context, code string, timeout time.Duration) (*python.Result, *host.Attachments, error) {
	prog := python.Program{Code: code, OutputLimit: a.cfg.OutputLimit, CheckArgs: a.cfg.CheckArgs}
	var err error
	if prog.Servers, err = a.dir.Prepare(ctx, nil); err != nil {
		return nil, nil, err
	}
	att := host.NewAttachments(attachLimits(a.cfg))
	out, err := a.Run(ctx, sandbox.Request{Program: prog, Host: func(run sandbox.SessionInfo) python.Host {
		return att.Host(a.dir.Host(host.Run{Session: run.ID, Run: run.Run}))
	}, Timeout: cmp.Or(max(timeout, 0), a.cfg.Timeout)})
	if err != nil {
		return nil, nil, err
	}
	return out.Result, att, nil
}
