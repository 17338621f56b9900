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
	"iter"
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
	"github.com/codebridge-mcp/codebridge/bridge/internal/inflight"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// Options configure a [Front]: the settings of its listener, its checks
// and its limits, filled in by the composition root.
type Options struct {
	Addr      string       // HOST:PORT to listen on
	Auth      bool         // require the bearer token; false is allowed on loopback only
	Token     secret.Value // the bearer token clients send; empty generates one in StateDir
	StateDir  string       // where a generated token is kept
	Origins   []string     // browser origins allowed besides loopback ones
	ConfigDir string       // the config folder, for the log

	MaxMCPSessions int           // MCP sessions open at once, at most
	SessionIdle    time.Duration // an MCP session unused this long ends; 0 never
	// Grace is how long runs in progress may finish at [Front.Shutdown],
	// within the context's budget.
	Grace time.Duration

	Logger *slog.Logger // nil discards
	Debug  bool         // log the SDK's session chatter
	// Notice receives the address, and the token and how to use it, for the
	// person starting codebridge; nil means os.Stderr.
	Notice io.Writer
	// Setting names, for messages that say which setting to change, the
	// setting of key: http, http_auth, http_token, http_allowed_origins,
	// max_mcp_sessions, state_dir. Nil names the key itself.
	Setting func(key string) string
}

// setting names the setting key as opts.Setting does.
func (opts Options) setting(key string) string {
	if opts.Setting == nil {
		return key
	}
	return opts.Setting(key)
}

// Health is what the health endpoint reports of what is behind the MCP
// server.
type Health struct {
	// Ready reports whether the sandbox answers, its error saying what to
	// do; nil leaves it out.
	Ready func(ctx context.Context) error
	// Engine names the container engine.
	Engine string
	// The sandbox's limits, as the endpoint shows them.
	MaxSessions, MaxRuns, MaxQueued int
}

// MCPPath and HealthPath are where a [Front] serves MCP and its health.
const (
	MCPPath    = "/mcp"
	HealthPath = "/healthz"
)

// tokenFile is the generated bearer token's file in the state folder.
const tokenFile = "http-token"

// minTokenLen is the shortest bearer token accepted from MCP_BRIDGE_HTTP_TOKEN.
const minTokenLen = 16

// Front is codebridge's streamable HTTP front: [Listen] binds its address,
// [Front.Serve] serves an MCP server on it, and [Front.Shutdown] stops it,
// as net/http's Server does.
type Front struct {
	opts      Options
	logger    *slog.Logger
	ln        net.Listener
	loopback  bool     // listening on a loopback address: Host is checked
	port      string   // the port listened on
	token     [32]byte // SHA-256 of the bearer token; zero when none is required
	rawToken  string   // shown in the usage notice
	tokenPath string   // the token's file; "" for the setting's
	showToken bool     // the token is shown once: when made, to a terminal

	srv    *server.Server
	health Health
	// lane picks the go-sdk server of a request that starts an MCP session
	// (or of a sessionless one): nil, or a nil answer, is srv's, the code
	// lane; laneServers are the others, whose sessions Shutdown closes.
	lane        func(*http.Request) *mcp.Server
	laneServers []*mcp.Server

	creating sync.Mutex       // held while a request may create a session
	stopping atomic.Bool      // shutting down: no new sessions
	posts    inflight.Counter // POST requests to /mcp in progress: their answers are on the way

	engine engineCache // the container engine's last answer, for the health endpoint

	mu      sync.Mutex          // protects following
	tracked map[string]*tracked // MCP sessions seen, by id: when used, requests in progress
	hs      *http.Server        // serving; nil before Serve
	stopped bool                // Shutdown was called: Serve serves nothing
}

// Listen checks opts and binds opts.Addr, before anything behind the MCP
// server is started, so that a port in use is reported at once.
func Listen(opts Options) (*Front, error) {
	logger := cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	notice := opts.Notice
	if notice == nil {
		notice = os.Stderr
	}
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT such as 127.0.0.1:8080 (or :8080 for every interface)", opts.Addr)
	}
	f := &Front{opts: opts, logger: logger, loopback: isLoopbackAddr(opts.Addr), tracked: map[string]*tracked{}}
	f.opts.Notice = notice
	if !opts.Auth && !f.loopback {
		return nil, fmt.Errorf("%s=none is allowed only on a loopback address such as 127.0.0.1:8080, and %s is not one: anyone who reaches it could run code; remove %[1]s to require a token, or listen on 127.0.0.1",
			opts.setting("http_auth"), opts.Addr)
	}
	if opts.Auth {
		_, statErr := os.Stat(filepath.Join(opts.StateDir, tokenFile))
		var err error
		if f.rawToken, f.tokenPath, err = bearerToken(opts); err != nil {
			return nil, err
		}
		nf, isFile := notice.(*os.File)
		f.showToken = f.tokenPath != "" && errors.Is(statErr, fs.ErrNotExist) && isFile && term.IsTerminal(int(nf.Fd()))
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w: choose another address with --http or %s", opts.Addr, err, opts.setting("http"))
	}
	f.ln, f.port, f.token = ln, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), tokenDigest(f.rawToken)
	return f, nil
}

// Close closes the listener of a front that is not serving.
func (f *Front) Close() error { return f.ln.Close() }

// Route is a handler the front serves besides MCP and the health endpoint
// (metrics, the dashboard), behind the same Host check and, unless
// Public, the same bearer token.
type Route struct {
	Pattern string // a [http.ServeMux] pattern, e.g. "GET /metrics"
	Handler http.Handler
	Public  bool // served without the bearer token (the handler checks what it needs)
}

// Serve serves srv over streamable HTTP on the address [Listen] bound, every
// MCP session with its own sandbox session, and routes, until
// [Front.Shutdown]; then it returns http.ErrServerClosed, else the error
// that stopped it.
func (f *Front) Serve(srv *server.Server, health Health, routes ...Route) error {
	f.srv, f.health = srv, health
	mux := http.NewServeMux()
	mux.Handle(MCPPath, f.checkOrigin(f.authenticate(f.mcpHandler())))
	mux.HandleFunc("GET "+HealthPath, f.healthz)
	for _, r := range routes {
		h := r.Handler
		if !r.Public {
			h = f.authenticate(h)
		}
		mux.Handle(r.Pattern, h)
	}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return http.ErrServerClosed
	}
	f.hs = &http.Server{
		Handler:           f.logRequests(f.checkHost(mux)),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(f.logger.With("component", "http").Handler(), slog.LevelDebug),
	}
	hs := f.hs
	f.mu.Unlock()
	endpoint := "http://" + displayAddr(f.ln.Addr().(*net.TCPAddr)) + MCPPath
	f.logger.Info("serving MCP over HTTP", "url", endpoint, "auth", f.opts.Auth, "config_dir", f.opts.ConfigDir)
	printUsage(f.opts.Notice, endpoint, f.opts.Auth, f.rawToken, f.tokenPath, f.showToken, f.opts.setting)
	if err := hs.Serve(f.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP on %s: %w", f.opts.Addr, err)
	}
	return http.ErrServerClosed
}

// SetLanes makes pick choose the MCP server of each new MCP session (and of
// each sessionless request) from servers, the lanes besides the code lane
// (bridge/lane); a nil answer is the code lane's. Call it before Serve.
func (f *Front) SetLanes(pick func(*http.Request) *mcp.Server, servers ...*mcp.Server) {
	f.lane, f.laneServers = pick, servers
}

// mcpSessions are the open MCP sessions of every lane.
func (f *Front) mcpSessions() iter.Seq[*mcp.ServerSession] {
	return func(yield func(*mcp.ServerSession) bool) {
		for _, s := range append([]*mcp.Server{f.srv.MCP()}, f.laneServers...) {
			for ss := range s.Sessions() {
				if !yield(ss) {
					return
				}
			}
		}
	}
}

// Shutdown stops the front: it stops accepting at once, lets runs finish
// for up to the grace period, cancels the rest, closes every MCP session
// (which ends their sandbox sessions), and then closes the connections
// left. ctx is the budget of all of it: when it ends, what is left is cut
// off.
func (f *Front) Shutdown(ctx context.Context) error {
	f.mu.Lock()
	hs := f.hs
	f.stopped = true
	f.mu.Unlock()
	if hs == nil {
		return f.ln.Close()
	}
	f.stopping.Store(true)
	f.logger.Info("stopping: no new connections; waiting for runs in progress", "runs", f.srv.Runs(), "grace", f.opts.Grace)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		hs.Shutdown(ctx) // closes the listener at once, then waits for requests in progress
	}()
	grace, cancel := context.WithTimeout(ctx, f.opts.Grace)
	f.srv.Drain(grace)
	cancel()
	// A finished run's answer is still being written to its POST: let
	// those end before the sessions close under them.
	f.posts.Wait(ctx)
	for ss := range f.mcpSessions() {
		ss.Close()
	}
	err := f.srv.Close(ctx)
	select {
	case <-closed:
	case <-ctx.Done():
		f.logger.Warn("closing HTTP connections still open")
	}
	hs.Close()
	<-closed
	return err
}

// checkHost refuses a request whose Host is not this server's loopback
// address when it listens on loopback: a page on another site whose name
// was rebound to 127.0.0.1 (DNS rebinding) sends its own name.
func (f *Front) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.loopback && !f.localHost(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not this server's address: codebridge listens on loopback and answers only requests for localhost, 127.0.0.1 or [::1] on port %s", r.Host, f.port), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *Front) localHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: only right for port 80
		host, port = hostport, "80"
	}
	return port == f.port && isLoopbackHost(host)
}

// checkOrigin refuses a browser request from a page that is neither on a
// loopback address nor in MCP_BRIDGE_HTTP_ALLOWED_ORIGINS.
func (f *Front) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !f.allowedOrigin(o) {
			http.Error(w, fmt.Sprintf("Origin %q is not allowed: only pages on localhost, or origins listed in %s, may call codebridge", o, f.opts.setting("http_allowed_origins")), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *Front) allowedOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if isLoopbackHost(u.Hostname()) {
		return true
	}
	o := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, a := range f.opts.Origins {
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
func (f *Front) authenticate(next http.Handler) http.Handler {
	if f.token == ([32]byte{}) {
		return next
	}
	identified := auth.RequireBearerToken(f.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := f.verify(r.Context(), strings.TrimSpace(got), r); !ok || err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codebridge"`)
			http.Error(w, "missing or wrong bearer token: send the header 'Authorization: Bearer TOKEN' with the token codebridge printed when it started (or "+f.opts.setting("http_token")+")", http.StatusUnauthorized)
			return
		}
		identified.ServeHTTP(w, r)
	})
}

// verify checks token in constant time and names its holder: a hash of
// the token's own hash, so neither appears anywhere.
func (f *Front) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
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
// has nothing in progress ([Front.evictIdlest]). MCP sessions are capped
// only as a safety bound: they cost little, and live sandboxes are bounded
// (and the idlest ended) by the sandbox itself. Such requests go one at a
// time, so the count cannot be passed.
func (f *Front) limitSessions(next http.Handler) http.Handler {
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
		} else if n := f.sessions(); n >= f.opts.MaxMCPSessions && !f.evictIdlest() {
			msg = fmt.Sprintf("codebridge has %d MCP sessions open, the most it allows (%s), and every one has a request in progress: try again when one finishes, or raise %[2]s", n, f.opts.setting("max_mcp_sessions"))
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
func (f *Front) countPosts(next http.Handler) http.Handler {
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
func (f *Front) sessions() int {
	n := 0
	for ss := range f.mcpSessions() {
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

// engineProbeTimeout bounds one probe of the container engine for the
// health endpoint: a supervisor's request is answered "unreachable" rather
// than left waiting.
const engineProbeTimeout = 5 * time.Second

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
func (f *Front) engineStatus(ctx context.Context) string {
	if f.health.Ready == nil {
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
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineProbeTimeout)
		defer cancel()
		status := "ok"
		if err := f.health.Ready(ctx); err != nil {
			status = "unreachable"
			f.logger.Warn("health: the container engine is not ready", "engine", f.health.Engine, "err", err)
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

// healthz answers supervisors: 200 while serving, 503 while stopping, with
// counts, the container engine and whether it answers. It needs no token
// and says nothing secret.
func (f *Front) healthz(w http.ResponseWriter, r *http.Request) {
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
	}{status, f.health.Engine, engine, f.sessions(), f.opts.MaxMCPSessions, f.health.MaxSessions, f.srv.Runs(), f.health.MaxRuns, f.health.MaxQueued})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// logRequests logs one line per request at info level: method, path,
// status, duration and MCP session id. Never headers: they hold the token.
func (f *Front) logRequests(next http.Handler) http.Handler {
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
func bearerToken(opts Options) (token, path string, err error) {
	if t := opts.Token.Reveal(); t != "" {
		if len(t) < minTokenLen || strings.ContainsAny(t, " \t\r\n") {
			return "", "", fmt.Errorf("%s is too weak: it must be at least %d characters without spaces; generate one with 'openssl rand -hex 32', or unset it to have codebridge generate one",
				opts.setting("http_token"), minTokenLen)
		}
		return t, "", nil
	}
	path = filepath.Join(opts.StateDir, tokenFile)
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
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating the state folder for the HTTP token: %w: set %s or %s", err, opts.setting("state_dir"), opts.setting("http_token"))
	}
	token = rand.Text() + rand.Text() // 256 bits
	// Whole or not at all: replicas starting at once on a shared state
	// folder must neither read a half-written token nor each make their own.
	created, err := atomicfile.WriteNew(path, []byte(token+"\n"), 0o600)
	if err != nil {
		return "", "", fmt.Errorf("saving the HTTP token: %w: set %s or %s", err, opts.setting("state_dir"), opts.setting("http_token"))
	}
	if !created { // another codebridge wrote it just now
		return bearerToken(opts)
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
func printUsage(w io.Writer, endpoint string, auth bool, token, tokenPath string, show bool, setting func(string) string) {
	var b strings.Builder
	defer func() { io.WriteString(w, b.String()) }()
	fmt.Fprintf(&b, "codebridge: serving MCP over streamable HTTP at %s\n", endpoint)
	switch {
	case !auth:
		fmt.Fprintf(&b, "No token is required (%s=none): any program on this machine can run code through it.\n", setting("http_auth"))
		fmt.Fprintf(&b, "Claude Code:  claude mcp add --transport http codebridge %s\n", endpoint)
		return
	case tokenPath == "":
		token = "$" + setting("http_token")
		fmt.Fprintf(&b, "Clients must send 'Authorization: Bearer TOKEN' with the token in %s.\n", setting("http_token"))
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
