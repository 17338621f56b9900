package restapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestAttach(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Upgrade") != "tcp" || r.URL.Path != "/attach" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"no such container"}`)
			return
		}
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\nstream\n")
		buf.Flush()
	}))
	defer srv.Close()
	c := client(srv)
	c.StatusError = nil
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}

	conn, br, err := c.Attach(t.Context(), time.Minute, dial, srv.URL+"/attach", "/attach", 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if line, err := br.ReadString('\n'); line != "stream\n" {
		t.Errorf("read %q, %v after the answer; want the stream", line, err)
	}

	_, _, err = c.Attach(t.Context(), time.Minute, dial, srv.URL+"/gone", "/gone", 4<<10)
	if !IsStatus(err, http.StatusNotFound) || err.Error() != "test POST /gone: no such container (HTTP 404)" {
		t.Errorf("attaching to what is not there: %v", err)
	}
}

// TestAttachEnds checks that an attach whose answer does not come ends with
// its context.
func TestAttachEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		if _, err := http.ReadRequest(br); err != nil {
			t.Error(err)
		}
		cancel()         // the request came: it is never answered
		br.ReadString(0) // returns when the client closes
	}()
	c := &Client{Engine: "test"}
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
	_, _, err = c.Attach(ctx, time.Minute, dial, "http://"+ln.Addr().String()+"/attach", "/attach", 4<<10)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("attach with its context ended: %v", err)
	}
	<-served // the connection was closed
}
