package bridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// ListTimeout is how long a command that lists servers' tools (servers
// --tools, doctor, tools review and approve) waits for them: a limit on
// what the person asked for, not a shutdown budget.
const ListTimeout = 60 * time.Second

// Listing is what a command works on that starts the configured servers to
// list their tools, without a sandbox (servers --tools, tools review and
// approve, doctor): the configuration as loaded, the state folder's
// stores, and a pool of the servers. Every list a server gives is saved as
// its manifest, for the next codebridge to answer docs and search from,
// and checked against its pins (host.CheckPins). Stop it with
// [Listing.Close].
type Listing struct {
	cfg    settings.Config
	logger *slog.Logger
	conf   *discovery.Config
	state  *state
	pool   *pool.Pool

	mu    sync.Mutex                        // protects following
	stops []func(ctx context.Context) error // what Doctor started, stopped first
}

// NewListing loads the configuration of cfg and builds the pool of its
// servers, none of which starts until asked for its tools.
func NewListing(cfg settings.Config, logger *slog.Logger) *Listing {
	logger = orDiscard(logger)
	st := newState(cfg, logger)
	conf := discovery.Load(cfg.ConfigDir, nil, discovery.Options{AllowSelf: cfg.AllowSelf})
	p := pool.New(pool.Options{Logger: logger, OnTools: func(def *discovery.Server, tools []*mcp.Tool, instructions string) {
		if err := st.manifests.Save(def, tools); err != nil {
			logger.Warn("saving a server's tool list", "server", def.Name, "err", err)
		}
		host.CheckPins(st.manifests, st.audit, host.PinCheck{QuarantineNew: cfg.QuarantineNew, Setting: settingName, Servers: conf.Servers},
			def, tools, instructions, logger)
	}, OAuth: st.oauthHandlers(logger)})
	return &Listing{cfg: cfg, logger: logger, conf: conf, state: st, pool: p}
}

// Config is the configuration loaded: the servers and the problems found.
func (l *Listing) Config() *discovery.Config { return l.conf }

// Pool is the pool of servers; [pool.Pool.Update] gives it those to start.
func (l *Listing) Pool() *pool.Pool { return l.pool }

// Manifests holds each server's saved tool list and its pins.
func (l *Listing) Manifests() *manifest.Store { return l.state.manifests }

// Audit is the audit log; nil when the audit is off.
func (l *Listing) Audit() *audit.Log { return l.state.audit }

// SignIns is what is known of the sign-in of each server codebridge may
// sign in to, by name.
func (l *Listing) SignIns() map[string]string { return signInStates(l.state, l.conf.Servers) }

// stopFirst has Close stop what stop stops before the servers.
func (l *Listing) stopFirst(stop func(ctx context.Context) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stops = append(l.stops, stop)
}

// Close stops what [Listing.Doctor] started (its sandbox container and the
// engine's connection), then the servers started, and then closes the
// audit log; ctx is the budget.
func (l *Listing) Close(ctx context.Context) error {
	l.mu.Lock()
	stops := l.stops
	l.mu.Unlock()
	var errs []error
	for _, stop := range stops {
		errs = append(errs, stop(ctx))
	}
	return errors.Join(append(errs, l.pool.Close(ctx), l.state.audit.Close(ctx))...)
}

// Check answers, for each of refs, whether a run's code could call it now,
// by the rules a call meets: the configuration, the policy, the pins, the
// server's list (each named server is started, within
// [host.CheckStartWait]); no tool is called. A ref with no Tool checks
// its server. It is `codebridge check`.
func (l *Listing) Check(ctx context.Context, refs []protocol.ToolRef) protocol.ToolChecks {
	l.pool.Update(l.conf.Servers) // none starts until the check asks for its tools
	d := host.New(l.pool, host.Options{Tools: l.cfg.Tools, Manifests: l.state.manifests, Logger: l.logger,
		QuarantineNew: l.cfg.QuarantineNew, Setting: settingName})
	d.Update(l.conf)
	return d.Check(ctx, refs)
}
