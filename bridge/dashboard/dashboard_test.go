package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/manifest"
	"github.com/codebridge-mcp/codebridge/bridge/observe"
	"github.com/codebridge-mcp/codebridge/bridge/review"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// hostile is text from a server: a name or description that tries to run
// a script in the dashboard.
const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

// fakeSource is a [Source] with fixed servers and held tools.
type fakeSource struct {
	servers  []Server
	held     map[string][]review.Held
	approved []string
	denied   []string
}

func (f *fakeSource) Servers(context.Context) []Server { return f.servers }

func (f *fakeSource) Held(context.Context) (map[string][]review.Held, error) { return f.held, nil }

func (f *fakeSource) Approve(_ context.Context, server, tool string) error {
	return f.decide(&f.approved, server, tool)
}

func (f *fakeSource) Deny(_ context.Context, server, tool string) error {
	return f.decide(&f.denied, server, tool)
}

func (f *fakeSource) decide(to *[]string, server, tool string) error {
	for _, h := range f.held[server] {
		if h.Now.Name == tool {
			*to = append(*to, server+"."+tool)
			return nil
		}
	}
	return fmt.Errorf("%q has %w %q", server, review.ErrNotHeld, tool)
}

const token = "the-token"

// newTest is a dashboard over a fake source with hostile text everywhere,
// served by httptest, and the source.
func newTest(t *testing.T, opts Options) (*httptest.Server, *fakeSource) {
	t.Helper()
	was := &mcp.Tool{Name: "note", Description: "Adds a note."}
	now := &mcp.Tool{Name: "note", Description: "Adds a note. " + hostile}
	src := &fakeSource{
		servers: []Server{
			{Name: "notes", Transport: "stdio", State: "running", Tools: 3},
			{Name: "remote" + hostile, Transport: "streamable", State: "failed", SignIn: "not signed in", CanSignIn: true, Err: "it broke: " + hostile},
		},
		held: map[string][]review.Held{"notes": {{Server: "notes", Now: now, Pin: manifest.Pin{Tool: was, Pinned: time.Now()}, Pinned: true, State: manifest.Changed}}},
	}
	opts.Source = src
	if opts.Login == nil {
		opts.Login = func(s string) bool { return s == token }
	}
	srv := httptest.NewServer(New(opts))
	t.Cleanup(srv.Close)
	return srv, src
}

// client is a browser-like client of srv: it keeps cookies, follows no
// redirects.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar := &cookieJar{}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

// signIn signs c in to srv.
func signIn(t *testing.T, srv *httptest.Server, c *http.Client) {
	t.Helper()
	resp, err := c.Get(srv.URL + "/ui/login?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("signing in: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAuth(t *testing.T) {
	srv, _ := newTest(t, Options{})
	c := client(t)
	for _, path := range []string{"/ui/", "/ui/tools", "/ui/runs", "/ui/audit", "/ui/settings", "/ui/chart"} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("%s without the cookie: %s to %q, want the login page", path, resp.Status, resp.Header.Get("Location"))
		}
	}
	if code, body := get(t, c, srv.URL+"/ui/login?token=wrong"); code != http.StatusUnauthorized || !strings.Contains(body, "not accepted") {
		t.Errorf("a wrong token: %d\n%s", code, body)
	}
	// A forged cookie is no session.
	forged := client(t)
	forged.Jar.SetCookies(nil, []*http.Cookie{{Name: CookieName, Value: token}})
	if resp, _ := forged.Get(srv.URL + "/ui/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a cookie holding the token: %s, want the login page", resp.Status)
	}

	resp, err := c.Get(srv.URL + "/ui/login?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/ui" ||
		strings.Contains(cookies[0].Value, token) || len(cookies[0].Value) < 32 {
		t.Fatalf("the session cookie: %+v", cookies)
	}
	if code, _ := get(t, c, srv.URL+"/ui/"); code != http.StatusOK {
		t.Errorf("signed in: %d", code)
	}

	// The login form, posted from another origin: refused (login CSRF).
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ui/login", strings.NewReader("token="+token))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site login: %v %v", resp.Status, err)
	}
}

func TestOneTime(t *testing.T) {
	login := OneTime("abc")
	if login("abd") || !login("abc") || login("abc") {
		t.Error("OneTime accepts a wrong code, or the right one twice, or not once")
	}
}

// TestPagesRender: each page shows its data, and text from servers shows
// as text: no tag of it reaches the page.
func TestPagesRender(t *testing.T) {
	dir := t.TempDir()
	log := audit.New(dir, audit.Options{})
	start := time.Now().Add(-time.Minute)
	for i, outcome := range []string{"ok", "ok", "tool_error"} {
		if err := log.Write(audit.Record{Time: start.Add(time.Duration(i) * time.Second), Session: "s1", Run: 1, Server: "notes", Tool: "note" + hostile,
			DurationMS: 12.5, Outcome: outcome}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close(t.Context())
	recent := NewRecent(nil)
	recent.Call(observe.Call{Server: "notes", Tool: "note", MS: 4, Outcome: "ok", Start: time.Now()})
	recent.Run(observe.Run{Session: "live-session", Run: 3, Start: time.Now(), Duration: time.Second, Outcome: "ok",
		Calls: []observe.Call{{Server: "notes", Tool: "note" + hostile, MS: 4, Outcome: "ok"}}})
	values := []settings.Value{{Key: "timeout", Env: "MCP_BRIDGE_TIMEOUT", Text: "30s", Origin: settings.Origin{Layer: settings.LayerEnv, Name: "MCP_BRIDGE_TIMEOUT"}},
		{Key: "log_level", Env: "MCP_BRIDGE_LOG_LEVEL", Text: "info"}}

	tests := []struct {
		name, path string
		opts       Options
		want       []string
	}{
		{"servers", "/ui/", Options{}, []string{"notes", "running", ">3<", "failed", "not signed in", "it broke", "&lt;script&gt;"}},
		{"sign-in button", "/ui/", Options{SignIn: func(context.Context, string) (string, error) { return "", nil }}, []string{`action="/ui/servers/signin"`, "Sign in"}},
		{"tools", "/ui/tools", Options{}, []string{"notes.note", "changed since it was pinned", "(description)", "-   Adds a note.", `<span class="add">&#43;   Adds a note. &lt;script&gt;`, `name="csrf"`, "Approve"}},
		{"runs, live", "/ui/runs", Options{Recent: recent, Sessions: func() int { return 7 }}, []string{"live-session", ">7<", "notes.note&lt;script&gt;", "4.0 ms"}},
		{"runs from the audit", "/ui/runs", Options{AuditDir: dir}, []string{"s1", "from the audit log", "notes.note&lt;script&gt;", "12.5 ms", "tool_error"}},
		{"audit", "/ui/audit", Options{AuditDir: dir}, []string{"3 records match", "note&lt;script&gt;", "tool_error"}},
		{"audit off", "/ui/audit", Options{}, []string{"audit log is off"}},
		{"settings", "/ui/settings", Options{Settings: values, SettingsFile: "/etc/cb.toml"}, []string{"timeout", "MCP_BRIDGE_TIMEOUT", "30s", "env: MCP_BRIDGE_TIMEOUT", "default", "/etc/cb.toml"}},
		{"chart, live", "/ui/chart", Options{Recent: recent}, []string{"<svg", "<rect", "notes", "1 calls, 0 failed"}},
		{"chart from the audit", "/ui/chart", Options{AuditDir: dir}, []string{"<svg", "3 calls, 1 failed", "12.5 ms mean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newTest(t, tt.opts)
			c := client(t)
			signIn(t, srv, c)
			code, body := get(t, c, srv.URL+tt.path)
			if code != http.StatusOK {
				t.Fatalf("%s: %d\n%s", tt.path, code, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s does not show %q", tt.path, w)
				}
			}
			if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
				t.Errorf("%s holds a tag from a server:\n%s", tt.path, body)
			}
		})
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestActionsRefuseCrossSite: an action is taken only from the
// dashboard's own form: signed in, same origin, with the CSRF token.
func TestActionsRefuseCrossSite(t *testing.T) {
	srv, src := newTest(t, Options{})
	c := client(t)
	signIn(t, srv, c)
	_, page := get(t, c, srv.URL+"/ui/tools")
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the tools page:\n%s", page)
	}
	good := url.Values{"csrf": {m[1]}, "server": {"notes"}, "tool": {"note"}}
	tests := []struct {
		name    string
		client  *http.Client
		form    url.Values
		headers map[string]string
		want    int
	}{
		{"not signed in", client(t), good, nil, http.StatusForbidden},
		{"no token", c, url.Values{"server": {"notes"}, "tool": {"note"}}, nil, http.StatusForbidden},
		{"wrong token", c, url.Values{"csrf": {strings.Repeat("0", 64)}, "server": {"notes"}, "tool": {"note"}}, nil, http.StatusForbidden},
		{"foreign origin", c, good, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"another port", c, good, map[string]string{"Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		{"null origin", c, good, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"same-site", c, good, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"cross-site", c, good, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same origin", c, good, map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}, http.StatusSeeOther},
	}
	for _, action := range []string{"approve", "deny"} {
		for _, tt := range tests {
			t.Run(action+"/"+tt.name, func(t *testing.T) {
				src.approved, src.denied = nil, nil
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ui/tools/"+action, strings.NewReader(tt.form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				resp, err := tt.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Errorf("%s, want %d", resp.Status, tt.want)
				}
				if took := len(src.approved)+len(src.denied) > 0; took != (tt.want == http.StatusSeeOther) {
					t.Errorf("approved %v, denied %v", src.approved, src.denied)
				}
				if action == "deny" && len(src.approved) > 0 {
					t.Errorf("deny approved %v", src.approved)
				}
			})
		}
	}
}

func TestApproveNotHeld(t *testing.T) {
	srv, _ := newTest(t, Options{})
	c := client(t)
	signIn(t, srv, c)
	_, page := get(t, c, srv.URL+"/ui/tools")
	form := url.Values{"csrf": {csrfRE.FindStringSubmatch(page)[1]}, "server": {"notes"}, "tool": {"nosuch"}}
	resp, err := c.PostForm(srv.URL+"/ui/tools/approve", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "no quarantined tool") {
		t.Errorf("approving a tool not held: %s\n%s", resp.Status, body)
	}
}

func TestSignInButton(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		err      error
		want     int
		wantBody string
	}{
		{"address", "https://auth.example/authorize?x=1&y=2", nil, http.StatusOK, `href="https://auth.example/authorize?x=1&amp;y=2"`},
		{"script address", "javascript:alert(1)", nil, http.StatusBadGateway, "not a web address"},
		{"failed", "", errors.New("no authorization server"), http.StatusBadGateway, "no authorization server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked string
			srv, _ := newTest(t, Options{SignIn: func(_ context.Context, server string) (string, error) {
				asked = server
				return tt.url, tt.err
			}})
			c := client(t)
			signIn(t, srv, c)
			_, page := get(t, c, srv.URL+"/ui/")
			form := url.Values{"csrf": {csrfRE.FindStringSubmatch(page)[1]}, "server": {"remote"}}
			resp, err := c.PostForm(srv.URL+"/ui/servers/signin", form)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want || !strings.Contains(string(body), tt.wantBody) || asked != "remote" {
				t.Errorf("%s, asked for %q:\n%s", resp.Status, asked, body)
			}
			if strings.Contains(string(body), `href="javascript`) {
				t.Error("a javascript: link")
			}
		})
	}
}

func TestAuditFilters(t *testing.T) {
	dir := t.TempDir()
	log := audit.New(dir, audit.Options{})
	now := time.Now()
	write := func(r audit.Record) {
		if err := log.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 120 {
		write(audit.Record{Time: now.Add(-3*time.Hour + time.Duration(i)*time.Second), Session: "s", Run: 1, Server: "a", Tool: fmt.Sprintf("t%03d", i), Outcome: "ok"})
	}
	write(audit.Record{Time: now.Add(-time.Minute), Session: "s2", Run: 2, Server: "b", Tool: "x", Outcome: "policy_denied"})
	write(audit.Record{Time: now.Add(-time.Minute), Server: "b", Tool: "x", Outcome: audit.OutcomeQuarantined, Kind: audit.KindPin, Error: "description changed"})
	log.Close(t.Context())

	srv, _ := newTest(t, Options{AuditDir: dir, Now: func() time.Time { return now }})
	c := client(t)
	signIn(t, srv, c)
	tests := []struct {
		query       string
		want, avoid []string
	}{
		{"", []string{"122 records match", "page 1 of 3", "t119", "t072", `id="next"`, "page=2"}, []string{"t071", `id="prev"`}},
		{"page=2", []string{"t071", "t022", `id="prev"`, `id="next"`}, []string{"t072", "t021"}},
		{"page=3", []string{"t000", "t021", `id="prev"`}, []string{"t022", `id="next"`}},
		{"server=b", []string{"2 records match", "policy_denied", "description changed"}, []string{"t000"}},
		{"server=a&tool=t005", []string{"1 records match", "t005"}, []string{"t006"}},
		{"outcome=policy_denied", []string{"1 records match", "s2"}, []string{"description changed"}},
		{"kind=pin", []string{"1 records match", "description changed"}, []string{"s2"}},
		{"kind=call&server=b", []string{"1 records match", "policy_denied"}, nil},
		{"since=1h", []string{"2 records match"}, []string{"t119"}},
		{"since=bogus", []string{"want a duration"}, []string{"t119"}},
		{"server=a&page=2", []string{"page=3", "server=a", "t069", "t020"}, []string{"t070", "t019"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, body := get(t, c, srv.URL+"/ui/audit?"+tt.query)
			if code != http.StatusOK {
				t.Fatalf("%d", code)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("does not show %q", w)
				}
			}
			for _, a := range tt.avoid {
				if strings.Contains(body, a) {
					t.Errorf("shows %q", a)
				}
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	srv, _ := newTest(t, Options{})
	c := client(t)
	signIn(t, srv, c)
	resp, err := c.Get(srv.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", resp.Header)
	}
}

// TestDeniedTool: a denied tool shows as denied, with Approve and without
// Deny; one not denied has both.
func TestDeniedTool(t *testing.T) {
	srv, src := newTest(t, Options{})
	c := client(t)
	signIn(t, srv, c)
	if _, body := get(t, c, srv.URL+"/ui/tools"); !strings.Contains(body, `action="/ui/tools/deny"`) || strings.Contains(body, "Denied</b> on") {
		t.Errorf("a tool not denied: no Deny button, or marked denied:\n%s", body)
	}
	src.held["notes"][0].Denied = time.Now()
	_, body := get(t, c, srv.URL+"/ui/tools")
	if !strings.Contains(body, "<b>Denied</b> on") || strings.Contains(body, `action="/ui/tools/deny"`) || !strings.Contains(body, `action="/ui/tools/approve"`) {
		t.Errorf("a denied tool:\n%s", body)
	}
}
