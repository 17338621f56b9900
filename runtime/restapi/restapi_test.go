package restapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

type testError struct {
	Method, Path string
	A            ErrorAnswer
}

func (e *testError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.A.Code, e.A.Message)
}

// client is a Client of srv that sends as a driver would.
func client(srv *httptest.Server) *Client {
	return &Client{
		Engine: "test",
		Send: func(ctx context.Context, method, path string, q url.Values, body io.Reader, header http.Header) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, method, srv.URL+path+"?"+q.Encode(), body)
			if err != nil {
				return nil, err
			}
			req.Header = header
			return srv.Client().Do(req)
		},
		StatusError: func(method, path string, a ErrorAnswer) error { return &testError{method, path, a} },
		ReaderType:  "application/x-tar",
	}
}

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			fmt.Fprintf(w, `{"type":%q,"body":%q,"q":%q}`, r.Header.Get("Content-Type"), body, r.URL.Query().Get("q"))
		case "/json-error":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"no such thing","reason":"NotFound"}`)
		case "/text-error":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, "  in use\n")
		case "/not-json":
			fmt.Fprint(w, "{")
		}
	}))
	defer srv.Close()
	c := client(srv)
	ctx := t.Context()

	type echo struct{ Type, Body, Q string }
	tests := []struct {
		name string
		body any
		want echo
	}{
		{"none", nil, echo{"", "", "v"}},
		{"json", map[string]int{"a": 1}, echo{"application/json", `{"a":1}`, "v"}},
		{"reader", strings.NewReader("raw"), echo{"application/x-tar", "raw", "v"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got echo
			if err := c.Do(ctx, time.Minute, http.MethodPost, "/echo", url.Values{"q": {"v"}}, tt.body, &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("server saw %+v, want %+v", got, tt.want)
			}
		})
	}

	if err := c.Do(ctx, time.Minute, http.MethodGet, "/echo", nil, nil, nil); err != nil {
		t.Errorf("discarding the answer: %v", err)
	}

	var te *testError
	err := c.Do(ctx, time.Minute, http.MethodGet, "/json-error", nil, nil, nil)
	if !errors.As(err, &te) || te.Method != http.MethodGet || te.Path != "/json-error" ||
		te.A != (ErrorAnswer{Code: 404, Message: "no such thing", Reason: "NotFound"}) {
		t.Errorf("JSON error answer: %#v", err)
	}
	err = c.Do(ctx, time.Minute, http.MethodDelete, "/text-error", nil, nil, nil)
	if !errors.As(err, &te) || te.A != (ErrorAnswer{Code: 409, Message: "in use"}) {
		t.Errorf("text error answer: %#v", err)
	}

	c.StatusError = nil // the default error
	err = c.Do(ctx, time.Minute, http.MethodGet, "/json-error", nil, nil, nil)
	if !IsStatus(err, http.StatusNotFound) || IsStatus(err, http.StatusConflict) || err.Error() != "test GET /json-error: no such thing (HTTP 404)" {
		t.Errorf("default error: %v", err)
	}

	var out struct{}
	err = c.Do(ctx, time.Minute, http.MethodGet, "/not-json", nil, nil, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "test GET /not-json: decoding answer: ") {
		t.Errorf("undecodable answer: %v", err)
	}
	err = c.Do(ctx, time.Minute, http.MethodPost, "/echo", nil, func() {}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test POST /echo: encoding request: ") {
		t.Errorf("unencodable body: %v", err)
	}
}

func TestSendError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens
	c := client(srv)

	err := c.Do(t.Context(), time.Minute, http.MethodGet, "/x", nil, nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test GET /x: ") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("unreachable: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = c.Do(ctx, time.Minute, http.MethodGet, "/x", nil, nil, nil)
	if !errors.Is(err, context.Canceled) || err.Error() != "test GET /x: context canceled" {
		t.Errorf("ended context: %v", err)
	}

	c.SendError = func(_ context.Context, method, path string, err error) error {
		return fmt.Errorf("worded by the driver: %w", err)
	}
	err = c.Do(t.Context(), time.Minute, http.MethodGet, "/x", nil, nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "worded by the driver: ") {
		t.Errorf("driver's SendError: %v", err)
	}
}
