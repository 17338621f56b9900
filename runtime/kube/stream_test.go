package kube

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// fakeStreamServer answers exec and attach as an API server does over
// WebSocket: serve gets the accepted connection; a nil serve refuses the
// upgrade as an API server without WebSocket streaming would.
func fakeStreamServer(t *testing.T, protocols []string, serve func(c *websocket.Conn)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","status":"Failure","message":"pods \"p\" is forbidden: User \"x\" cannot create resource \"pods/exec\"","reason":"Forbidden","code":403}`)
			return
		}
		if serve == nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"kind":"Status","status":"Failure","message":"Upgrade request required","reason":"BadRequest","code":400}`)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: protocols})
		if err != nil {
			t.Error(err)
			return
		}
		serve(c)
	}))
	t.Cleanup(srv.Close)
	return NewClient(&Config{Server: srv.URL, TLS: nil, Token: func() (string, error) { return "tok", nil }, Source: "test"})
}

// TestStreamChannels checks the channel protocol: stdin out in messages of
// channel 0, stdout and stderr in, and the exit status of the error channel.
func TestStreamChannels(t *testing.T) {
	c := fakeStreamServer(t, []string{protocolV5}, func(c *websocket.Conn) {
		ctx := context.Background()
		_, msg, err := c.Read(ctx)
		if err != nil || msg[0] != chanStdin {
			t.Errorf("stdin message %q, %v", msg, err)
			return
		}
		c.Write(ctx, websocket.MessageBinary, nil) // an empty message: ignored
		c.Write(ctx, websocket.MessageBinary, append([]byte{chanStdout}, strings.ToUpper(string(msg[1:]))...))
		c.Write(ctx, websocket.MessageBinary, append([]byte{chanStderr}, "warning"...))
		c.Write(ctx, websocket.MessageBinary, append([]byte{chanError}, `{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}`...))
		c.Close(websocket.StatusNormalClosure, "")
	})
	s, err := c.openStream(t.Context(), "ns", "p", []string{"relay"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(s)
	if err != nil || string(out) != "HELLO" {
		t.Errorf("stdout %q, %v", out, err)
	}
	<-s.Done()
	if s.stderr.String() != "warning" {
		t.Errorf("stderr %q", s.stderr.String())
	}
	if code, ok := s.Status().exitCode(); !ok || code != 3 {
		t.Errorf("exit code %d, %v; want 3", code, ok)
	}
}

// TestStreamRefused checks the errors of a stream the API server refuses:
// its own Status message, and a clear one where WebSocket is not served.
func TestStreamRefused(t *testing.T) {
	c := fakeStreamServer(t, nil, nil)
	_, err := c.openStream(t.Context(), "ns", "p", nil)
	if !errors.Is(err, ErrNoWebSocket) || !strings.Contains(err.Error(), "SPDY") {
		t.Errorf("no WebSocket: %v", err)
	}
	c.cfg.Token = func() (string, error) { return "wrong", nil }
	_, err = c.openStream(t.Context(), "ns", "p", nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusForbidden || !strings.Contains(err.Error(), `cannot create resource "pods/exec"`) {
		t.Errorf("forbidden: %v", err)
	}
}

// TestStreamCloseUnblocks checks that closing a stream ends a Read that
// waits.
func TestStreamCloseUnblocks(t *testing.T) {
	hold := make(chan struct{})
	c := fakeStreamServer(t, []string{protocolV4}, func(c *websocket.Conn) {
		c.CloseRead(context.Background())
		<-hold
	})
	defer close(hold)
	s, err := c.openStream(t.Context(), "ns", "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CloseWrite(); err == nil {
		t.Error("v4 closed stdin alone; it cannot")
	}
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 1))
		read <- err
	}()
	s.Close()
	if err := <-read; err == nil {
		t.Error("a read after Close returned no error")
	}
}
