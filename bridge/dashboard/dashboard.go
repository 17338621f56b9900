// Package dashboard is codebridge's local web dashboard: server-rendered
// pages (html/template, embedded, no JavaScript) of the servers and their
// sign-ins, the quarantined tools with their diffs, recent runs and their
// calls, the audit log, the settings with their origins, and a chart of
// each server's calls over the last hour. `codebridge ui` serves it on
// loopback, `serve --http` at /ui.
//
// A browser signs in once, at /ui/login, with a token: the one-time code
// `codebridge ui` prints in its URL, or the bearer token of `serve
// --http`. That sets an HttpOnly, SameSite=Strict cookie holding a value
// derived from a key of the process, never the token. Every action is a
// POST that must come from the dashboard's own pages: its Origin (when
// sent) must be the dashboard's, its Sec-Fetch-Site (when sent)
// same-origin, and its form must carry the CSRF token the page was
// rendered with; any other is refused with 403.
package dashboard

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/review"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui"

// CookieName is the dashboard's session cookie.
const CookieName = "codebridge_ui"

// Server is one configured server as the servers page shows it.
type Server struct {
	Name      string
	Transport string
	State     string // configured, starting, running, failed, disabled
	Tools     int    // once listed
	SignIn    string // what is known of its sign-in; "" when it signs in to nothing
	CanSignIn bool   // codebridge can sign in to it (OAuth)
	Err       string // its last failure
}

// Source is what the dashboard shows and acts on: the App of `serve
// --http`, or the listing of `codebridge ui`.
type Source interface {
	// Servers are the configured servers, by name.
	Servers(ctx context.Context) []Server
	// Held are the quarantined tools by server name.
	Held(ctx context.Context) (map[string][]review.Held, error)
	// Approve pins the current definition of server's quarantined tool;
	// Deny records that a person refused it, and it stays quarantined.
	Approve(ctx context.Context, server, tool string) error
	Deny(ctx context.Context, server, tool string) error
}

// Options configure [New].
type Options struct {
	Source Source
	// SignIn starts the sign-in to server, as `codebridge login` does, and
	// returns the address of its sign-in page once known; the sign-in
	// completes in the background. Nil: no sign-in button.
	SignIn func(ctx context.Context, server string) (string, error)
	// Recent are the recent runs and the last hour's calls; nil reads them
	// from the audit log in AuditDir on each page.
	Recent *Recent
	// AuditDir is the audit log's folder (audit.Dir); "" when the audit is
	// off.
	AuditDir string
	// Settings are the settings with their origins, and SettingsFile the
	// settings file's path.
	Settings     []settings.Value
	SettingsFile string
	// Sessions, if set, counts the live sandbox sessions.
	Sessions func() int
	// Login checks a token a browser presents at /ui/login; nil refuses
	// every one.
	Login func(token string) bool
	// Logger receives the actions taken; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the templates, each the layout with one page.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"servers", "tools", "runs", "audit", "settings", "chart", "login", "signin", "done"} {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}()

var funcs = template.FuncMap{
	"ms":   func(ms float64) string { return fmt.Sprintf("%.1f ms", ms) },
	"when": func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"diffClass": func(line string) string {
		switch {
		case strings.HasPrefix(line, "+"):
			return "add"
		case strings.HasPrefix(line, "-"):
			return "del"
		}
		return ""
	},
}

// Dashboard is the dashboard's [http.Handler], for the paths under [Prefix].
type Dashboard struct {
	opts    Options
	logger  *slog.Logger
	now     func() time.Time
	session string // the cookie's value
	csrf    string // every form's token
	mux     *http.ServeMux
}

// New returns the dashboard of opts.
func New(opts Options) *Dashboard {
	key := make([]byte, 32)
	rand.Read(key)
	d := &Dashboard{opts: opts, logger: cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)), now: opts.Now,
		session: derive(key, "session"), csrf: derive(key, "csrf")}
	if d.now == nil {
		d.now = time.Now
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"/login", d.loginPage)
	mux.HandleFunc("POST "+Prefix+"/login", d.login)
	mux.HandleFunc("GET "+Prefix+"/{$}", d.authed(d.serversPage))
	mux.HandleFunc("GET "+Prefix+"/tools", d.authed(d.toolsPage))
	mux.HandleFunc("GET "+Prefix+"/runs", d.authed(d.runsPage))
	mux.HandleFunc("GET "+Prefix+"/audit", d.authed(d.auditPage))
	mux.HandleFunc("GET "+Prefix+"/settings", d.authed(d.settingsPage))
	mux.HandleFunc("GET "+Prefix+"/chart", d.authed(d.chartPage))
	mux.HandleFunc("POST "+Prefix+"/tools/approve", d.authed(d.action(d.decide("approved", Source.Approve))))
	mux.HandleFunc("POST "+Prefix+"/tools/deny", d.authed(d.action(d.decide("denied", Source.Deny))))
	mux.HandleFunc("POST "+Prefix+"/servers/signin", d.authed(d.action(d.signIn)))
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	d.mux = mux
	return d
}

// derive is a value of key for one purpose, in hex.
func derive(key []byte, purpose string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("codebridge dashboard " + purpose))
	return hex.EncodeToString(mac.Sum(nil))
}

// OneTime is a [Options.Login] that accepts code once.
func OneTime(code string) func(string) bool {
	var mu sync.Mutex
	used := false
	return func(token string) bool {
		mu.Lock()
		defer mu.Unlock()
		if used || subtle.ConstantTimeCompare([]byte(token), []byte(code)) != 1 {
			return false
		}
		used = true
		return true
	}
}

// ServeHTTP implements [http.Handler].
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No page of it may be framed, sniffed or run a script, and none is
	// cached: they show what is live.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: with it, a form sends Origin: null
	h.Set("Cache-Control", "no-store")
	d.mux.ServeHTTP(w, r)
}

// signedIn reports whether r carries the session cookie.
func (d *Dashboard) signedIn(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(d.session)) == 1
}

// authed sends a browser without the session cookie to the login page.
func (d *Dashboard) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.signedIn(r) {
			if r.Method != http.MethodGet {
				http.Error(w, "not signed in to the dashboard: open "+Prefix+"/login first", http.StatusForbidden)
				return
			}
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		next(w, r)
	}
}

// sameOrigin reports why r is not a request from the dashboard's own
// pages, or "" when it is: its Origin, when sent, is the dashboard's own,
// and its Sec-Fetch-Site, when sent, same-origin. A page on another port of
// the same host is same-site but not same-origin, and refused.
func sameOrigin(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "Sec-Fetch-Site is " + site
	}
	if o := r.Header.Get("Origin"); o != "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, scheme+"://"+r.Host) {
			return "Origin " + o + " is not the dashboard's"
		}
	}
	return ""
}

// action checks that a POST comes from the dashboard's own form (see
// [sameOrigin]) with its CSRF token, then runs do.
func (d *Dashboard) action(do http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if why := sameOrigin(r); why != "" {
			d.logger.Warn("dashboard: refused a cross-site request", "path", r.URL.Path, "why", why)
			http.Error(w, "refused: "+why+"; actions are taken from the dashboard's own pages only", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(d.csrf)) != 1 {
			d.logger.Warn("dashboard: refused a request without its CSRF token", "path", r.URL.Path)
			http.Error(w, "refused: the form's CSRF token is missing or wrong; reload the page and try again", http.StatusForbidden)
			return
		}
		do(w, r)
	}
}

// page is what every page's layout shows.
type page struct {
	Title string
	Nav   string
	CSRF  string
	Err   string
	Data  any
}

// render writes the page name with data.
func (d *Dashboard) render(w http.ResponseWriter, name, title string, data any, err error) {
	p := page{Title: title, Nav: name, CSRF: d.csrf, Data: data}
	if err != nil {
		p.Err = err.Error()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages[name].Execute(w, p); err != nil {
		d.logger.Warn("dashboard: rendering a page", "page", name, "err", err)
	}
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		d.admit(w, r, tok)
		return
	}
	d.render(w, "login", "Sign in", nil, nil)
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if why := sameOrigin(r); why != "" {
		http.Error(w, "refused: "+why, http.StatusForbidden)
		return
	}
	d.admit(w, r, r.PostFormValue("token"))
}

// admit sets the session cookie when tok is accepted, and goes to the
// servers page.
func (d *Dashboard) admit(w http.ResponseWriter, r *http.Request, tok string) {
	if d.opts.Login == nil || !d.opts.Login(tok) {
		w.WriteHeader(http.StatusUnauthorized)
		d.render(w, "login", "Sign in", nil, errors.New("that token is not accepted (a one-time link works once: run codebridge ui again for a new one)"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: d.session, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}
