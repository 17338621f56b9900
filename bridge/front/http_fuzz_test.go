package front

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// loopbackLiteral reports whether host, with or without brackets, is
// localhost in any case or an IP literal net/netip parses as loopback (an
// IPv4-mapped one included; a zone is not loopback).
func loopbackLiteral(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}

// FuzzLocalHost checks the Host and Origin headers a loopback listener
// accepts. A host accepted is localhost (any case, no trailing dot) or a
// loopback literal, and every such literal is accepted; a Host header is
// accepted only with the listener's port (80 when it names none); an Origin
// is accepted only over http or https, and only for a loopback host or one
// of the allowed origins exactly.
func FuzzLocalHost(f *testing.F) {
	for _, h := range []string{
		"localhost:8080", "LOCALHOST:8080", "localhost.:8080", "LOCALHOST.", "127.0.0.1:8080", "127.1.2.3:8080",
		"[::1]:8080", "[::1%25eth0]:8080", "[::1%eth0]:8080", "::1", "[::1]", "[::1", "::ffff:127.0.0.1",
		"[::ffff:7f00:1]:8080", "0x7f.0.0.1:8080", "2130706433:8080", "127.0.0.1.:8080", "xn--localhost-:8080",
		"ⅼocalhost:8080", "localhost:08080", "localhost:", ":8080", "evil.com:8080", "127.0.0.1.evil.com:8080",
	} {
		f.Add(h, "http://"+h)
	}
	f.Add("localhost", "https://user@localhost:1")
	f.Add("localhost", "http://evil.com@localhost")
	f.Add("localhost", "http://localhost@evil.com")
	f.Add("localhost", "HTTPS://Allowed.Example")
	f.Add("localhost", "null")
	f.Add("localhost", "file://localhost")
	f.Fuzz(func(t *testing.T, host, origin string) {
		if got, want := isLoopbackHost(host), loopbackLiteral(host); got != want {
			t.Fatalf("isLoopbackHost(%q) = %v; per net/netip it is %v", host, got, want)
		}
		for _, port := range []string{"8080", "80"} {
			fr := &Front{port: port}
			if !fr.localHost(host) {
				continue
			}
			h, p, err := net.SplitHostPort(host)
			if err != nil {
				h, p = host, "80"
			}
			if p != port || !loopbackLiteral(h) {
				t.Fatalf("localHost(%q) on port %s accepted host %q port %q", host, port, h, p)
			}
		}

		allowed := "https://allowed.example"
		fr := &Front{opts: Options{Origins: []string{allowed}}}
		if !fr.allowedOrigin(origin) {
			return
		}
		u, err := url.Parse(origin)
		if err != nil {
			t.Fatalf("allowedOrigin(%q) accepted what url.Parse refuses: %v", origin, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("allowedOrigin(%q) accepted the scheme %q", origin, u.Scheme)
		}
		if !loopbackLiteral(u.Hostname()) && strings.ToLower(u.Scheme+"://"+u.Host) != allowed {
			t.Fatalf("allowedOrigin(%q) accepted host %q, neither loopback nor %s", origin, u.Host, allowed)
		}
	})
}

// FuzzWriteRPCError answers arbitrary request bodies with an error. The
// answer is always one JSON-RPC 2.0 error response: jsonrpc "2.0", the
// message given, and an id that is the request's own when it is a string or
// a number, else null (JSON-RPC allows no other id).
func FuzzWriteRPCError(f *testing.F) {
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"id":"a\u0000b"}`, `{"id":null}`, `{"id":{"a":1}}`,
		`{"id":[1,2]}`, `{"id":true}`, `{"id":1e999}`, `{"id":-0.5}`, `[{"id":1}]`, `{"id":1,"id":2}`,
		`{"id":"x"} trailing`, ``, `nul`, "{\"id\":\"\xff\"}",
	} {
		f.Add([]byte(b), "Unauthorized")
	}
	f.Add([]byte(`{"id":7}`), "message with \"quotes\" and \xff")
	f.Fuzz(func(t *testing.T, body []byte, msg string) {
		w := httptest.NewRecorder()
		writeRPCError(w, httptest.NewRequest("POST", "/mcp", bytes.NewReader(body)), 401, msg)
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    *int   `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
		if err := dec.Decode(&resp); err != nil || dec.More() {
			t.Fatalf("body %q: the answer %q is not one JSON object: %v", body, w.Body.Bytes(), err)
		}
		if resp.JSONRPC != "2.0" || resp.Error == nil || resp.Error.Code == nil {
			t.Fatalf("body %q: the answer %s is not a JSON-RPC 2.0 error", body, w.Body.Bytes())
		}
		var want string // msg as JSON carries it: each invalid byte replaced
		quoted, _ := json.Marshal(msg)
		json.Unmarshal(quoted, &want)
		if resp.Error.Message != want {
			t.Fatalf("message %q came back as %q", want, resp.Error.Message)
		}
		var id any
		idDec := json.NewDecoder(bytes.NewReader(resp.ID))
		idDec.UseNumber()
		if err := idDec.Decode(&id); err != nil {
			t.Fatalf("body %q: the id %s is not JSON: %v", body, resp.ID, err)
		}
		switch id.(type) {
		case nil, string, json.Number:
		default:
			t.Fatalf("body %q: the answer's id %s is neither a string, a number nor null", body, resp.ID)
		}
	})
}
