package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// rotatingAS is a token endpoint that rotates refresh tokens with reuse
// detection, as Auth0 and Okta do: a refresh token works once; using one
// again revokes the whole family, so that every later refresh is refused.
type rotatingAS struct {
	srv *httptest.Server

	mu        sync.Mutex // protects following
	current   string     // the refresh token that works
	used      map[string]bool
	revoked   bool
	refreshes int
	n         int
}

func newRotatingAS(t *testing.T) *rotatingAS {
	a := &rotatingAS{current: "rt-0", used: map[string]bool{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.refreshes++
		rt := r.PostForm.Get("refresh_token")
		if a.used[rt] {
			a.revoked = true // reuse: the family is compromised
		}
		if a.revoked || rt != a.current {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		a.used[rt] = true
		a.n++
		a.current = "rt-" + string(rune('0'+a.n))
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "at-" + string(rune('0'+a.n)), "refresh_token": a.current,
			"token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *rotatingAS) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refreshes
}

// expiredSignIn stores, in a store over state, a sign-in to def whose
// access token has expired and whose refresh token is rt-0.
func expiredSignIn(t *testing.T, store *Store, def *discovery.Server, tokenURL string) {
	t.Helper()
	rec := &Record{Server: def.Name, Resource: def.URL, Issuer: "https://as.example", TokenURL: tokenURL, ClientID: "c",
		TokenAuth: "none", AccessToken: secret.New("at-0"), RefreshToken: secret.New("rt-0"), TokenType: "Bearer",
		Expiry: time.Now().Add(-time.Hour)}
	if _, err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshAcrossProcesses: two codebridge processes (two Stores over one
// state folder, each with its own handler) that both hold an expired sign-in
// refresh it once between them: the second, under the folder's lock, reloads
// the first's refreshed token instead of reusing the rotated refresh token,
// which a server with reuse detection answers by revoking the sign-in.
func TestRefreshAcrossProcesses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		keyring func() Keyring
	}{
		{"file", func() Keyring { return noKeyring{} }},
		{"keyring", func() Keyring { k := newFakeKeyring(); return k }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := newRotatingAS(t)
			state := t.TempDir()
			def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
			kr := tt.keyring() // one OS keyring, seen by both processes
			one, two := NewStoreWith(state, kr), NewStoreWith(state, kr)
			expiredSignIn(t, one, def, as.srv.URL)
			first, second := one.Handler(def, as.srv.Client(), nil), two.Handler(def, as.srv.Client(), nil)
			// Both processes have read the expired sign-in.
			first.TokenSource(t.Context())
			second.TokenSource(t.Context())
			a, err := accessToken(t, first)
			if err != nil {
				t.Fatalf("first process's refresh: %v", err)
			}
			b, err := accessToken(t, second)
			if err != nil {
				t.Fatalf("second process: %v (after %d refreshes); want the first's refreshed token", err, as.count())
			}
			as.mu.Lock()
			revoked := as.revoked
			as.mu.Unlock()
			if a != b || as.count() != 1 || revoked {
				t.Errorf("tokens %q and %q after %d refreshes (sign-in revoked for reuse: %v); want one refresh and the same token", a, b, as.count(), revoked)
			}
		})
	}
}

// TestRefreshConcurrent: handlers of two stores over one folder refreshing
// at the same moment refresh once.
func TestRefreshConcurrent(t *testing.T) {
	as := newRotatingAS(t)
	state := t.TempDir()
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	one, two := NewStoreWith(state, noKeyring{}), NewStoreWith(state, noKeyring{})
	expiredSignIn(t, one, def, as.srv.URL)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		s := one
		if i%2 == 1 {
			s = two
		}
		h := s.Handler(def, as.srv.Client(), nil)
		wg.Go(func() { _, errs[i] = accessToken(t, h) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || as.count() != 1 {
		t.Errorf("%d refreshes, errors %v; want one refresh and no error", as.count(), err)
	}
}

// hangingAS is a token endpoint that accepts requests and never answers
// (until the test ends); started receives each request as it arrives.
func hangingAS(t *testing.T) (url string, started <-chan struct{}) {
	ch := make(chan struct{}, 16)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch <- struct{}{}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv.URL, ch
}

// TestRefreshDeadline: a refresh whose token endpoint never answers fails
// once the client's timeout has passed, instead of hanging.
func TestRefreshDeadline(t *testing.T) {
	tokenURL, _ := hangingAS(t)
	state := t.TempDir()
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	store := NewStoreWith(state, noKeyring{})
	expiredSignIn(t, store, def, tokenURL)
	h := store.Handler(def, &http.Client{Timeout: 50 * time.Millisecond}, nil)
	if _, err := accessToken(t, h); err == nil {
		t.Fatal("the refresh from an endpoint that never answers succeeded")
	}
}

// TestHandlerDefaultClientTimeout: a handler made without a client (as the
// pool's were) refreshes with a client that has a timeout, not
// http.DefaultClient, which has none.
func TestHandlerDefaultClientTimeout(t *testing.T) {
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	h := NewStoreWith(t.TempDir(), noKeyring{}).Handler(def, nil, nil).(*handler)
	if h.client == http.DefaultClient || h.client.Timeout == 0 {
		t.Errorf("the refresh client has no timeout (http.DefaultClient: %v)", h.client == http.DefaultClient)
	}
}

// TestRefreshHangDoesNotBlock: while one refresh waits on a token endpoint
// that never answers, the handler's other requests are not held behind it:
// TokenSource and Authorize return, and a request whose context ends stops
// waiting for the refresh.
func TestRefreshHangDoesNotBlock(t *testing.T) {
	tokenURL, started := hangingAS(t)
	state := t.TempDir()
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	store := NewStoreWith(state, noKeyring{})
	expiredSignIn(t, store, def, tokenURL)
	h := store.Handler(def, &http.Client{Timeout: time.Hour}, nil)
	ts, err := h.TokenSource(t.Context())
	if err != nil || ts == nil {
		t.Fatalf("TokenSource = %v, %v", ts, err)
	}
	firstDone := make(chan error, 1)
	go func() { _, err := ts.Token(); firstDone <- err }()
	<-started // the first refresh is waiting on the endpoint

	ctx, cancel := context.WithCancel(t.Context())
	secondDone := make(chan error, 1)
	go func() {
		ts, err := h.TokenSource(ctx)
		if err == nil && ts != nil {
			_, err = ts.Token()
		}
		secondDone <- err
	}()
	cancel()
	select {
	case err := <-secondDone:
		if err == nil {
			t.Error("the second request got a token while the refresh hangs")
		}
	case <-time.After(10 * time.Second): // a guard against the hang, not a measure
		t.Fatal("a second request with its context ended is held behind the hanging refresh")
	}
	select {
	case err := <-firstDone:
		t.Fatalf("the first refresh returned %v while its endpoint hangs", err)
	default:
	}
}

// TestHandlerAccessToken: the handler tells the access token its requests
// carry, read anew each time: none before it has read the sign-in, the
// stored one, then the one a refresh gave.
func TestHandlerAccessToken(t *testing.T) {
	as := newRotatingAS(t)
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	store := NewStoreWith(t.TempDir(), noKeyring{})
	expiredSignIn(t, store, def, as.srv.URL)
	h := store.Handler(def, as.srv.Client(), nil).(*handler)
	if got := h.AccessToken().Reveal(); got != "" {
		t.Errorf("AccessToken before any request = %q, want none", got)
	}
	h.TokenSource(t.Context())
	if got := h.AccessToken().Reveal(); got != "at-0" {
		t.Errorf("AccessToken of the stored sign-in = %q, want at-0", got)
	}
	if _, err := accessToken(t, h); err != nil {
		t.Fatal(err)
	}
	if got := h.AccessToken().Reveal(); got != "at-1" {
		t.Errorf("AccessToken after a refresh = %q, want at-1", got)
	}
}
