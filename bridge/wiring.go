package bridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
)

// sandbox is what parts needs from the container runtime: runs, a warm-up at
// start and a shutdown. *podman.Sandbox is the real one.
type sandbox interface {
	Runner
	// Warm prepares containers ahead of time; it returns when done or when ctx ends.
	Warm(ctx context.Context) error
	// Close removes every container and waits for background work.
	Close(ctx context.Context) error
}

// parts is what a running codebridge is made of: the sandbox, the pool of
// downstream servers, and the watcher that keeps the pool's configuration current.
type parts struct {
	sandbox sandbox
	pool    *pool.Pool
	dir     *directory
	logger  *slog.Logger

	stopWatch context.CancelFunc
	watchDone chan struct{}
	stopWarm  context.CancelFunc // ends the sandbox's warm-up; nil if none was started
	warmDone  chan struct{}      // closed when the warm-up has returned
	closeOnce sync.Once
}

// start builds the parts. Nothing slow happens here: the config folder is read
// and watched, Podman is contacted in the background, and no downstream server
// starts until a run needs it.
func start(ctx context.Context, cfg Config, logger *slog.Logger) (*parts, error) {
	return startWith(ctx, cfg, podman.NewSandbox(podman.SandboxOptions{
		Image:          cfg.Image,
		Memory:         cfg.Memory,
		CPUs:           cfg.CPUs,
		Pids:           cfg.Pids,
		User:           cfg.ContainerUser,
		StateDir:       cfg.StateDir,
		WarmContainers: warmContainers(cfg.WarmSandboxes),
		Logger:         logger.With("component", "sandbox"),
	}), logger)
}

// startWith is start with the sandbox given.
func startWith(ctx context.Context, cfg Config, sb sandbox, logger *slog.Logger) (*parts, error) {
	p := &parts{sandbox: sb, logger: logger}
	p.pool = pool.New(pool.Options{Logger: logger.With("component", "pool"), IdleTimeout: cfg.ServerIdle})
	p.dir = newDirectory(p.pool, cfg.MaxArgSize, logger)

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

	if cfg.WarmSandboxes > 0 {
		warmCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p.stopWarm, p.warmDone = cancel, make(chan struct{})
		go func() {
			defer close(p.warmDone)
			_ = p.sandbox.Warm(warmCtx) // it logs its own failure; runs try again
		}()
	}
	return p, nil
}

// apply publishes a configuration: the pool starts what is new and stops what
// is gone, then runs see the new snapshot.
func (p *parts) apply(cfg *discovery.Config) {
	for _, prob := range cfg.Problems {
		p.logger.Warn("config problem", "problem", prob.String())
	}
	p.pool.Update(cfg.Servers)
	p.dir.update(cfg)
	p.logger.Info("servers configured", "dir", cfg.Dir, "count", len(cfg.Servers))
}

// close stops everything start began and waits for it: the watcher, the
// sandbox's warm-up, every downstream server, every container, and a Podman
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
	})
}

// warmContainers maps the setting (0 = none) to the sandbox's option
// (0 = default, negative = none).
func warmContainers(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
