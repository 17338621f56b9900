package oauth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// fakeAS is an OAuth-protected MCP server on one httptest server: protected
// resource metadata, authorization server metadata, dynamic registration, an
// authorize endpoint that approves at once, a token endpoint that checks PKCE
// and the resource parameter, and an MCP endpoint with one tool, whoami.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server
	ttl time.Duration // of access tokens

	mu            sync.Mutex          // protects following
	clients       map[string][]string // client id → redirect URIs
	codes         map[string]grant
	access        map[string]time.Time // access token → expiry
	refresh       map[string]bool
	registrations int
	refreshes     int
	scopes        []string            // asked for at the last authorization
	basicAuths    int                 // token requests with a Basic header, which it refuses
	need          string              // a scope the MCP endpoint wants besides tools, if any
	granted       map[string][]string // access token → the scopes of its authorization
	cimd          bool                // it advertises client_id_metadata_document_supported
	registerAt    string              // its registration endpoint, if not its own
}

type grant struct{ client, challenge, resource, redirect string }

func newFakeAS(t *testing.T) *fakeAS {
	t.Helper()
	a := &fakeAS{t: t, ttl: time.Hour, clients: map[string][]string{}, codes: map[string]grant{},
		access: map[string]time.Time{}, refresh: map[string]bool{}, granted: map[string][]string{}}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	base := a.srv.URL
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{base}, ScopesSupported: []string{"tools"},
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		cimd, reg := a.cimd, cmp.Or(a.registerAt, base+"/register")
		a.mu.Unlock()
		writeJSON(w, 200, map[string]any{
			"client_id_metadata_document_supported": cimd,
			"issuer":                                base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": reg, "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	server := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "demo-user"}}}, nil, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		exp, ok := a.access[tok]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: exp, Scopes: []string{"tools"}}, nil
	}
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp",
	})(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		need := a.need
		granted, known := a.granted[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		a.mu.Unlock()
		if need != "" && known && !slices.Contains(granted, need) { // step-up authorization
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="tools %s", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, need, base))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		protected.ServeHTTP(w, r)
	})
	return a
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (a *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	a.mu.Lock()
	a.registrations++
	id := fmt.Sprintf("client-%d", a.registrations)
	a.clients[id] = meta.RedirectURIs
	a.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (a *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	defer a.mu.Unlock()
	redirect := q.Get("redirect_uri")
	anyPort := func(registered string) bool { // RFC 8252 7.3: a loopback redirect URI's port may vary
		r, err1 := url.Parse(registered)
		u, err2 := url.Parse(redirect)
		return err1 == nil && err2 == nil && r.Port() == "" && r.Hostname() == u.Hostname() && r.Path == u.Path
	}
	switch {
	case !slices.Contains(a.clients[q.Get("client_id")], redirect) && !slices.ContainsFunc(a.clients[q.Get("client_id")], anyPort):
		http.Error(w, "unknown client or redirect_uri", 400)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE S256 required", 400)
		return
	case q.Get("resource") != a.srv.URL+"/mcp":
		http.Error(w, "wrong resource "+q.Get("resource"), 400)
		return
	}
	a.scopes = strings.Fields(q.Get("scope"))
	code := rand.Text()
	a.codes[code] = grant{q.Get("client_id"), q.Get("code_challenge"), q.Get("resource"), redirect}
	http.Redirect(w, r, redirect+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
}

func (a *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	client := r.PostForm.Get("client_id")
	if _, _, ok := r.BasicAuth(); ok {
		// Its clients are public (token_endpoint_auth_methods_supported
		// is none): they send client_id in the body, not a Basic header.
		a.mu.Lock()
		a.basicAuths++
		a.mu.Unlock()
		writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "client_secret_basic is not supported"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := a.codes[r.PostForm.Get("code")]
		delete(a.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.client != client || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge ||
			r.PostForm.Get("resource") != g.resource || r.PostForm.Get("redirect_uri") != g.redirect {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
	case "refresh_token":
		a.refreshes++
		if !a.refresh[r.PostForm.Get("refresh_token")] {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token revoked"})
			return
		}
		delete(a.refresh, r.PostForm.Get("refresh_token"))
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
	a.access[at] = time.Now().Add(a.ttl)
	a.granted[at] = a.scopes
	a.refresh[rt] = true
	writeJSON(w, 200, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": int(a.ttl.Seconds())})
}

// revoke forgets every token the server issued.
func (a *fakeAS) revoke() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
	clear(a.refresh)
}

func (a *fakeAS) counts() (registrations, refreshes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registrations, a.refreshes
}

// follower is a browser that follows the authorization URL to the loopback
// redirect; Wait waits for every visit it made.
type follower struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	visits int
}

func (f *follower) open(u string) error {
	f.mu.Lock()
	f.visits++
	f.mu.Unlock()
	f.wg.Go(func() {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
		}
	})
	return nil
}

func (f *follower) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.visits
}

// fixture is a fake authorization server, a store, the server's entry and a
// browser.
type fixture struct {
	as      *fakeAS
	store   *Store
	def     *discovery.Server
	browser *follower
	cimd    string // codebridge's Client ID Metadata Document, if any
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	as := newFakeAS(t)
	f := &fixture{as: as, store: NewStoreWith(t.TempDir(), newFakeKeyring()), browser: &follower{},
		def: &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: as.srv.URL + "/mcp", Source: "hosted.json"}}
	t.Cleanup(f.browser.wg.Wait)
	return f
}

// login signs in to f's server, through its browser.
func (f *fixture) login(t *testing.T) *LoginResult {
	t.Helper()
	res, err := Login(t.Context(), f.def, LoginOptions{Store: f.store, Open: f.browser.open, Timeout: 30 * time.Second, ClientMetadataURL: f.cimd})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	f.as.mu.Lock()
	defer f.as.mu.Unlock()
	if f.as.basicAuths > 0 {
		t.Errorf("%d token requests authenticated the public client with a Basic header; want client_id in the body", f.as.basicAuths)
	}
	return res
}

// accessToken is the token h would send now.
func accessToken(t *testing.T, h auth.OAuthHandler) (string, error) {
	ts, err := h.TokenSource(t.Context())
	if err != nil || ts == nil {
		return "", err
	}
	tok, err := ts.Token()
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// callWhoami connects to def as the pool does and calls whoami.
func callWhoami(t *testing.T, store *Store, def *discovery.Server) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	transport := &mcp.StreamableClientTransport{Endpoint: def.URL, OAuthHandler: store.Handler(def, nil, nil)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return err
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "demo-user" {
		t.Errorf("whoami = %q", got)
	}
	return nil
}

// TestLoginRefreshRevoke: codebridge login's flow against a fake
// authorization server registers a client, signs in with PKCE and the
// resource parameter, and saves the tokens; a call then uses them; an
// expired token is refreshed without the browser and saved; a revoked
// refresh token gives ErrAuthRequired naming the command, once, without
// trying again; a new login reuses the registered client.
func TestLoginRefreshRevoke(t *testing.T) {
	f := newFixture(t)
	as, store, def, browser := f.as, f.store, f.def, f.browser

	if err := callWhoami(t, store, def); !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "codebridge login hosted") {
		t.Fatalf("call before login: %v; want ErrAuthRequired naming codebridge login hosted", err)
	}

	var out bytes.Buffer
	res, err := Login(t.Context(), def, LoginOptions{Store: store, Open: browser.open, Out: &out, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Login: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), as.srv.URL+"/authorize?") || browser.count() != 1 {
		t.Errorf("Login printed %q and opened the browser %d times; want the authorization URL, opened once", out.String(), browser.count())
	}
	rec := res.Record
	if res.Tools != 1 || !rec.Registered || rec.Issuer != as.srv.URL || rec.AccessToken.Reveal() == "" || rec.RefreshToken.Reveal() == "" {
		t.Fatalf("Login = %+v, record %+v; want 1 tool, a registered client and tokens", res, rec)
	}
	if !slices.Equal(as.scopes, []string{"tools"}) {
		t.Errorf("asked for scopes %v; want those of the resource metadata, [tools]", as.scopes)
	}
	if s := fmt.Sprintf("%v %+v %#v", rec, rec, *rec); strings.Contains(s, rec.AccessToken.Reveal()) || strings.Contains(s, rec.RefreshToken.Reveal()) {
		t.Errorf("a printed Record holds a token: %s", s)
	}

	if err := callWhoami(t, store, def); err != nil {
		t.Fatalf("call after login: %v", err)
	}

	// Expired: refreshed without the browser, and the new token saved.
	first := rec.AccessToken.Reveal()
	rec.Expiry = time.Now().Add(-time.Minute)
	if _, err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	if err := callWhoami(t, store, def); err != nil {
		t.Fatalf("call with an expired token: %v", err)
	}
	saved, _ := store.Load(def.Name, def.URL)
	if _, refreshes := as.counts(); refreshes != 1 || saved.AccessToken.Reveal() == first || !saved.Expiry.After(time.Now()) || browser.count() != 1 {
		t.Errorf("after expiry: %d refreshes, token changed %v, expiry %v, browser opened %d times; want 1 refresh, a new saved token, no browser",
			refreshes, saved.AccessToken.Reveal() != first, saved.Expiry, browser.count())
	}

	// Revoked: auth_required naming the command, and no loop.
	as.revoke()
	saved.Expiry = time.Now().Add(-time.Minute)
	store.Save(saved)
	for i := range 2 {
		err := callWhoami(t, store, def)
		if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "codebridge login hosted") {
			t.Fatalf("call %d after revocation: %v; want ErrAuthRequired naming codebridge login hosted", i, err)
		}
	}
	if _, refreshes := as.counts(); refreshes != 2 {
		t.Errorf("%d refreshes after revocation; want 2 (one refused, then none)", refreshes)
	}
	if forgotten, _ := store.Load(def.Name, def.URL); forgotten.SignedInNow() || forgotten.ClientID == "" {
		t.Errorf("after a refused refresh the store holds tokens %v, client %q; want no tokens, the client kept", forgotten.SignedInNow(), forgotten.ClientID)
	}

	// Signing in again reuses the registered client.
	f.login(t)
	if registrations, _ := as.counts(); registrations != 1 {
		t.Errorf("%d registrations after two logins; want the client registered once", registrations)
	}
	if err := callWhoami(t, store, def); err != nil {
		t.Fatalf("call after the second login: %v", err)
	}

	// Another URL under the same name is not sent the token.
	moved := *def
	moved.URL = as.srv.URL + "/mcp?moved"
	if r, _ := store.Load(moved.Name, moved.URL); r != nil {
		t.Errorf("the sign-in of %s is used for %s", def.URL, moved.URL)
	}
}

// TestLoginTimeout: a sign-in nobody completes ends at the timeout with a
// message that says what to do, and saves nothing.
func TestLoginTimeout(t *testing.T) {
	as := newFakeAS(t)
	store := NewStoreWith(t.TempDir(), newFakeKeyring())
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: as.srv.URL + "/mcp"}
	_, err := Login(t.Context(), def, LoginOptions{Store: store, Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no sign-in to hosted within") {
		t.Fatalf("Login without a browser = %v; want a timeout that says what to do", err)
	}
	if r, _ := store.Load(def.Name, def.URL); r.SignedInNow() {
		t.Error("a timed-out login saved tokens")
	}
}

// TestLoginNotNeeded: a server that answers without a challenge has nothing
// to sign in to.
func TestLoginNotNeeded(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "open"}, nil)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()
	def := &discovery.Server{Name: "open", Transport: discovery.Streamable, URL: srv.URL}
	_, err := Login(t.Context(), def, LoginOptions{Store: NewStoreWith(t.TempDir(), newFakeKeyring()), Timeout: 5 * time.Second})
	if !errors.Is(err, ErrNoSignInNeeded) {
		t.Fatalf("Login = %v; want ErrNoSignInNeeded", err)
	}
}

// fakeKeyring is an OS keyring in memory.
type fakeKeyring struct {
	mu sync.Mutex
	m  map[secret.Ref]string
}

func newFakeKeyring() *fakeKeyring { return &fakeKeyring{m: map[secret.Ref]string{}} }

func (k *fakeKeyring) Get(r secret.Ref) (secret.Value, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[r]
	if !ok {
		return secret.Value{}, secret.ErrNotFound
	}
	return secret.New(v), nil
}

func (k *fakeKeyring) Set(r secret.Ref, v secret.Value) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[r] = v.Reveal()
	return nil
}

func (k *fakeKeyring) Delete(r secret.Ref) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.m[r]; !ok {
		return secret.ErrNotFound
	}
	delete(k.m, r)
	return nil
}

// noKeyring is a system without one.
type noKeyring struct{}

func (noKeyring) Get(secret.Ref) (secret.Value, error) { return secret.Value{}, secret.ErrNoKeyring }
func (noKeyring) Set(secret.Ref, secret.Value) error   { return secret.ErrNoKeyring }
func (noKeyring) Delete(secret.Ref) error              { return secret.ErrNoKeyring }

// TestHandlerPicksUpNewSignIn: a handler whose sign-in was refused (a
// running codebridge's warm connection) uses the next sign-in saved, without
// being made again; until then it does not ask the token endpoint again.
func TestHandlerPicksUpNewSignIn(t *testing.T) {
	f := newFixture(t)
	rec := f.login(t).Record
	h := f.store.Handler(f.def, nil, nil)
	if got, err := accessToken(t, h); got != rec.AccessToken.Reveal() || err != nil {
		t.Fatalf("token = %v; want the stored one", err)
	}
	f.as.revoke()
	rec.Expiry = time.Now().Add(-time.Minute)
	f.store.Save(rec)
	h = f.store.Handler(f.def, nil, nil)
	if _, err := accessToken(t, h); !errors.Is(err, ErrAuthRequired) {
		t.Fatalf("token after revocation: %v; want ErrAuthRequired", err)
	}
	if got, err := accessToken(t, h); got != "" || err != nil {
		t.Fatalf("token again = %q, %v; want none (the request then goes without, and Authorize says auth required)", got, err)
	}
	if _, refreshes := f.as.counts(); refreshes != 1 {
		t.Errorf("%d refreshes; want 1", refreshes)
	}
	again := f.login(t).Record
	if got, err := accessToken(t, h); got != again.AccessToken.Reveal() || err != nil {
		t.Errorf("token after a new login: %v; want the new sign-in's", err)
	}

	// An access token the server refuses before it expires is not sent
	// again, and says so.
	f.as.revoke()
	err := callWhoami(t, f.store, f.def)
	if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "the server refused the stored sign-in") {
		t.Errorf("call with a revoked access token: %v; want ErrAuthRequired, refused", err)
	}
}

// TestLoginConfiguredClient: an entry's "oauth" client is used as it is, not
// registered, and its scopes replace those of the challenge.
func TestLoginConfiguredClient(t *testing.T) {
	f := newFixture(t)
	f.as.mu.Lock()
	f.as.clients["my-client"] = []string{"http://127.0.0.1/callback"}
	f.as.mu.Unlock()
	f.def.OAuth = &discovery.OAuth{ClientID: "my-client", Scopes: []string{"tools", "extra"}}
	res := f.login(t)
	if registrations, _ := f.as.counts(); registrations != 0 || res.Record.ClientID != "my-client" || res.Record.Registered {
		t.Errorf("%d registrations, client %q (registered %v); want the configured client, none registered", registrations, res.Record.ClientID, res.Record.Registered)
	}
	// Scopes are a set (RFC 6749 3.3): go-sdk's handler does not keep their order.
	if got := slices.Sorted(slices.Values(f.as.scopes)); !slices.Equal(got, []string{"extra", "tools"}) {
		t.Errorf("asked for scopes %v; want the entry's [tools extra]", f.as.scopes)
	}
	if err := callWhoami(t, f.store, f.def); err != nil {
		t.Errorf("call after login: %v", err)
	}
}

// TestLoginClientMetadataDocument: with a Client ID Metadata Document set,
// login signs in with its URL as the client ID where the authorization
// server supports them, and registers where it does not.
func TestLoginClientMetadataDocument(t *testing.T) {
	const doc = "https://codebridge.example/client.json"
	for _, supported := range []bool{true, false} {
		t.Run(fmt.Sprint("supported=", supported), func(t *testing.T) {
			f := newFixture(t)
			f.cimd = doc
			f.as.mu.Lock()
			f.as.cimd = supported
			f.as.clients[doc] = []string{"http://127.0.0.1/callback"} // what the document lists
			f.as.mu.Unlock()
			res := f.login(t)
			registrations, _ := f.as.counts()
			if supported && (res.Record.ClientID != doc || registrations != 0 || res.Record.TokenAuth != "none") {
				t.Errorf("signed in as %q (%s) after %d registrations; want %s, none, no registration", res.Record.ClientID, res.Record.TokenAuth, registrations, doc)
			}
			if !supported && (res.Record.ClientID == doc || registrations != 1) {
				t.Errorf("signed in as %q after %d registrations; want a registered client", res.Record.ClientID, registrations)
			}
			if err := callWhoami(t, f.store, f.def); err != nil {
				t.Errorf("call after login: %v", err)
			}
		})
	}
}

// TestLoginStepUp: a server that answers 403 insufficient_scope fails the
// call with ErrAuthRequired naming the scopes; the next login asks for them
// besides the challenge's, and the call then succeeds.
func TestLoginStepUp(t *testing.T) {
	f := newFixture(t)
	f.login(t)
	f.as.mu.Lock()
	f.as.need = "admin"
	f.as.mu.Unlock()
	err := callWhoami(t, f.store, f.def)
	if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "scope tools admin") {
		t.Fatalf("call needing more scopes: %v; want ErrAuthRequired naming scope tools admin", err)
	}
	f.login(t)
	if got := slices.Sorted(slices.Values(f.as.scopes)); !slices.Equal(got, []string{"admin", "tools"}) {
		t.Errorf("the login after the 403 asked for scopes %v; want [admin tools]", f.as.scopes)
	}
	if err := callWhoami(t, f.store, f.def); err != nil {
		t.Errorf("call after the new login: %v", err)
	}
}

// TestHandlersShareRotatedToken: two codebridge processes signed in to the
// same server: when one has refreshed (and the authorization server rotated
// the refresh token), the other's refresh is refused, and it takes the saved
// tokens instead of forgetting the sign-in.
func TestHandlersShareRotatedToken(t *testing.T) {
	f := newFixture(t)
	rec := f.login(t).Record
	rec.Expiry = time.Now().Add(-time.Minute)
	f.store.Save(rec)
	first, second := f.store.Handler(f.def, nil, nil), f.store.Handler(f.def, nil, nil)
	// Both have loaded the expired sign-in before either refreshes.
	first.TokenSource(t.Context())
	second.TokenSource(t.Context())
	a, err := accessToken(t, first)
	if err != nil || a == "" {
		t.Fatalf("first refresh: %v", err)
	}
	b, err := accessToken(t, second)
	if err != nil || b != a {
		t.Fatalf("second handler: %q, %v; want the first's refreshed token %q", b, err, a)
	}
	if _, refreshes := f.as.counts(); refreshes != 1 {
		t.Errorf("%d refreshes; want 1 (the second handler reloads the first's)", refreshes)
	}
	if rec, _ := f.store.Load(f.def.Name, f.def.URL); !rec.SignedInNow() || rec.AccessToken.Reveal() != a {
		t.Error("the store lost the refreshed sign-in")
	}
}

// TestLoginAsk: with Ask, the user is sent to the authorization page
// through it, not Open or Out; its error ends the login at once, saving
// nothing, and after its yes the redirect completes the login as before.
func TestLoginAsk(t *testing.T) {
	f := newFixture(t)
	refused := errors.New("the person declined")
	var out strings.Builder
	var asked []string
	_, err := Login(t.Context(), f.def, LoginOptions{Store: f.store, Open: f.browser.open, Out: &out, Timeout: time.Minute,
		Ask: func(_ context.Context, u string) error { asked = append(asked, u); return refused }})
	if !errors.Is(err, refused) || len(asked) != 1 || f.browser.count() != 0 || out.Len() != 0 {
		t.Fatalf("Login, declined: %v after %d questions, %d browser visits, printed %q; want the refusal, asked once, nothing else", err, len(asked), f.browser.count(), out.String())
	}
	if r, _ := f.store.Load(f.def.Name, f.def.URL); r.SignedInNow() {
		t.Error("a declined login saved tokens")
	}

	res, err := Login(t.Context(), f.def, LoginOptions{Store: f.store, Out: &out, Timeout: 30 * time.Second,
		Ask: func(_ context.Context, u string) error { asked = append(asked, u); return f.browser.open(u) }})
	if err != nil || !res.Record.SignedInNow() || len(asked) != 2 || !strings.Contains(asked[1], "code_challenge=") || out.Len() != 0 {
		t.Fatalf("Login, accepted: %v; asked %q, printed %q", err, asked, out.String())
	}
}
