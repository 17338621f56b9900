package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/dashboard"
	"github.com/codebridge-mcp/codebridge/bridge/front"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/bridge/review"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// DashboardOptions configure the dashboard of an App or a Listing.
type DashboardOptions struct {
	// Login checks the token a browser signs in with (see
	// [dashboard.Options.Login]).
	Login func(token string) bool
	// Settings are the settings with their origins, for its settings page.
	Settings *settings.Resolved
}

// uiSource is what the dashboard shows of codebridge's servers, from the
// pool and the state folder: the App's, or a Listing's.
type uiSource struct {
	cfg     settings.Config
	state   *state
	pool    *pool.Pool
	servers func() []*discovery.Server // the configured servers now
	logger  *slog.Logger

	// Sign-ins started from the dashboard run in the background; close
	// ends them and waits.
	signIns sync.WaitGroup

	mu      sync.Mutex                  // protects following
	ends    map[*int]context.CancelFunc // of each sign-in in progress
	closing bool                        // close was called: no new sign-in starts
}

func newUISource(cfg settings.Config, st *state, p *pool.Pool, servers func() []*discovery.Server, logger *slog.Logger) *uiSource {
	return &uiSource{cfg: cfg, state: st, pool: p, servers: servers, logger: logger, ends: map[*int]context.CancelFunc{}}
}

// Servers implements [dashboard.Source].
func (s *uiSource) Servers(context.Context) []dashboard.Server {
	defs := map[string]*discovery.Server{}
	for _, d := range s.servers() {
		defs[d.Name] = d
	}
	signIns := signInStates(s.state, s.servers())
	var out []dashboard.Server
	for _, st := range s.pool.Status() {
		srv := dashboard.Server{Name: st.Name, Transport: string(st.Transport), State: string(st.State), Tools: st.Tools,
			SignIn: signIns[st.Name], Err: st.Err}
		if def := defs[st.Name]; def != nil {
			srv.CanSignIn = oauth.Signs(def)
			if srv.Tools == 0 {
				if m, ok := s.state.manifests.Load(def); ok {
					srv.Tools = len(m.Tools) // as last listed
				}
			}
		}
		out = append(out, srv)
	}
	return out
}

// Tools lists a server's tools for the review: a running server's, else
// those it last listed (its saved manifest), so that a page starts
// nothing.
func (s *uiSource) Tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	if s.pool.Running(name) {
		return s.pool.Tools(ctx, name)
	}
	for _, def := range s.servers() {
		if def.Name == name {
			if m, ok := s.state.manifests.Load(def); ok {
				return m.Tools, nil
			}
		}
	}
	return nil, nil
}

// enabled are the names of the enabled servers.
func (s *uiSource) enabled() []string {
	var names []string
	for _, def := range s.servers() {
		if !def.Disabled {
			names = append(names, def.Name)
		}
	}
	return names
}

// Held implements [dashboard.Source].
func (s *uiSource) Held(ctx context.Context) (map[string][]review.Held, error) {
	return review.Quarantined(ctx, s, s.state.manifests, s.enabled(), s.cfg.QuarantineNew)
}

// Approve implements [dashboard.Source].
func (s *uiSource) Approve(ctx context.Context, server, tool string) error {
	return s.decide(ctx, review.Approve, server, tool)
}

// Deny implements [dashboard.Source].
func (s *uiSource) Deny(ctx context.Context, server, tool string) error {
	return s.decide(ctx, review.Deny, server, tool)
}

// decide applies a person's decision (review.Approve or review.Deny) to
// server's held tool.
func (s *uiSource) decide(ctx context.Context, decide func(*manifest.Store, *audit.Log, string, []review.Held, []string) ([]*mcp.Tool, error), server, tool string) error {
	held, err := review.Quarantined(ctx, s, s.state.manifests, []string{server}, s.cfg.QuarantineNew)
	if err != nil {
		return err
	}
	_, err = decide(s.state.manifests, s.state.audit, server, held[server], []string{tool})
	return err
}

// signIn starts the sign-in to server as codebridge login does, and
// returns the address of its sign-in page once the authorization server
// is found; the sign-in then waits in the background for the browser to
// come back, for up to oauth.DefaultLoginTimeout.
func (s *uiSource) signIn(ctx context.Context, server string) (string, error) {
	def, err := signInServer(s.cfg, server)
	if err != nil {
		return "", err
	}
	// The sign-in outlives the request that started it, until it ends or
	// close ends it.
	lctx, end := context.WithCancel(context.WithoutCancel(ctx))
	id := new(int)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		end()
		return "", errors.New("codebridge is stopping: sign in after it restarts")
	}
	s.ends[id] = end
	s.signIns.Add(1)
	s.mu.Unlock()
	addr := make(chan string, 1)
	failed := make(chan error, 1)
	go func() {
		defer s.signIns.Done()
		defer func() {
			s.mu.Lock()
			delete(s.ends, id)
			s.mu.Unlock()
			end()
		}()
		_, err := oauth.Login(lctx, def, oauth.LoginOptions{Store: s.state.oauth, ClientMetadataURL: s.cfg.OAuthClientMetadataURL,
			Client: &mcp.Implementation{Name: "codebridge", Version: "dashboard"},
			Ask: func(_ context.Context, u string) error {
				addr <- u
				return nil
			}})
		if err != nil {
			s.logger.Warn("dashboard: signing in failed", "server", server, "err", err)
			failed <- err
			return
		}
		s.logger.Info("dashboard: signed in", "server", server)
	}()
	select {
	case u := <-addr:
		return u, nil
	case err := <-failed:
		if errors.Is(err, oauth.ErrNoSignInNeeded) {
			return "", err
		}
		return "", fmt.Errorf("signing in to %s: %w", server, err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// close ends the sign-ins in progress and waits for them.
func (s *uiSource) close() {
	s.mu.Lock()
	s.closing = true
	for _, end := range s.ends {
		end()
	}
	s.mu.Unlock()
	s.signIns.Wait()
}

// handler is the dashboard over s.
func (s *uiSource) handler(opts DashboardOptions, recent *dashboard.Recent, sessions func() int) http.Handler {
	o := dashboard.Options{Source: s, SignIn: s.signIn, Recent: recent, Sessions: sessions, Login: opts.Login,
		Logger: s.logger.With("component", "dashboard")}
	if s.state.audit != nil {
		o.AuditDir = audit.Dir(s.cfg.StateDir)
	}
	if opts.Settings != nil {
		o.Settings, o.SettingsFile = opts.Settings.Values, opts.Settings.File
	}
	return dashboard.New(o)
}

// Dashboard is the dashboard of a `codebridge ui` process: the servers as
// configured (none started by a page), the recent runs and the last hour
// from the audit log. Close the Listing after serving it: that also ends
// the sign-ins it started.
func (l *Listing) Dashboard(opts DashboardOptions) http.Handler {
	s := newUISource(l.cfg, l.state, l.pool, func() []*discovery.Server { return l.conf.Servers }, l.logger)
	l.pool.Update(l.conf.Servers)
	l.stopFirst(func(context.Context) error { s.close(); return nil })
	return s.handler(opts, nil, nil)
}

// dashboardRoutes are the front's routes of the dashboard at /ui: public
// to the bearer check, since a browser cannot send the token; the
// dashboard signs a browser in with it instead (see package dashboard).
func (a *App) dashboardRoutes(f *front.Front) []front.Route {
	h := a.ui.handler(DashboardOptions{Login: f.Authorizes, Settings: a.layers}, a.recent, a.sandbox.Sessions)
	return []front.Route{{Pattern: dashboard.Prefix, Handler: h, Public: true}, {Pattern: dashboard.Prefix + "/", Handler: h, Public: true}}
}

// configured are the servers as last applied.
func (a *App) configured() []*discovery.Server {
	if c := a.conf.Load(); c != nil {
		return c.Servers
	}
	return nil
}
