package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/dashboard"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
)

const uiHelp = `Usage: codebridge ui [--addr HOST:PORT] [--no-browser]

Opens the dashboard in your browser: the configured servers, their state and
sign-ins (with a button that starts a sign-in), the quarantined tools with
what changed and a button to approve each, recent sessions and runs with
their tool calls and timings, the audit log with filters, the settings with
where each came from, and a chart of each server's calls and latency over
the last hour. Here it reads them from the state directory and the config
folder (runs and calls from the audit log) and starts no server; serve
--http also serves it at /ui, with its live runs (docs/dashboard.md).

It listens on 127.0.0.1 and prints a one-time address that signs the
browser in; it opens it with $BROWSER or the platform's opener when there is
one. Stop it with Ctrl-C.

Flags:
  --addr HOST:PORT  where to listen (default 127.0.0.1:0, a free port); a
                    host other than a loopback one is refused
  --no-browser      print the address only
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when stopped by a signal; 1 when it could not listen; 2 when
the command line is wrong.
`

// uiCommand defines ui's flags and returns its run function.
func uiCommand(fs *flag.FlagSet) runFunc {
	addr := fs.String("addr", "127.0.0.1:0", "where to listen")
	noBrowser := fs.Bool("no-browser", false, "print the address only")
	return func(ctx context.Context, c *call) int {
		host, _, err := net.SplitHostPort(*addr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			fmt.Fprintf(c.stderr, "codebridge ui: --addr %s: want a loopback HOST:PORT such as 127.0.0.1:8765; the dashboard is not served off this machine\n", *addr)
			return 2
		}
		var open func(string) error
		if !*noBrowser {
			open = oauth.Browser(os.Getenv, goruntime.GOOS)
		}
		return c.exit(c.withListing(ctx, func(l *bridge.Listing) error { return serveUI(ctx, c, l, *addr, open) }))
	}
}

// serveUI serves l's dashboard on addr until ctx ends, after printing its
// one-time sign-in address (and opening it with open, if set).
func serveUI(ctx context.Context, c *call, l *bridge.Listing, addr string, open func(string) error) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w: choose another with --addr", addr, err)
	}
	code := rand.Text()
	h := l.Dashboard(bridge.DashboardOptions{Login: dashboard.OneTime(code), Settings: c.layers})
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: loopbackOnly(port, h), ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	u := fmt.Sprintf("http://127.0.0.1:%d%s/login?token=%s", port, dashboard.Prefix, code)
	fmt.Fprintf(c.stderr, "dashboard at http://127.0.0.1:%d%s/\nopen this address once to sign the browser in (Ctrl-C stops it):\n  %s\n", port, dashboard.Prefix, u)
	if open != nil {
		if err := open(u); err != nil {
			c.logger.Debug("no browser opened", "err", err)
		}
	}
	select {
	case err := <-served:
		return fmt.Errorf("serving the dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownBudget)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopbackOnly serves h to requests whose Host is this loopback port: a
// page whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own
// name, and is refused. The root goes to the dashboard.
func loopbackOnly(port int, h http.Handler) http.Handler {
	p := fmt.Sprint(port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, hp, err := net.SplitHostPort(r.Host)
		ip := net.ParseIP(host)
		if err != nil || hp != p || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			http.Error(w, fmt.Sprintf("Host %q is not this dashboard's address: it answers only 127.0.0.1, localhost or [::1] on port %s", r.Host, p), http.StatusForbidden)
			return
		}
		if r.URL.Path == "/" {
			http.Redirect(w, r, dashboard.Prefix+"/", http.StatusSeeOther)
			return
		}
		h.ServeHTTP(w, r)
	})
}
