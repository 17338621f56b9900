package oauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// ErrAuthRequired matches (with [errors.Is]) the error of a request to a
// server that needs the user to sign in: no sign-in is stored, the server
// refused the stored token, or refreshing it failed.
var ErrAuthRequired = errors.New("sign-in required")

// An AuthRequiredError says that Server needs the user to sign in, why, and
// the command that does it.
type AuthRequiredError struct {
	Server string
	Reason string // e.g. "no sign-in is stored"
	Err    error  // what failed, if anything (a refresh's error)
}

func (e *AuthRequiredError) Error() string {
	return fmt.Sprintf("MCP server %q needs you to sign in (%s): run `codebridge login %s`, then call it again", e.Server, e.Reason, e.Server)
}

// Remedy is the command that signs in.
func (e *AuthRequiredError) Remedy() string { return "codebridge login " + e.Server }

// Is makes an AuthRequiredError match [ErrAuthRequired].
func (e *AuthRequiredError) Is(target error) bool { return target == ErrAuthRequired }

func (e *AuthRequiredError) Unwrap() error { return e.Err }

// Handler returns the [auth.OAuthHandler] of def, for
// mcp.StreamableClientTransport: it sends def's stored access token,
// refreshes it when it expires (saving the new one), and, where the server
// asks for a sign-in codebridge cannot give without the user, fails with an
// [AuthRequiredError]. It never opens a browser; `codebridge login` does.
// httpClient (nil: http.DefaultClient) reaches the token endpoint.
func (s *Store) Handler(def *discovery.Server, httpClient *http.Client, logger *slog.Logger) auth.OAuthHandler {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &handler{store: s, def: def, client: httpClient, logger: logger}
}

// handler is one server's [auth.OAuthHandler] at run time.
type handler struct {
	store  *Store
	def    *discovery.Server
	client *http.Client
	logger *slog.Logger

	mu     sync.Mutex         // protects following
	rec    *Record            // the sign-in; nil when there is none
	ts     oauth2.TokenSource // over rec's tokens; nil without tokens
	failed error              // why the last refresh failed, if it did
}

var _ auth.OAuthHandler = (*handler)(nil)

// TokenSource returns the source of def's access tokens, nil when it has no
// sign-in (the request then goes without, and a server that wants one
// answers 401, which Authorize turns into an AuthRequiredError).
func (h *handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts == nil {
		// Read again while signed out: `codebridge login` may have
		// signed in since. A sign-in already refused is not used again.
		rec, err := h.store.Load(h.def.Name, h.def.URL)
		if err != nil {
			return nil, err
		}
		if h.rec == nil || rec.SignedInNow() && rec.AccessToken.Reveal() != h.rec.AccessToken.Reveal() {
			h.failed = nil
			h.setRecordLocked(rec)
		}
	}
	if h.ts == nil {
		return nil, nil
	}
	return tokenSource{h}, nil
}

// setRecordLocked makes rec the sign-in in use.
func (h *handler) setRecordLocked(rec *Record) {
	h.rec, h.ts = rec, nil
	if !rec.SignedInNow() || rec.Resource != h.def.URL {
		return
	}
	cfg := &oauth2.Config{
		ClientID:     rec.ClientID,
		ClientSecret: rec.ClientSecret.Reveal(),
		Endpoint:     oauth2.Endpoint{AuthURL: rec.AuthURL, TokenURL: rec.TokenURL, AuthStyle: rec.authStyle()},
		Scopes:       rec.Scopes,
	}
	// The refresh outlives any one request: a background context carrying
	// the client, as go-sdk's own handler does.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	h.ts = oauth2.ReuseTokenSource(nil, cfg.TokenSource(ctx, rec.token()))
}

// tokenSource gives the current token, saving a refreshed one; a refresh the
// authorization server refuses forgets the tokens, so that the next request
// asks for a sign-in at once instead of trying again.
type tokenSource struct{ h *handler }

func (t tokenSource) Token() (*oauth2.Token, error) {
	h := t.h // the transport calls this under its own lock, not under h.mu
	h.mu.Lock()
	defer h.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if h.ts == nil {
			return nil, h.failedLocked()
		}
		before := h.rec.AccessToken.Reveal()
		tok, err := h.ts.Token()
		re, refused := errors.AsType[*oauth2.RetrieveError](err)
		switch {
		case refused && attempt == 0 && h.reloadLocked():
			continue // another codebridge refreshed (and rotated) it meanwhile
		case refused:
			return nil, h.refusedLocked(re)
		case err != nil:
			return nil, fmt.Errorf("refreshing the sign-in of %s: %w", h.def.Name, err)
		}
		if tok.AccessToken != before {
			h.rec.setToken(tok)
			if _, err := h.store.Save(h.rec); err != nil {
				h.logger.Warn("saving a refreshed token", "server", h.def.Name, "err", err)
			} else {
				h.logger.Info("refreshed the sign-in", "server", h.def.Name, "until", tok.Expiry)
			}
		}
		return tok, nil
	}
}

// reloadLocked takes the stored sign-in when it holds other tokens than
// h's, and reports whether it did.
func (h *handler) reloadLocked() bool {
	rec, err := h.store.Load(h.def.Name, h.def.URL)
	if err != nil || !rec.SignedInNow() || rec.RefreshToken.Reveal() == h.rec.RefreshToken.Reveal() && rec.AccessToken.Reveal() == h.rec.AccessToken.Reveal() {
		return false
	}
	h.setRecordLocked(rec)
	return h.ts != nil
}

// refusedLocked handles the authorization server's refusal to refresh: the
// tokens are forgotten (in the store too, unless it holds others by now), so
// that the next request asks for a sign-in at once instead of trying again.
func (h *handler) refusedLocked(re *oauth2.RetrieveError) error {
	h.logger.Warn("the authorization server refused to refresh the token: sign in again", "server", h.def.Name,
		"error", cmp.Or(re.ErrorCode, "none given"))
	h.failed = &AuthRequiredError{Server: h.def.Name, Reason: "the authorization server refused to refresh the sign-in", Err: re}
	refused := h.rec.RefreshToken.Reveal()
	h.rec.forgetTokens()
	h.ts = nil
	if rec, err := h.store.Load(h.def.Name, h.def.URL); err == nil && rec != nil && rec.RefreshToken.Reveal() == refused {
		rec.forgetTokens()
		if _, err := h.store.Save(rec); err != nil {
			h.logger.Warn("forgetting a refused sign-in", "server", h.def.Name, "err", err)
		}
	}
	return h.failed
}

// failedLocked is the error of a request made without a usable sign-in.
func (h *handler) failedLocked() error {
	switch {
	case h.failed != nil:
		return h.failed
	case h.rec != nil && h.rec.Resource != h.def.URL:
		return &AuthRequiredError{Server: h.def.Name, Reason: "the sign-in stored was made for another URL"}
	case h.rec.SignedInNow():
		return &AuthRequiredError{Server: h.def.Name, Reason: "the server refused the stored sign-in"}
	default:
		return &AuthRequiredError{Server: h.def.Name, Reason: "no sign-in is stored"}
	}
}

// Authorize is called when the server answered 401 or 403. codebridge cannot
// ask the user to sign in in the middle of a run, so it fails the request
// with an AuthRequiredError; `codebridge login` signs in. A 403 with error
// insufficient_scope (step-up authorization) adds the scopes it names to the
// stored sign-in's, which the next login asks for.
func (h *handler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if resp.StatusCode == http.StatusForbidden && h.ts != nil {
		challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if scopes := insufficientScope(challenges); len(scopes) > 0 {
			// Step-up: the next codebridge login asks for these too.
			h.wantScopesLocked(scopes)
			return &AuthRequiredError{Server: h.def.Name, Reason: "the server asks for more access: scope " + strings.Join(scopes, " ")}
		}
		return fmt.Errorf("MCP server %q refused the request (403 Forbidden) with the stored sign-in: it may need more scopes; run `codebridge login %s` to sign in again", h.def.Name, h.def.Name)
	}
	if h.ts != nil && h.failed == nil {
		// A token the server refuses (revoked, or expired early) is not
		// sent again: the next request goes without, straight to this.
		h.failed = &AuthRequiredError{Server: h.def.Name, Reason: "the server refused the stored sign-in"}
		h.ts = nil
		return h.failed
	}
	return h.failedLocked()
}

// insufficientScope is the scopes a Bearer challenge with error
// insufficient_scope names, nil when there is no such challenge.
func insufficientScope(challenges []oauthex.Challenge) []string {
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// wantScopesLocked adds scopes to the sign-in's, in the store too, so that
// the next login asks for them.
func (h *handler) wantScopesLocked(scopes []string) {
	h.rec.Scopes = unionScopes(h.rec.Scopes, scopes)
	rec, err := h.store.Load(h.def.Name, h.def.URL)
	if err != nil || rec == nil {
		return
	}
	want := unionScopes(rec.Scopes, scopes)
	if len(want) == len(rec.Scopes) {
		return // stored already
	}
	rec.Scopes = want
	if _, err := h.store.Save(rec); err != nil {
		h.logger.Warn("saving the scopes the server asks for", "server", h.def.Name, "err", err)
	}
}
