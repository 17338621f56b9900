package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/discovery"
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
