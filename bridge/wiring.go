package bridge

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// sandboxRuntime is what parts needs from the container runtime: runs, a
// warm-up at start and a shutdown. [containers] is the real one.
type sandboxRuntime interface {
	server.Runner
	// Warm prepares containers ahead of time; it returns when done or when ctx ends.
	Warm(ctx context.Context) error
	// Ready reports whether the sandbox answers.
	Ready(ctx context.Context) error
	// Close removes every container and waits for background work.
	Close(ctx context.Context) error
}

// parts is what a running codebridge is made of: the sandbox, the pool of
// downstream servers, and the watcher that keeps the pool's configuration current.
type parts struct {
	sandbox sandboxRuntime
	pool    *pool.Pool
	dir     *host.Directory
	audit   *audit.Log // nil when the audit is off; closed last
	logger  *slog.Logger

	stopWatch context.CancelFunc
	watchDone chan struct{}
	stopWarm  context.CancelFunc // ends the sandbox's warm-up; nil if none was started
	warmDone  chan struct{}      // closed when the warm-up has returned
	closeOnce sync.Once
}

// oauthHandlers gives each streamable HTTP server's pool connection the
// sign-in stored for it (codebridge login).
func oauthHandlers(cfg settings.Config, logger *slog.Logger) func(*discovery.Server) auth.OAuthHandler {
	store := oauth.NewStore(cfg.StateDir)
	// Refreshes have their own client and deadline, not http.DefaultClient's none.
	return func(def *discovery.Server) auth.OAuthHandler {
		return store.Handler(def, oauth.Client(def, oauth.DefaultRefreshTimeout), logger)
	}
}

// signInFor signs in to a server while code waits, as codebridge login
// does, the person sent to the sign-in page through the agent's client.
func signInFor(cfg settings.Config) host.SignIn {
	store := oauth.NewStore(cfg.StateDir)
	return func(ctx context.Context, def *discovery.Server, ask func(context.Context, string) error) error {
		_, err := oauth.Login(ctx, def, oauth.LoginOptions{Store: store, Ask: ask})
		return err
	}
}

// start builds the parts. Nothing slow happens here: the config folder is read
// and watched, the container engine is contacted in the background, and no downstream server
// starts until a run needs it.
func start(ctx context.Context, cfg settings.Config, logger *slog.Logger) (*parts, error) {
	if err := confine.OwnDir(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("the state directory (MCP_BRIDGE_STATE_DIR): %w", err)
	}
	ct, err := newContainers(cfg, logger)
	if err != nil {
		return nil, err
	}
	return startWith(ctx, cfg, ct, logger)
}

// startWith is start with the sandbox given.
func startWith(ctx context.Context, cfg settings.Config, sb sandboxRuntime, logger *slog.Logger) (*parts, error) {
	p := &parts{sandbox: sb, audit: newAuditLog(cfg, logger), logger: logger}
	p.pool = pool.New(pool.Options{Logger: logger.With("component", "pool"), IdleTimeout: cfg.ServerIdle,
		OnTools: func(def *discovery.Server, tools []*mcp.Tool) { p.dir.SaveManifest(def, tools) },
		OAuth:   oauthHandlers(cfg, logger)})
	p.dir = host.New(p.pool, host.Options{
		MaxArgs: cfg.MaxArgSize, Tools: cfg.Tools, Store: memory.New(cfg.StateDir),
		Manifests: manifest.New(manifest.Dir(cfg.StateDir)), Audit: p.audit, Logger: logger,
		QuarantineNew: cfg.QuarantineNew, ConfirmSaveTool: cfg.ConfirmSaveTool, SignIn: signInFor(cfg),
	})

	loadOpts := discovery.Options{AllowSelf: cfg.AllowSelf}
	first := discovery.Load(cfg.ConfigDir, nil, loadOpts)
	p.apply(first)

	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stopWatch, p.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(p.watchDone)
		err := discovery.Watch(watchCtx, cfg.ConfigDir, discovery.WatchOptions{Options: loadOpts, Initial: first}, p.apply)
		if err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("watching the config folder stopped; restart codebridge to pick up changes", "dir", cfg.ConfigDir, "err", err)
		}
	}()

	if warm, _ := cfg.Warm(); warm > 0 {
		warmCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p.stopWarm, p.warmDone = cancel, make(chan struct{})
		go func() {
			defer close(p.warmDone)
			_ = p.sandbox.Warm(warmCtx) // it logs its own failure; runs try again
		}()
	}
	return p, nil
}

// newAuditLog is the audit log the settings ask for; nil records none.
func newAuditLog(cfg settings.Config, logger *slog.Logger) *audit.Log {
	if !cfg.Audit {
		return nil
	}
	return audit.New(audit.Dir(cfg.StateDir), audit.Options{
		MaxSize: cfg.AuditMaxSize, Keep: cfg.AuditKeep, Contents: cfg.AuditContents, Logger: logger.With("component", "audit"),
	})
}

// apply publishes a configuration: the pool starts what is new and stops what
// is gone, then runs see the new snapshot.
func (p *parts) apply(cfg *discovery.Config) {
	for _, prob := range cfg.Problems {
		p.logger.Warn("config problem", "problem", settings.ExplainProblem(prob).String())
	}
	p.pool.Update(cfg.Servers)
	p.dir.Update(cfg)
	p.logger.Info("servers configured", "dir", cfg.Dir, "count", len(cfg.Servers))
}

// close stops everything start began and waits for it: the watcher, the
// sandbox's warm-up, every downstream server, every container, and an engine
// service codebridge spawned. What fails is logged as a warning, not returned:
// the session itself ended cleanly, and what is left behind is removed by the
// next start.
func (p *parts) close() {
	p.closeOnce.Do(func() {
		p.stopWatch()
		<-p.watchDone
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if p.stopWarm != nil {
			p.stopWarm()
			select {
			case <-p.warmDone:
			case <-ctx.Done():
				p.logger.Warn("the sandbox's warm-up did not stop in time; closing the sandbox anyway")
			}
		}
		if err := p.pool.Close(ctx); err != nil {
			p.logger.Warn("stopping MCP servers", "err", err)
		}
		if err := p.sandbox.Close(ctx); err != nil {
			p.logger.Warn("closing the sandbox: containers may be left behind; the next codebridge start removes them", "err", err)
		}
		if err := p.audit.Close(ctx); err != nil {
			p.logger.Warn("closing the audit log", "err", err)
		}
	})
}

// containers is the real sandbox runtime: sessions (runtime/sandbox) over
// the containers of an engine driver ([engine]).
type containers struct {
	*sandbox.Manager
	engine driver
	logger *slog.Logger
	trim   *idleTrim
}

// newContainers is the sandbox runtime over the engine the settings name.
func newContainers(cfg settings.Config, logger *slog.Logger) (*containers, error) {
	eng, err := newEngine(cfg, logger)
	if err != nil {
		return nil, err
	}
	return withEngine(cfg, eng, logger), nil
}

// withEngine is the sandbox runtime over eng, which it closes.
func withEngine(cfg settings.Config, eng driver, logger *slog.Logger) *containers {
	idle := cfg.SessionIdle
	if idle == 0 {
		idle = -1 // the setting's 0 means never
	}
	warm, spare := cfg.Warm()
	m := sandbox.New(eng, sandbox.Options{
		Warm:        warm,
		Spare:       spare,
		Sessions:    cfg.Sessions,
		MaxSessions: cfg.MaxSessions,
		MaxRuns:     cfg.MaxRuns,
		IdleTimeout: idle,
		// Also in the environment; a pod claimed from a warm pool has none.
		WaitLimit: waitLimit(cfg),
		Memory:    cmp.Or(cfg.Memory, confine.DefaultMemory),
		Prelude:   host.SavedHelpers(memory.New(cfg.StateDir), logger),
		Preload:   preload(cfg, logger),
		// A request carries a tool call's arguments, or an image or file in
		// base64, plus a small envelope.
		Limits: python.Limits{
			MaxRequest:    max(cfg.MaxArgSize, base64.StdEncoding.EncodedLen(cfg.MaxAttachment)) + 64<<10,
			MaxAttachment: cfg.MaxAttachment,
		},
		Logger: logger.With("component", "sandbox"),
	})
	return &containers{Manager: m, engine: eng, logger: logger, trim: newIdleTrim(idleTrimAfter, nil)}
}

// Warm connects to the engine and starts the warm containers.
func (c *containers) Warm(ctx context.Context) error {
	if err := c.engine.Ready(ctx, sandbox.Wait{}); err != nil {
		c.logger.Warn("sandbox not ready; run_python will explain and try again", "err", settings.Explain(err))
		return err
	}
	c.Manager.Warm(ctx)
	return nil
}

// Run runs req.Program in the sandbox; when the sandbox could not run it,
// the result's message names the setting that would help.
func (c *containers) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	c.trim.begin()
	defer c.trim.end()
	res, err := c.Manager.Run(ctx, req)
	if res != nil && res.Cause != nil && res.Error != nil {
		res.Error.Message = settings.Explain(res.Cause)
	}
	return res, err
}

// Ready reports whether the engine answers and the image is there,
// connecting first if needed.
func (c *containers) Ready(ctx context.Context) error {
	return c.engine.Ready(ctx, sandbox.Wait{})
}

// Close ends every container, which the engine then removes, and closes the
// engine's connection (and a service codebridge started); then it ends every
// session. The engine goes first: closing a container's stream ends it at
// once, runs in progress end with it, and the manager then waits for nothing
// the engine must do, which takes seconds when many codebridge processes stop
// together.
func (c *containers) Close(ctx context.Context) error {
	c.trim.close()
	return errors.Join(c.engine.Close(ctx), c.Manager.Close(ctx))
}

// preload is what a session's interpreter imports ahead of its first run.
func preload(cfg settings.Config, logger *slog.Logger) []string {
	if !cfg.Preloads() && len(cfg.Preload) > 0 {
		logger.Info("not preloading modules: the container memory limit is under 384m", "memory", cfg.Memory, "preload", cfg.Preload)
		return nil
	}
	return cfg.Preload
}
