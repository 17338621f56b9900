package oauth

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoginRegistrationGuarded: a server's metadata that names a
// registration endpoint on another local host (127.0.0.2, standing for the
// Docker socket or an intranet host) gets no request there, and the
// sign-in fails.
func TestLoginRegistrationGuarded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var hits atomic.Int32
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, http.StatusBadRequest, map[string]string{"secret": "internal-service-answer"})
	}))
	other.Listener.Close()
	other.Listener = ln
	other.Start()
	t.Cleanup(other.Close)
	f := newFixture(t)
	f.as.registerAt = other.URL + "/register"
	_, err = Login(t.Context(), f.def, LoginOptions{Store: f.store, Open: f.browser.open, Timeout: 30 * time.Second})
	if err == nil || hits.Load() != 0 {
		t.Fatalf("Login = %v, with %d requests to the other local host; want it refused before any", err, hits.Load())
	}
}
