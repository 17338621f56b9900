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
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
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

// DefaultRefreshTimeout bounds a token refresh when [Store.Handler] is given
// no client, or one without a timeout.
const DefaultRefreshTimeout = 30 * time.Second

// Handler returns the [auth.OAuthHandler] of def, for
// mcp.StreamableClientTransport: it sends def's stored access token,
// refreshes it when it expires (saving the new one), and, where the server
// asks for a sign-in codebridge cannot give without the user, fails with an
// [AuthRequiredError]. It never opens a browser; `codebridge login` does.
// httpClient reaches the token endpoint; its Timeout (else
// [DefaultRefreshTimeout]) bounds each refresh. Nil means a client with
// that timeout.
func (s *Store) Handler(def *discovery.Server, httpClient *http.Client, logger *slog.Logger) auth.OAuthHandler {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultRefreshTimeout}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &handler{store: s, def: def, client: httpClient, logger: logger}
}

// handler is one server's [auth.OAuthHandler] at run time.
type handler struct {
	store   *Store
	def     *discovery.Server
	client  *http.Client
	logger  *slog.Logger
	refresh singleflight.Group // one refresh at a time in this process

	mu     sync.Mutex // protects following; never held over the network
	rec    *Record    // the sign-in; nil when there is none
	active bool       // rec's tokens are in use
	failed error      // why the last refresh failed, if it did
}

var _ auth.OAuthHandler = (*handler)(nil)

// TokenSource returns the source of def's access tokens, nil when it has no
// sign-in (the request then goes without, and a server that wants one
// answers 401, which Authorize turns into an AuthRequiredError). A token
// it refreshes for ctx's request stops being waited for when ctx ends.
func (h *handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.active {
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
	if !h.active {
		return nil, nil
	}
	return tokenSource{h, ctx}, nil
}

// AccessToken returns the access token def's requests carry now (the last
// one sent, even if the server since refused it), the zero Value when there
// is none, for masking in what the server sends back. Call it each time: a
// refresh replaces the token.
func (h *handler) AccessToken() secret.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil {
		return secret.Value{}
	}
	return h.rec.AccessToken
}

// setRecordLocked makes rec the sign-in in use.
func (h *handler) setRecordLocked(rec *Record) {
	h.rec = rec
	h.active = rec.SignedInNow() && rec.Resource == h.def.URL
}

// tokenSource gives the current token, refreshing it when it has expired.
type tokenSource struct {
	h   *handler
	ctx context.Context // the request's: waiting for a refresh ends with it
}

func (t tokenSource) Token() (*oauth2.Token, error) {
	h := t.h // the transport calls this under its own lock, not under h.mu
	h.mu.Lock()
	if !h.active {
		defer h.mu.Unlock()
		return nil, h.failedLocked()
	}
	if tok := h.rec.token(); tok.Valid() {
		h.mu.Unlock()
		return tok, nil
	}
	h.mu.Unlock()
	done := h.refresh.DoChan("", func() (any, error) { return h.refreshShared() })
	select {
	case r := <-done:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*oauth2.Token), nil
	case <-t.ctx.Done():
		return nil, fmt.Errorf("waiting for the refresh of the sign-in of %s: %w", h.def.Name, t.ctx.Err())
	}
}

// refreshShared refreshes the stored sign-in under the lock of the store's
// folder, so that codebridge processes on one state folder refresh it once
// between them: it reloads the sign-in, refreshes only if it has still
// expired (another process may have refreshed and rotated it), and saves
// the new tokens before the lock is released. The refresh has a deadline:
// the client's timeout, else [DefaultRefreshTimeout].
func (h *handler) refreshShared() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(h.client.Timeout, DefaultRefreshTimeout))
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, h.client)
	var tok *oauth2.Token
	err := h.store.locked(ctx, func() error {
		rec, err := h.store.Load(h.def.Name, h.def.URL)
		if err != nil {
			return err
		}
		if !rec.SignedInNow() || rec.Resource != h.def.URL {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.setRecordLocked(rec)
			return h.failedLocked()
		}
		if t := rec.token(); t.Valid() { // refreshed by another process
			tok = t
			h.adopt(rec)
			return nil
		}
		cfg := &oauth2.Config{
			ClientID:     rec.ClientID,
			ClientSecret: rec.ClientSecret.Reveal(),
			Endpoint:     oauth2.Endpoint{AuthURL: rec.AuthURL, TokenURL: rec.TokenURL, AuthStyle: rec.authStyle()},
			Scopes:       rec.Scopes,
		}
		t, err := cfg.TokenSource(ctx, rec.token()).Token()
		if re, refused := errors.AsType[*oauth2.RetrieveError](err); refused {
			return h.refused(rec, re)
		}
		if err != nil {
			h.logger.Warn("refreshing the sign-in failed", "server", h.def.Name, "err", err)
			return fmt.Errorf("refreshing the sign-in of %s at %s failed (%v): try again, or run `codebridge login %s`", h.def.Name, rec.TokenURL, err, h.def.Name)
		}
		rec.setToken(t)
		if _, err := h.store.save(rec); err != nil {
			h.logger.Warn("saving a refreshed token", "server", h.def.Name, "err", err)
		} else {
			h.logger.Info("refreshed the sign-in", "server", h.def.Name, "until", t.Expiry)
		}
		tok = rec.token()
		h.adopt(rec)
		return nil
	})
	return tok, err
}

// adopt makes rec, just refreshed or reloaded, the sign-in in use.
func (h *handler) adopt(rec *Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failed = nil
	h.setRecordLocked(rec)
}

// refused handles the authorization server's refusal to refresh rec, the
// stored sign-in, under the store's lock: its tokens are forgotten, here
// and in the store, so that the next request asks for a sign-in at once
// instead of trying again.
func (h *handler) refused(rec *Record, re *oauth2.RetrieveError) error {
	h.logger.Warn("the authorization server refused to refresh the token: sign in again", "server", h.def.Name,
		"error", cmp.Or(re.ErrorCode, "none given"))
	rec.forgetTokens()
	if _, err := h.store.save(rec); err != nil {
		h.logger.Warn("forgetting a refused sign-in", "server", h.def.Name, "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failed = &AuthRequiredError{Server: h.def.Name, Reason: "the authorization server refused to refresh the sign-in", Err: re}
	h.rec, h.active = rec, false
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
func (h *handler) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	h.mu.Lock()
	err, stepUp := h.authorizeLocked(resp)
	h.mu.Unlock()
	if len(stepUp) > 0 {
		// Stored outside h.mu: the folder's lock may be another process's.
		h.storeScopes(ctx, stepUp)
	}
	return err
}

// authorizeLocked is Authorize's answer to resp under h.mu, and the scopes
// of a step-up to add to the stored sign-in.
func (h *handler) authorizeLocked(resp *http.Response) (err error, stepUp []string) {
	if resp.StatusCode == http.StatusForbidden && h.active {
		challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		scopes, err := insufficientScope(challenges)
		if err == nil && len(unionScopes(h.rec.Scopes, scopes)) > maxStepUpScopes {
			err = fmt.Errorf("%d scopes in all (at most %d)", len(unionScopes(h.rec.Scopes, scopes)), maxStepUpScopes)
		}
		if err != nil {
			h.logger.Warn("the server's 403 asks for absurd scopes: ignored", "server", h.def.Name, "err", err)
			return fmt.Errorf("MCP server %q refused the request (403 Forbidden) and asked for more access than codebridge accepts: check the server, then run `codebridge login %s`", h.def.Name, h.def.Name), nil
		}
		if len(scopes) > 0 {
			// Step-up: the next codebridge login asks for these too.
			h.rec.Scopes = unionScopes(h.rec.Scopes, scopes)
			return &AuthRequiredError{Server: h.def.Name, Reason: "the server asks for more access: scope " + strings.Join(scopes, " ")}, scopes
		}
		return fmt.Errorf("MCP server %q refused the request (403 Forbidden) with the stored sign-in: it may need more scopes; run `codebridge login %s` to sign in again", h.def.Name, h.def.Name), nil
	}
	if h.active && h.failed == nil {
		// A token the server refuses (revoked, or expired early) is not
		// sent again: the next request goes without, straight to this.
		h.failed = &AuthRequiredError{Server: h.def.Name, Reason: "the server refused the stored sign-in"}
		h.active = false
		return h.failed, nil
	}
	return h.failedLocked(), nil
}

// Bounds on the scopes a server's 403 may add to a sign-in (step-up): more,
// or longer, are refused as absurd.
const (
	maxStepUpScopes = 32  // in one challenge, and in the sign-in's total
	maxScopeLen     = 256 // bytes of one scope
)

// insufficientScope is the scopes a Bearer challenge with error
// insufficient_scope names, nil when there is no such challenge; absurd
// ones (see maxStepUpScopes) are an error.
func insufficientScope(challenges []oauthex.Challenge) ([]string, error) {
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			scopes := strings.Fields(c.Params["scope"])
			if len(scopes) > maxStepUpScopes {
				return nil, fmt.Errorf("%d scopes (at most %d)", len(scopes), maxStepUpScopes)
			}
			for _, sc := range scopes {
				if len(sc) > maxScopeLen {
					return nil, fmt.Errorf("a scope of %d bytes (at most %d)", len(sc), maxScopeLen)
				}
			}
			return scopes, nil
		}
	}
	return nil, nil
}

// storeScopes adds scopes to the stored sign-in's, so that the next login
// asks for them: loaded and saved under the folder's lock, so that tokens
// another process refreshed in between are not written over.
func (h *handler) storeScopes(ctx context.Context, scopes []string) {
	err := h.store.locked(ctx, func() error {
		rec, err := h.store.Load(h.def.Name, h.def.URL)
		if err != nil || rec == nil {
			return err
		}
		want := unionScopes(rec.Scopes, scopes)
		if len(want) == len(rec.Scopes) {
			return nil // stored already
		}
		rec.Scopes = want
		_, err = h.store.save(rec)
		return err
	})
	if err != nil {
		h.logger.Warn("saving the scopes the server asks for", "server", h.def.Name, "err", err)
	}
}
