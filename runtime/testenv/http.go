package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// HugeAnswers serves h (an MCP streamable-HTTP handler), except that a call of the tool "huge" is answered
// with a JSON body of size bytes, written as it goes (never held whole);
// written counts the bytes the client took.
func HugeAnswers(h http.Handler, size int64, written *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &req) != nil || req.Method != "tools/call" || req.Params.Name != "huge" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
		n, _ := io.WriteString(w, head)
		written.Add(int64(n))
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for left := size - int64(n); left > 0; left -= int64(len(chunk)) {
			n, err := w.Write(chunk[:min(int64(len(chunk)), left)])
			written.Add(int64(n))
			if err != nil {
				return // the client stopped reading
			}
		}
	})
}

// ServeOn serves h on addr (host:0, e.g. a second loopback host such as
// 127.0.0.2:0) until the test ends.
func ServeOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
