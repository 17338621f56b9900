package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/dirlock"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// TestStepUpScopesBounded: a 403 naming absurd scopes (thousands, or huge
// ones) does not grow the stored sign-in's scopes.
func TestStepUpScopesBounded(t *testing.T) {
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	store := NewStoreWith(t.TempDir(), noKeyring{})
	expiredSignIn(t, store, def, "https://as.example/token")
	for _, scope := range []string{strings.Repeat("s ", 5000), strings.Repeat("x", 1<<16)} {
		h := store.Handler(def, nil, nil)
		h.TokenSource(t.Context())
		resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{},
			Body: http.NoBody}
		resp.Header.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`"`)
		h.Authorize(t.Context(), nil, resp)
		rec, _ := store.Load(def.Name, def.URL)
		if n := len(strings.Join(rec.Scopes, " ")); n > 4096 {
			t.Fatalf("the stored scopes grew to %d bytes (%d scopes)", n, len(rec.Scopes))
		}
	}
}

// TestCallbackFlood: wrong-state requests to the redirect URI, however
// many and whenever they come, cannot push out the real redirect.
func TestCallbackFlood(t *testing.T) {
	cb := newCallback("hosted")
	authURL := "https://as.example/authorize?state=real-state"
	ask := func(ctx context.Context, _ string) error {
		for range 100 {
			cb.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/callback?state=wrong&code=x", nil))
		}
		cb.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/callback?state=real-state&code=the-code", nil))
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a guard, not a measure
	defer cancel()
	res, err := cb.fetch(ctx, authURL, LoginOptions{Ask: ask}, nil)
	if err != nil || res.Code != "the-code" {
		t.Fatalf("fetch = %+v, %v; want the real redirect's code", res, err)
	}
}

// watchedKeyring is noKeyring that calls onGet on every lookup: the first
// step of every Store.Load.
type watchedKeyring struct {
	noKeyring
	onGet func()
}

func (k watchedKeyring) Get(r secret.Ref) (secret.Value, error) {
	k.onGet()
	return k.noKeyring.Get(r)
}

// TestStepUpSavedUnderFolderLock: the scopes a 403 asks for are added to the
// stored sign-in with its load and save under the state folder's lock, so a
// refresh that another codebridge process saves in between is not written
// over with the old tokens, and with the handler's own lock free, so the
// handler's other requests do not wait on the folder.
func TestStepUpSavedUnderFolderLock(t *testing.T) {
	def := &discovery.Server{Name: "hosted", Transport: discovery.Streamable, URL: "https://h.example/mcp"}
	dir := t.TempDir()
	var watch atomic.Bool
	var h *handler
	var problems []string
	store := NewStoreWith(dir, watchedKeyring{onGet: func() {
		if !watch.Load() {
			return
		}
		other, err := dirlock.Open(Dir(dir)) // as another process would
		if err != nil {
			t.Error(err)
			return
		}
		defer other.Close()
		if ok, _ := other.TryLock(); ok {
			other.Unlock()
			problems = append(problems, "the sign-in is loaded to add scopes without the folder's lock")
		}
		if h.mu.TryLock() {
			h.mu.Unlock()
		} else {
			problems = append(problems, "the handler's lock is held while the store is read")
		}
	}})
	expiredSignIn(t, store, def, "https://as.example/token")
	h = store.Handler(def, nil, nil).(*handler)
	h.TokenSource(t.Context())
	resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: http.NoBody}
	resp.Header.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="repo admin"`)
	watch.Store(true)
	err := h.Authorize(t.Context(), nil, resp)
	watch.Store(false)
	if _, ok := errors.AsType[*AuthRequiredError](err); !ok {
		t.Errorf("Authorize = %v, want an AuthRequiredError", err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if rec, _ := store.Load(def.Name, def.URL); rec == nil || !slices.Contains(rec.Scopes, "admin") {
		t.Errorf("the stored sign-in does not ask for the step-up scopes: %+v", rec)
	}
}
