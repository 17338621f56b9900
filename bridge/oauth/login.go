package oauth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// DefaultLoginTimeout is how long [Login] waits for the user to sign in.
const DefaultLoginTimeout = 5 * time.Minute

// ErrNoSignInNeeded: the server answered without asking for a sign-in.
var ErrNoSignInNeeded = errors.New("the server does not ask for a sign-in")

// LoginOptions configure [Login].
type LoginOptions struct {
	Store *Store
	// Open opens the authorization URL in the user's browser (see
	// [Browser]); nil, or an error, leaves the user to open the printed URL.
	Open func(url string) error
	// Out receives what the user must read: the URL to open, progress.
	Out io.Writer
	// Ask, if set, sends the user to the authorization URL instead of Open
	// and Out: it returns once they agreed to open it (the agent's client's
	// URL-mode elicitation, bridge/host), or with an error that ends the
	// sign-in (they declined).
	Ask func(ctx context.Context, authURL string) error
	// Timeout bounds the whole sign-in, the user's part included. Default
	// [DefaultLoginTimeout].
	Timeout time.Duration
	// HTTPClient reaches the server and its authorization server. Nil means
	// [Client] with a 30 s timeout per request.
	HTTPClient *http.Client
	// Client is what codebridge calls itself in initialize and when it
	// registers (client_name).
	Client *mcp.Implementation
	// ClientMetadataURL is the URL of a Client ID Metadata Document
	// describing codebridge: where the authorization server supports them,
	// Login signs in with it as the client ID instead of registering.
	ClientMetadataURL string
}

// A LoginResult is a completed sign-in.
type LoginResult struct {
	Record *Record
	Where  string // where it is kept: [InKeyring], or [InFile] and the path
	Tools  int    // how many tools the server listed once signed in
}

// Login signs in to def, a streamable HTTP server, as the MCP authorization
// spec has a client do: the server's 401 names its protected resource
// metadata (RFC 9728), which names the authorization server (metadata by RFC
// 8414 or OpenID Connect discovery); codebridge uses the client of def's
// "oauth" entry, else the one it registered there at an earlier login, else
// registers one (RFC 7591); then go-sdk's [auth.AuthorizationCodeHandler]
// runs the authorization code flow with PKCE S256, the resource parameter
// (RFC 8707) and the scopes of the challenge, through a redirect URI on
// 127.0.0.1 (RFC 8252) that this function listens on. Once the server has
// accepted the token (initialize and tools/list), the sign-in is saved in
// opts.Store.
func Login(ctx context.Context, def *discovery.Server, opts LoginOptions) (*LoginResult, error) {
	if def.Transport != discovery.Streamable {
		return nil, fmt.Errorf("%s is reached over %s: codebridge signs in to streamable HTTP servers only", def.Name, def.Transport)
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(opts.Timeout, DefaultLoginTimeout))
	defer cancel()
	client := cmp.Or(opts.HTTPClient, Client(def, 30*time.Second))
	out := cmp.Or[io.Writer](opts.Out, io.Discard)
	impl := cmp.Or(opts.Client, &mcp.Implementation{Name: "codebridge", Version: "dev"})

	asm, err := discover(ctx, def, client)
	if err != nil {
		return nil, err
	}
	prev, err := opts.Store.Load(def.Name, def.URL)
	if _, aside := errors.AsType[*setAsideError](err); aside {
		fmt.Fprintf(out, "%v\n", err) // none is stored now: this login makes one
	} else if err != nil {
		return nil, err
	}
	reg, err := register(ctx, def, asm, prev, client, impl, opts.ClientMetadataURL)
	if err != nil {
		return nil, err
	}
	defer reg.listener.Close()

	cb := newCallback(def.Name)
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(reg.listener) // ends when srv is closed
	}()
	defer func() {
		srv.Close()
		<-served
	}()

	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	// The scopes: those of def's "oauth" entry, else those the server's
	// challenge names and those it asked for more of since the last
	// sign-in (step-up: see [handler.Authorize]).
	scopeFilter := func(challenged []string) []string {
		if def.OAuth != nil && len(def.OAuth.Scopes) > 0 {
			return slices.Clone(def.OAuth.Scopes)
		}
		if prev == nil || prev.Resource != def.URL || prev.Issuer != asm.Issuer {
			return challenged
		}
		// offline_access is go-sdk's to add, if the server supports it.
		return unionScopes(challenged, slices.DeleteFunc(slices.Clone(prev.Scopes), func(s string) bool { return s == "offline_access" }))
	}
	flowClient := client
	if reg.tokenAuth == "none" {
		c := *client
		c.Transport = publicClient{base: client.Transport, tokenURL: asm.TokenEndpoint}
		flowClient = &c
	}
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: reg.creds,
		RedirectURL:         reg.redirectURI,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return cb.fetch(ctx, args.URL, opts, out)
		},
		ScopeFilter:         scopeFilter,
		RequestRefreshToken: true,
		Client:              flowClient,
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = cfg, tok
			return cfg.TokenSource(ctx, tok), nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("signing in to %s: %w", def.Name, err)
	}
	cs, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: def.URL, HTTPClient: client, OAuthHandler: h}, nil)
	if err != nil {
		if ctx.Err() != nil && got.tok == nil && opts.Ask == nil {
			return nil, fmt.Errorf("no sign-in to %s within %s: open the address printed above in a browser, or run codebridge login again", def.Name, cmp.Or(opts.Timeout, DefaultLoginTimeout))
		}
		return nil, fmt.Errorf("signing in to %s: %w", def.Name, err)
	}
	defer cs.Close()
	// Listed before the token is looked for: a server may let anyone
	// initialize and ask for a sign-in only then.
	tools := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil && got.tok == nil {
			return nil, fmt.Errorf("signing in to %s: listing its tools: %w", def.Name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("signed in to %s, but listing its tools failed: %w", def.Name, err)
		}
		tools++
	}
	if got.tok == nil {
		return nil, fmt.Errorf("%s at %s: %w; nothing to sign in to", def.Name, def.URL, ErrNoSignInNeeded)
	}

	rec := &Record{
		Server: def.Name, Resource: def.URL, Issuer: asm.Issuer,
		AuthURL: got.cfg.Endpoint.AuthURL, TokenURL: got.cfg.Endpoint.TokenURL,
		ClientID: got.cfg.ClientID, ClientSecret: secret.New(got.cfg.ClientSecret), TokenAuth: reg.tokenAuth,
		Registered: reg.registered, RedirectURI: reg.redirectURI,
		Scopes: got.cfg.Scopes, Subject: subject(got.tok), SignedIn: time.Now(),
	}
	rec.setToken(got.tok)
	where, err := opts.Store.Save(rec)
	if err != nil {
		return nil, err
	}
	return &LoginResult{Record: rec, Where: where, Tools: tools}, nil
}

// discover finds the authorization server of def as the spec orders: the
// resource_metadata of the server's challenge, else its well-known protected
// resource metadata (at the endpoint's path, then at the root), else (as in
// the 2025-03-26 revision) the server's own origin.
func discover(ctx context.Context, def *discovery.Server, client *http.Client) (*oauthex.AuthServerMeta, error) {
	refused, err := probe(ctx, def, client)
	switch {
	case refused == nil && err != nil:
		return nil, fmt.Errorf("reaching %s at %s: %w", def.Name, def.URL, err)
	case refused == nil:
		return nil, fmt.Errorf("%s at %s answered without asking for a sign-in: %w", def.Name, def.URL, ErrNoSignInNeeded)
	case refused.StatusCode != http.StatusUnauthorized && refused.StatusCode != http.StatusForbidden:
		return nil, fmt.Errorf("%s at %s answered %s, not 401 with a sign-in challenge: check its \"url\" in %s", def.Name, def.URL, refused.Status, def.Source)
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(refused.Header.Values("WWW-Authenticate"))
	var metaURL string
	for _, c := range challenges {
		metaURL = cmp.Or(metaURL, c.Params["resource_metadata"])
	}
	u, err := url.Parse(def.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", def.Name, err)
	}
	origin := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	type candidate struct{ meta, resource string }
	cands := []candidate{
		{origin + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/"), def.URL},
		{origin + "/.well-known/oauth-protected-resource", origin},
	}
	if metaURL != "" {
		cands = append([]candidate{{metaURL, def.URL}}, cands...)
	}
	issuer := origin
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.meta, c.resource, client)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("%s: its protected resource metadata (%s) names no authorization server", def.Name, c.meta)
		}
		issuer = prm.AuthorizationServers[0]
		break
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, client)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the metadata of its authorization server %s: %w", def.Name, issuer, err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint: issuer + "/token", RegistrationEndpoint: issuer + "/register"}
	}
	return asm, nil
}

// probe connects to def as a client without a token would, initializing and
// listing its tools (a server may let anyone initialize and ask for a
// sign-in only then), and returns the first answer that refused a request:
// nil when there was none. err is why the probe failed, if it did.
func probe(ctx context.Context, def *discovery.Server, client *http.Client) (refused *http.Response, err error) {
	rec := &refusals{base: client.Transport}
	if rec.base == nil {
		rec.base = http.DefaultTransport
	}
	c := *client
	c.Transport = rec
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codebridge", Version: "login"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: def.URL, HTTPClient: &c}, nil)
	if err != nil {
		return rec.first(), err
	}
	// Whether it was refused is what matters: another error (a server
	// without tools, say) is not a sign-in's business.
	cs.ListTools(ctx, nil)
	cs.Close()
	return rec.first(), nil
}

// refusals is an http.RoundTripper that keeps the first answer that refused
// a request: a 401 or 403 of any request, else a POST's error status. Its
// body is not kept.
type refusals struct {
	base http.RoundTripper

	mu      sync.Mutex // protects following
	auth    *http.Response
	refused *http.Response
}

func (r *refusals) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	kept := &http.Response{Status: resp.Status, StatusCode: resp.StatusCode, Header: resp.Header.Clone()}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.auth == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		r.auth = kept
	case r.refused == nil && req.Method == http.MethodPost:
		r.refused = kept
	}
	return resp, nil
}

func (r *refusals) first() *http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.auth != nil {
		return r.auth
	}
	return r.refused
}

// publicClient is the http.RoundTripper of a sign-in as a public client
// (token endpoint auth method none): a token request's client_id goes in its
// body, as OAuth has a public client send it. go-sdk v1.8.0 sends a
// pre-registered client without a secret in a Basic header with an empty
// password when the server lists no secret method, which a server that
// supports only none takes for client_secret_basic.
type publicClient struct {
	base     http.RoundTripper // nil for http.DefaultTransport
	tokenURL string
}

func (p publicClient) RoundTrip(req *http.Request) (*http.Response, error) {
	base := p.base
	if base == nil {
		base = http.DefaultTransport
	}
	id, pass, basic := req.BasicAuth()
	if !basic || pass != "" || req.Method != http.MethodPost || req.URL.String() != p.tokenURL || req.Body == nil {
		return base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("the token request's body: %w", err)
	}
	if unescaped, err := url.QueryUnescape(id); err == nil { // golang.org/x/oauth2 escapes it
		id = unescaped
	}
	form.Set("client_id", id)
	enc := form.Encode()
	out := req.Clone(req.Context())
	out.Header.Del("Authorization")
	out.Body = io.NopCloser(strings.NewReader(enc))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(enc)), nil }
	out.ContentLength = int64(len(enc))
	return base.RoundTrip(out)
}

// unionScopes is a's scopes, then those of b that a does not have.
func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// registration is the client a login signs in as, and the loopback listener
// of its redirect URI.
type registration struct {
	creds       *oauthex.ClientCredentials
	tokenAuth   string // client_secret_post, client_secret_basic or none
	registered  bool   // codebridge registered it
	redirectURI string
	listener    net.Listener
}

// register chooses the client to sign in as: def's "oauth" client, else
// the Client ID Metadata Document at cimd where the authorization server
// supports them, else the one codebridge registered with this authorization
// server at the last login (when its redirect URI's port is free again: a
// registered client keeps its redirect URIs), else a new registration.
func register(ctx context.Context, def *discovery.Server, asm *oauthex.AuthServerMeta, prev *Record, client *http.Client, impl *mcp.Implementation, cimd string) (*registration, error) {
	listen := func(addr string) (net.Listener, string, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", err
		}
		return ln, "http://" + ln.Addr().String() + "/callback", nil
	}
	withSecret := func(id, sec string) *registration {
		r := &registration{creds: &oauthex.ClientCredentials{ClientID: id, Issuer: asm.Issuer}, tokenAuth: "none"}
		if sec != "" {
			r.creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: sec}
			r.tokenAuth = "client_secret_basic"
			if slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_post") {
				r.tokenAuth = "client_secret_post"
			}
		}
		return r
	}
	var given *registration // a client codebridge need not register
	switch {
	case def.OAuth != nil && def.OAuth.ClientID != "":
		given = withSecret(def.OAuth.ClientID, def.OAuth.ClientSecret.Reveal())
	case cimd != "" && asm.ClientIDMetadataDocumentSupported:
		given = withSecret(cimd, "") // a public client: its document says token_endpoint_auth_method none
	}
	if given != nil {
		var err error
		if given.listener, given.redirectURI, err = listen("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("listening for the sign-in's redirect: %w", err)
		}
		return given, nil
	}
	if prev != nil && prev.Registered && prev.Issuer == asm.Issuer && prev.ClientID != "" {
		if u, err := url.Parse(prev.RedirectURI); err == nil {
			if ln, redirect, err := listen(u.Host); err == nil {
				r := withSecret(prev.ClientID, prev.ClientSecret.Reveal())
				r.tokenAuth, r.registered, r.listener, r.redirectURI = cmp.Or(prev.TokenAuth, r.tokenAuth), true, ln, redirect
				return r, nil
			}
		}
	}
	if asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("the authorization server of %s (%s) does not let clients register themselves: register codebridge there (redirect URI http://127.0.0.1/callback, any port) and add \"oauth\": {\"clientId\": \"...\"} to %s's entry in %s",
			def.Name, asm.Issuer, def.Name, def.Source)
	}
	ln, redirect, err := listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's redirect: %w", err)
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect},
		// A program on the user's machine with a loopback redirect, which
		// registration must say (SEP-837; OpenID Connect registration's
		// default, "web", would refuse the loopback address).
		ApplicationType:         "native",
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              impl.Name,
		SoftwareID:              "codebridge",
		SoftwareVersion:         impl.Version,
	}, client)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("registering codebridge with the authorization server of %s (%s): %w", def.Name, asm.Issuer, err)
	}
	r := withSecret(resp.ClientID, resp.ClientSecret)
	r.tokenAuth = cmp.Or(resp.TokenEndpointAuthMethod, r.tokenAuth)
	r.registered, r.listener, r.redirectURI = true, ln, redirect
	return r, nil
}

// A callback receives the authorization server's redirect on the loopback
// redirect URI.
type callback struct {
	server  string
	results chan url.Values // the query of the redirect with the sign-in's state
	asked   atomic.Bool     // the user was sent to sign in

	mu     sync.Mutex // protects following
	failed error      // why the first fetch failed, if it did
	state  string     // the sign-in's; "" until fetch knows it
}

func newCallback(server string) *callback {
	return &callback{server: server, results: make(chan url.Values, 1)}
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	c.mu.Lock()
	want := c.state
	c.mu.Unlock()
	if want == "" || q.Get("state") != want {
		// Not this sign-in's redirect: answered and dropped, so that a
		// flood of them cannot push the real one out.
		http.Error(w, "This is not the redirect of the sign-in in progress.", http.StatusBadRequest)
		return
	}
	select {
	case c.results <- q:
	default: // the real redirect came already
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	msg := "Signed in to " + c.server + ". You can close this tab and go back to the terminal or the agent."
	if e := q.Get("error"); e != "" {
		msg = "Sign-in to " + c.server + " failed: " + cmp.Or(q.Get("error_description"), e)
	}
	fmt.Fprintf(w, "<!doctype html><title>codebridge</title><p>%s</p>\n", html.EscapeString(msg))
}

// fetch sends the user to authURL (with opts.Ask, else printed to out and
// opened with opts.Open) and waits for the redirect that carries authURL's
// state.
func (c *callback) fetch(ctx context.Context, authURL string, opts LoginOptions, out io.Writer) (_ *auth.AuthorizationResult, err error) {
	if c.asked.Swap(true) {
		// The transport asks again when a request fails after the first
		// attempt (closing the session, say): once per login is enough,
		// and the first one's failure is the login's.
		c.mu.Lock()
		defer c.mu.Unlock()
		return nil, cmp.Or(c.failed, errors.New("the sign-in did not complete"))
	}
	defer func() {
		c.mu.Lock()
		c.failed = err
		c.mu.Unlock()
	}()
	state := ""
	if u, err := url.Parse(authURL); err == nil {
		state = u.Query().Get("state")
	}
	c.mu.Lock()
	c.state = state
	c.mu.Unlock()
	if opts.Ask != nil {
		if err := opts.Ask(ctx, authURL); err != nil {
			return nil, err
		}
	} else {
		fmt.Fprintf(out, "Sign in to %s in your browser at:\n\n  %s\n\n", c.server, authURL)
		if opts.Open != nil {
			if err := opts.Open(authURL); err != nil {
				fmt.Fprintf(out, "Could not open a browser (%v): open the address above yourself.\n", err)
			}
		}
		fmt.Fprintln(out, "Waiting for the sign-in to finish...")
	}
	for {
		select {
		case q := <-c.results:
			if q.Get("state") != state {
				continue // not this sign-in's redirect
			}
			if e := q.Get("error"); e != "" {
				return nil, fmt.Errorf("the authorization server refused the sign-in: %s", cmp.Or(q.Get("error_description"), e))
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// subject is who signed in, from the OpenID Connect ID token that came with
// tok, if any (its claims are read for display, not trusted for anything).
func subject(tok *oauth2.Token) string {
	id, _ := tok.Extra("id_token").(string)
	parts := strings.Split(id, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Email             string `json:"email"`
		PreferredUsername string `json:"preferred_username"`
		Name              string `json:"name"`
		Sub               string `json:"sub"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if dec.Decode(&claims) != nil {
		return ""
	}
	return cmp.Or(claims.Email, claims.PreferredUsername, claims.Name, claims.Sub)
}
