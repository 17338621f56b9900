package restapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Attach opens a connection of its own with dial and upgrades it, within
// timeout, to the raw stream of a POST to rawURL: Docker's and Podman's
// attach endpoints, which answer 101 Switching Protocols (or 200) and then
// send the stream. It returns the connection and a reader of bufSize bytes
// that reads the stream after the answer. path names the request in errors;
// an answer of another status is c's error. A client's shared transport is
// not touched.
func (c *Client) Attach(ctx context.Context, timeout time.Duration, dial func(context.Context) (net.Conn, error), rawURL, path string, bufSize int) (net.Conn, *bufio.Reader, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A request on a raw connection does not see ctx: closing the connection
	// when ctx ends unblocks it.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	br, err := c.upgrade(ctx, conn, rawURL, path, bufSize)
	if !stop() && err == nil {
		err = fmt.Errorf("attaching: %w", ctx.Err()) // the conn was closed
	}
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, br, nil
}

// upgrade sends the attach request on conn and reads the answer.
func (c *Client) upgrade(ctx context.Context, conn net.Conn, rawURL, path string, bufSize int) (*bufio.Reader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("sending attach request: %w", err)
	}
	br := bufio.NewReaderSize(conn, bufSize)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("reading attach response: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		return nil, c.AnswerError(http.MethodPost, path, resp)
	}
	return br, nil
}
