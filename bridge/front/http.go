package front

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/singleflight"
	"golang.org/x/term"

	"github.com/codebridge-mcp/codebridge/bridge/atomicfile"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// HTTPOptions configure [ListenAndServe].
type HTTPOptions struct {
	Logger  *slog.Logger
	Version string
	// Notice receives the address, and the token and how to use it, for the
	// person starting codebridge; nil means os.Stderr.
	Notice io.Writer
}

// MCPPath and HealthPath are where [ListenAndServe] serves MCP and its health.
const (
	MCPPath    = "/mcp"
	HealthPath = "/healthz"
)

// tokenFile is the generated bearer token's file in the state folder.
const tokenFile = "http-token"

// minTokenLen is the shortest bearer token accepted from MCP_BRIDGE_HTTP_TOKEN.
const minTokenLen = 16

// ListenAndServe serves MCP over streamable HTTP on cfg.HTTP until ctx ends.
// Every MCP session gets its own sandbox session. When ctx ends it stops
// accepting, lets runs in progress finish for up to cfg.ShutdownGrace,
// cancels the rest, closes every session, and returns only after every
// container and downstream server it started has stopped.
func ListenAndServe(ctx context.Context, cfg settings.Config, start Starter, opts HTTPOptions) error {
	logger := cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	notice := opts.Notice
	if notice == nil {
		notice = os.Stderr
	}
	if _, _, err := net.SplitHostPort(cfg.HTTP); err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT such as 127.0.0.1:8080 (or :8080 for every interface)", cfg.HTTP)
	}
	loopback := isLoopbackAddr(cfg.HTTP)
	if !cfg.HTTPAuth && !loopback {
		return fmt.Errorf("%sHTTP_AUTH=none is allowed only on a loopback address such as 127.0.0.1:8080, and %s is not one: anyone who reaches it could run code; remove %sHTTP_AUTH to require a token, or listen on 127.0.0.1",
			settings.EnvPrefix, cfg.HTTP, settings.EnvPrefix)
	}
	var token, tokenPath string
	showToken := false // the token is shown once: when made, to a terminal
	if cfg.HTTPAuth {
		_, statErr := os.Stat(filepath.Join(cfg.StateDir, tokenFile))
		var err error
		if token, tokenPath, err = bearerToken(cfg); err != nil {
			return err
		}
		f, isFile := notice.(*os.File)
		showToken = tokenPath != "" && errors.Is(statErr, fs.ErrNotExist) && isFile && term.IsTerminal(int(f.Fd()))
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return fmt.Errorf("listening on %s: %w: choose another address with --http or %sHTTP", cfg.HTTP, err, settings.EnvPrefix)
	}
	defer ln.Close()

	rt, err := start(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	srv := server.NewServer(cfg, server.Options{Runner: rt.Runner, Logger: logger, Version: opts.Version, Servers: rt.Servers, OnClient: rt.OnClient})
	f := &front{
		srv: srv, rt: rt, cfg: cfg, logger: logger, loopback: loopback,
		port: strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), token: tokenDigest(token),
		tracked: map[string]*tracked{},
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, f.checkOrigin(f.authenticate(f.mcpHandler())))
	mux.HandleFunc("GET "+HealthPath, f.health)
	hs := &http.Server{
		Handler:           f.logRequests(f.checkHost(mux)),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.With("component", "http").Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	endpoint := "http://" + displayAddr(ln.Addr().(*net.TCPAddr)) + MCPPath
	logger.Info("serving MCP over HTTP", "url", endpoint, "auth", cfg.HTTPAuth, "config_dir", cfg.ConfigDir)
	printUsage(notice, endpoint, cfg, token, tokenPath, showToken)

	select {
	case err = <-served:
		err = fmt.Errorf("serving HTTP on %s: %w", cfg.HTTP, err)
		f.shutdown(hs)
	case <-ctx.Done():
		f.shutdown(hs)
		<-served
	}
	return err
}

// front is the HTTP side of [ListenAndServe]: checks and limits in front of
// the SDK's streamable handler, the health endpoint, and the request log.
type front struct {
	srv      *server.Server
	rt       Backend
	cfg      settings.Config
	logger   *slog.Logger
	loopback bool     // listening on a loopback address: Host is checked
	port     string   // the port listened on
	token    [32]byte // SHA-256 of the bearer token; zero when none is required

	creating sync.Mutex     // held while a request may create a session
	stopping atomic.Bool    // shutting down: no new sessions
	posts    server.Counter // POST requests to /mcp in progress: their answers are on the way

	engine engineCache // the container engine's last answer, for the health endpoint

	mu      sync.Mutex          // protects following
	tracked map[string]*tracked // MCP sessions seen, by id: when used, requests in progress
}

// shutdown stops hs: it stops accepting at once, lets runs finish up to the
// grace period, cancels the rest, closes every MCP session (which ends their
// sandbox sessions), and then closes the connections left.
func (f *front) shutdown(hs *http.Server) {
	f.stopping.Store(true)
	f.logger.Info("stopping: no new connections; waiting for runs in progress", "runs", f.srv.Runs(), "grace", f.cfg.ShutdownGrace)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.ShutdownGrace+10*time.Second)
		defer cancel()
		hs.Shutdown(ctx) // closes the listener at once, then waits for requests in progress
	}()
	grace, cancel := context.WithTimeout(context.Background(), f.cfg.ShutdownGrace)
	f.srv.Drain(grace)
	cancel()
	// A finished run's answer is still being written to its POST: let
	// those end before the sessions close under them.
	answered, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	f.posts.Wait(answered)
	cancel()
	for ss := range f.srv.MCP().Sessions() {
		ss.Close()
	}
	ended, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := f.srv.Close(ended); err != nil {
		f.logger.Warn("stopping", "err", err)
	}
	cancel()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		f.logger.Warn("closing HTTP connections still open")
	}
	hs.Close()
	<-closed
}

// checkHost refuses a request whose Host is not this server's loopback
// address when it listens on loopback: a page on another site whose name
// was rebound to 127.0.0.1 (DNS rebinding) sends its own name.
func (f *front) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.loopback && !f.localHost(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not this server's address: codebridge listens on loopback and answers only requests for localhost, 127.0.0.1 or [::1] on port %s", r.Host, f.port), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *front) localHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: only right for port 80
		host, port = hostport, "80"
	}
	return port == f.port && isLoopbackHost(host)
}

// checkOrigin refuses a browser request from a page that is neither on a
// loopback address nor in MCP_BRIDGE_HTTP_ALLOWED_ORIGINS.
func (f *front) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !f.allowedOrigin(o) {
			http.Error(w, fmt.Sprintf("Origin %q is not allowed: only pages on localhost, or origins listed in %sHTTP_ALLOWED_ORIGINS, may call codebridge", o, settings.EnvPrefix), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *front) allowedOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if isLoopbackHost(u.Hostname()) {
		return true
	}
	o := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, a := range f.cfg.HTTPOrigins {
		if o == a {
			return true
		}
	}
	return false
}

// authenticate refuses a request without the bearer token, before anything
// else looks at it. A request with it carries the token's identity (a hash,
// never the token) as go-sdk's TokenInfo.UserID: go-sdk binds each MCP
// session to it, and bridge/server binds session handles to it.
func (f *front) authenticate(next http.Handler) http.Handler {
	if f.token == ([32]byte{}) {
		return next
	}
	identified := auth.RequireBearerToken(f.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := f.verify(r.Context(), strings.TrimSpace(got), r); !ok || err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codebridge"`)
			http.Error(w, "missing or wrong bearer token: send the header 'Authorization: Bearer TOKEN' with the token codebridge printed when it started (or MCP_BRIDGE_HTTP_TOKEN)", http.StatusUnauthorized)
			return
		}
		identified.ServeHTTP(w, r)
	})
}

// verify checks token in constant time and names its holder: a hash of
// the token's own hash, so neither appears anywhere.
func (f *front) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	d := tokenDigest(token)
	if subtle.ConstantTimeCompare(d[:], f.token[:]) != 1 {
		return nil, auth.ErrInvalidToken
	}
	id := sha256.Sum256(d[:])
	return &auth.TokenInfo{UserID: hex.EncodeToString(id[:16])}, nil
}

// limitSessions refuses a request that would open an MCP session (a POST
// without a session id) while the server is stopping, and when
// MaxMCPSessions are open it first closes the one used least recently that
// has nothing in progress ([front.evictIdlest]). MCP sessions are capped
// only as a safety bound: they cost little, and live sandboxes are bounded
// (and the idlest ended) by the sandbox itself. Such requests go one at a
// time, so the count cannot be passed.
func (f *front) limitSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		f.creating.Lock()
		defer f.creating.Unlock()
		var msg string
		if f.stopping.Load() {
			msg = "codebridge is shutting down and opens no new sessions: try again when it is back"
		} else if n := f.sessions(); n >= f.cfg.MaxMCPSessions && !f.evictIdlest() {
			msg = fmt.Sprintf("codebridge has %d MCP sessions open, the most it allows (MCP_BRIDGE_MAX_MCP_SESSIONS), and every one has a request in progress: try again when one finishes, or raise MCP_BRIDGE_MAX_MCP_SESSIONS", n)
		}
		if msg != "" {
			w.Header().Set("Retry-After", "10")
			writeRPCError(w, r, http.StatusServiceUnavailable, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// countPosts counts the POST requests in progress, for shutdown.
func (f *front) countPosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			f.posts.Add(1)
			defer f.posts.Add(-1)
		}
		next.ServeHTTP(w, r)
	})
}

// sessions is the number of MCP sessions open, not counting the ones of
// sessionless requests in progress (which have no id).
func (f *front) sessions() int {
	n := 0
	for ss := range f.srv.MCP().Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// writeRPCError answers r with a JSON-RPC error carrying r's request id,
// when the body holds a single request.
func writeRPCError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes))
	// JSON-RPC ids are strings, numbers or null: any other id is answered
	// with null, as one that cannot be read.
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 || !strings.ContainsRune(`"-0123456789`, rune(req.ID[0])) {
		req.ID = json.RawMessage("null")
	}
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      req.ID,
		"error":   map[string]any{"code": -32000, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp)
}

// engineStatusTTL is how long the health endpoint reuses the container
// engine's answer: the endpoint needs no token, so requests to it must not
// each cost a round trip to the engine.
const engineStatusTTL = time.Second

// engineCache holds the container engine's last answer for the health
// endpoint; its zero value is ready to use.
type engineCache struct {
	probe singleflight.Group // one probe at a time; requests meanwhile share its answer

	mu     sync.Mutex // protects following
	status string     // "ok" or "unreachable"
	at     time.Time  // when status was found; zero before the first probe
}

// engineStatus reports whether the container engine answers, asking it at
// most once per [engineStatusTTL].
func (f *front) engineStatus(ctx context.Context) string {
	if f.rt.Ready == nil {
		return "ok"
	}
	c := &f.engine
	c.mu.Lock()
	status, at := c.status, c.at
	c.mu.Unlock()
	if !at.IsZero() && time.Since(at) < engineStatusTTL {
		return status
	}
	answer := c.probe.DoChan("", func() (any, error) {
		// The probe outlives the request that started it: others share it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		status := "ok"
		if err := f.rt.Ready(ctx); err != nil {
			status = "unreachable"
			f.logger.Warn("health: the container engine is not ready", "engine", f.rt.Engine, "err", settings.Explain(err))
		}
		c.mu.Lock()
		c.status, c.at = status, time.Now()
		c.mu.Unlock()
		return status, nil
	})
	select {
	case res := <-answer:
		return res.Val.(string)
	case <-ctx.Done():
		return "unreachable" // the client has gone; nobody reads this
	}
}

// health answers supervisors: 200 while serving, 503 while stopping, with
// counts, the container engine and whether it answers. It needs no token
// and says nothing secret.
func (f *front) health(w http.ResponseWriter, r *http.Request) {
	engine := f.engineStatus(r.Context())
	status, code := "ok", http.StatusOK
	if f.stopping.Load() {
		status, code = "stopping", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(struct {
		Status         string `json:"status"`
		Engine         string `json:"engine,omitempty"` // its name
		EngineStatus   string `json:"engine_status"`
		Sessions       int    `json:"sessions"`
		MaxMCPSessions int    `json:"max_mcp_sessions"`
		MaxSessions    int    `json:"max_sessions"` // live sandboxes
		Runs           int    `json:"runs"`
		MaxRuns        int    `json:"max_runs"`
		MaxQueued      int    `json:"max_queued"`
	}{status, f.rt.Engine, engine, f.sessions(), f.cfg.MaxMCPSessions, f.cfg.MaxSessions, f.srv.Runs(), f.cfg.MaxRuns, f.cfg.MaxQueued})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// logRequests logs one line per request at info level: method, path,
// status, duration and MCP session id. Never headers: they hold the token.
func (f *front) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" {
			session = w.Header().Get("Mcp-Session-Id")
		}
		f.logger.Info("http request", "method", r.Method, "path", r.URL.Path, "status", rec.code(),
			"duration", time.Since(start).Round(time.Microsecond), "session", session, "remote", r.RemoteAddr)
	})
}

// statusRecorder remembers the status a handler wrote. Unwrap lets the SDK
// flush event streams through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// bearerToken is the token clients must send: MCP_BRIDGE_HTTP_TOKEN, else
// the one kept in the state folder, generated on first use. path is the
// file's, "" for the setting.
func bearerToken(cfg settings.Config) (token, path string, err error) {
	if t := cfg.HTTPToken.Reveal(); t != "" {
		if len(t) < minTokenLen || strings.ContainsAny(t, " \t\r\n") {
			return "", "", fmt.Errorf("%sHTTP_TOKEN is too weak: it must be at least %d characters without spaces; generate one with 'openssl rand -hex 32', or unset it to have codebridge generate one",
				settings.EnvPrefix, minTokenLen)
		}
		return t, "", nil
	}
	path = filepath.Join(cfg.StateDir, tokenFile)
	if b, err := os.ReadFile(path); err == nil {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			return "", "", fmt.Errorf("the token file %s can be read by other users (mode %04o): run 'chmod 600 %s', or delete it to have a new token generated", path, fi.Mode().Perm(), path)
		}
		if t := strings.TrimSpace(string(b)); len(t) >= minTokenLen {
			return t, path, nil
		}
		return "", "", fmt.Errorf("the token file %s holds no usable token (at least %d characters): delete it to have a new one generated", path, minTokenLen)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("reading the HTTP token: %w", err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating the state folder for the HTTP token: %w: set %sSTATE_DIR or %sHTTP_TOKEN", err, settings.EnvPrefix, settings.EnvPrefix)
	}
	token = rand.Text() + rand.Text() // 256 bits
	// Whole or not at all: replicas starting at once on a shared state
	// folder must neither read a half-written token nor each make their own.
	created, err := atomicfile.WriteNew(path, []byte(token+"\n"), 0o600)
	if err != nil {
		return "", "", fmt.Errorf("saving the HTTP token: %w: set %sSTATE_DIR or %sHTTP_TOKEN", err, settings.EnvPrefix, settings.EnvPrefix)
	}
	if !created { // another codebridge wrote it just now
		return bearerToken(cfg)
	}
	return token, path, nil
}

func tokenDigest(token string) [32]byte {
	if token == "" {
		return [32]byte{}
	}
	return sha256.Sum256([]byte(token))
}

// printUsage tells the person who started codebridge where it listens and
// how an agent connects: the header to send, with the token itself only
// when show is set (codebridge made it just now and stderr is a terminal);
// otherwise the file that holds it, so that the token does not end up in
// journald or kubectl logs on every start.
func printUsage(w io.Writer, endpoint string, cfg settings.Config, token, tokenPath string, show bool) {
	var b strings.Builder
	defer func() { io.WriteString(w, b.String()) }()
	fmt.Fprintf(&b, "codebridge: serving MCP over streamable HTTP at %s\n", endpoint)
	switch {
	case !cfg.HTTPAuth:
		fmt.Fprintf(&b, "No token is required (%sHTTP_AUTH=none): any program on this machine can run code through it.\n", settings.EnvPrefix)
		fmt.Fprintf(&b, "Claude Code:  claude mcp add --transport http codebridge %s\n", endpoint)
		return
	case tokenPath == "":
		token = "$" + settings.EnvPrefix + "HTTP_TOKEN"
		fmt.Fprintf(&b, "Clients must send 'Authorization: Bearer TOKEN' with the token in %sHTTP_TOKEN.\n", settings.EnvPrefix)
	case !show:
		fmt.Fprintf(&b, "Clients must send 'Authorization: Bearer TOKEN' with the token kept in %s (delete that file and restart for a new one).\n", tokenPath)
		token = "$(cat " + tokenPath + ")"
	default:
		fmt.Fprintf(&b, "Clients must send 'Authorization: Bearer TOKEN'. The token, shown this once (kept in %s; delete that file and restart for a new one):\n  %s\n", tokenPath, token)
	}
	fmt.Fprintf(&b, "Claude Code:  claude mcp add --transport http codebridge %s --header \"Authorization: Bearer %s\"\n", endpoint, token)
	cfgJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"codebridge": map[string]any{
		"type": "http", "url": endpoint, "headers": map[string]string{"Authorization": "Bearer " + token},
	}}})
	fmt.Fprintf(&b, "Agent config: %s\n", cfgJSON)
}

// isLoopbackAddr reports whether HOST:PORT listens on loopback only.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopbackHost(host)
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// displayAddr is addr as a client reaches it: the machine's name when it
// listens on every interface.
func displayAddr(addr *net.TCPAddr) string {
	if addr.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, strconv.Itoa(addr.Port))
		}
	}
	return addr.String()
}
