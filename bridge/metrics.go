package bridge

import (
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/front"
	"github.com/codebridge-mcp/codebridge/bridge/metrics"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
)

// newMetrics is the metrics of a, read from its parts when scraped (they
// are all built by then).
func newMetrics(a *App) *metrics.Metrics {
	return metrics.New(metrics.Options{Sandbox: appSandbox{a}, Runs: appRuns{a}, Servers: appServers{a}})
}

// routes are the HTTP front's routes besides MCP: /metrics, when a keeps
// metrics.
func (a *App) routes() []front.Route {
	if a.metrics == nil {
		return nil
	}
	return []front.Route{{Pattern: "GET " + MetricsPath, Handler: a.metrics.Handler()}}
}

// MetricsPath is where serve --http serves the metrics, behind its token.
const MetricsPath = "/metrics"

type appSandbox struct{ a *App }

func (s appSandbox) Sessions() int       { return s.a.sandbox.Sessions() }
func (s appSandbox) WarmContainers() int { return s.a.sandbox.WarmContainers() }

type appRuns struct{ a *App }

func (r appRuns) Runs() int { return r.a.server.Runs() }

type appServers struct{ a *App }

// States implements [metrics.Servers].
func (s appServers) States() map[string]int {
	out := map[string]int{}
	for _, st := range s.a.pool.Status() {
		out[string(st.State)]++
	}
	return out
}

// Quarantined implements [metrics.Servers].
func (s appServers) Quarantined() map[string]int { return s.a.dir.Quarantined() }

// SignIns implements [metrics.Servers].
func (s appServers) SignIns() map[string]string {
	out := map[string]string{}
	now := time.Now()
	for _, def := range s.a.dir.Servers() {
		if !oauth.Signs(def) {
			continue
		}
		rec, err := s.a.state.oauth.Load(def.Name, def.URL)
		switch {
		case err != nil:
			out[def.Name] = metrics.SignInError
		case !rec.SignedInNow():
			out[def.Name] = metrics.NotSignedIn
		case !rec.Expiry.IsZero() && !rec.Expiry.After(now) && rec.RefreshToken.Reveal() == "":
			out[def.Name] = metrics.Expired
		default:
			out[def.Name] = metrics.SignedIn
		}
	}
	return out
}
