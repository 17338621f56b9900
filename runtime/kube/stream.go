package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// The streaming subprotocols of exec and attach over WebSocket, newest
// first. Each binary message starts with its channel's number: 0 stdin,
// 1 stdout, 2 stderr, 3 the error channel (a Status when the command ends);
// v5 adds 255, which closes a channel (stdin) while the others stay open.
const (
	protocolV5 = "v5.channel.k8s.io"
	protocolV4 = "v4.channel.k8s.io"
)

const (
	chanStdin  = 0
	chanStdout = 1
	chanStderr = 2
	chanError  = 3
	chanClose  = 255
)

// Bounds of a stream: the largest message read (the API server sends a
// command's output in messages of at most 32 KiB) and written (a write is
// split into messages of this size), and the stderr kept.
const (
	readLimit = 16 << 20
	writeMax  = 64 << 10
	stderrCap = 64 << 10
)

// stream is one exec or attach of a pod's container over the API server's
// WebSocket: the container's stdin (Write) and stdout (Read), its stderr kept
// for diagnostics, and the command's end status. Closing it unblocks every
// Read and Write; the command's stdin then ends.
type stream struct {
	conn   *websocket.Conn
	proto  string
	stdout *io.PipeReader
	stderr *confine.CapBuffer
	done   chan struct{} // closed when the output has ended

	wmu sync.Mutex // serializes writes, so that a message is never split

	mu     sync.Mutex // protects following
	status *streamStatus
	closed bool
}

// streamStatus is the error channel's Status: how the command ended.
type streamStatus struct {
	Status  string `json:"status"` // Success or Failure
	Message string `json:"message"`
	Reason  string `json:"reason"` // NonZeroExitCode, InternalError, ...
	Details struct {
		Causes []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

// exitCode is the command's exit code, if the status says it.
func (s *streamStatus) exitCode() (int, bool) {
	if s.Status == "Success" {
		return 0, true
	}
	for _, c := range s.Details.Causes {
		if c.Reason == "ExitCode" {
			n, err := strconv.Atoi(c.Message)
			return n, err == nil
		}
	}
	return 0, false
}

// ErrNoWebSocket is why a stream could not be opened: the API server (or a
// proxy in front of it) does not upgrade exec and attach to WebSocket.
var ErrNoWebSocket = errors.New("the Kubernetes API server does not stream exec or attach over WebSocket (channel.k8s.io); codebridge does not speak SPDY: use Kubernetes 1.30 or newer, or a proxy that passes WebSocket upgrades through")

// openStream opens the pod's exec (with command) or attach (command nil)
// over WebSocket.
func (c *Client) openStream(ctx context.Context, namespace, pod string, command []string) (*stream, error) {
	kind := "attach"
	q := url.Values{"container": {containerName}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}}
	if command != nil {
		kind = "exec"
		q["command"] = command
	}
	path := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/pods/" + url.PathEscape(pod) + "/" + kind
	h := http.Header{}
	if err := c.authorize(h); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, c.cfg.Server+path+"?"+q.Encode(), &websocket.DialOptions{
		HTTPClient:   c.ws,
		HTTPHeader:   h,
		Subprotocols: []string{protocolV5, protocolV4},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			se := statusError(http.MethodGet, path, restapi.ReadError(resp)).(*StatusError)
			if se.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(se.Message), "upgrade") {
				return nil, fmt.Errorf("%w (%v)", ErrNoWebSocket, se)
			}
			return nil, se
		}
		if ctx.Err() == nil && resp == nil {
			return nil, c.unreachable(err)
		}
		return nil, fmt.Errorf("kubernetes %s of pod %s: %w", kind, pod, err)
	}
	if p := conn.Subprotocol(); p != protocolV5 && p != protocolV4 {
		conn.CloseNow()
		return nil, fmt.Errorf("%w (it chose subprotocol %q)", ErrNoWebSocket, p)
	}
	conn.SetReadLimit(readLimit)
	pr, pw := io.Pipe()
	s := &stream{
		conn:   conn,
		proto:  conn.Subprotocol(),
		stdout: pr,
		stderr: &confine.CapBuffer{Max: stderrCap},
		done:   make(chan struct{}),
	}
	go s.pump(pw)
	return s, nil
}

// pump reads the messages and passes each channel's data on, stdout through
// a pipe (back-pressure, never buffered whole), until the stream ends.
func (s *stream) pump(stdout *io.PipeWriter) {
	defer close(s.done)
	ctx := context.Background() // Close unblocks the read
	var status bytes.Buffer
	for {
		typ, r, err := s.conn.Reader(ctx)
		if err != nil {
			s.finish(stdout, status.Bytes(), err)
			return
		}
		if typ != websocket.MessageBinary {
			io.Copy(io.Discard, r)
			continue
		}
		var ch [1]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			continue // an empty message: channels are opened so
		}
		switch ch[0] {
		case chanStdout:
			if _, err := io.Copy(stdout, r); err != nil {
				// Nobody reads stdout any more (closed): drain the rest.
				io.Copy(io.Discard, r)
			}
		case chanStderr:
			io.Copy(s.stderr, r)
		case chanError:
			io.Copy(&status, io.LimitReader(r, 64<<10))
		default:
			io.Copy(io.Discard, r)
		}
	}
}

// finish records how the stream ended and ends stdout.
func (s *stream) finish(stdout *io.PipeWriter, status []byte, err error) {
	s.mu.Lock()
	closed := s.closed
	if len(status) > 0 {
		var st streamStatus
		if json.Unmarshal(status, &st) == nil {
			s.status = &st
		}
	}
	st := s.status
	s.mu.Unlock()
	switch {
	case closed, websocket.CloseStatus(err) == websocket.StatusNormalClosure:
		stdout.Close()
	case st != nil && st.Status == "Failure" && st.Reason != "NonZeroExitCode":
		stdout.CloseWithError(fmt.Errorf("kubernetes stream: %s", st.Message))
	default:
		var ce websocket.CloseError
		if errors.As(err, &ce) || errors.Is(err, io.EOF) {
			stdout.Close() // the server ended the stream
			return
		}
		stdout.CloseWithError(fmt.Errorf("kubernetes stream: %w", err))
	}
}

// Read reads the container's stdout.
func (s *stream) Read(p []byte) (int, error) { return s.stdout.Read(p) }

// Write writes to the container's stdin, in messages of at most writeMax.
func (s *stream) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	buf := make([]byte, 1+min(len(p), writeMax))
	buf[0] = chanStdin
	for len(p) > 0 {
		k := copy(buf[1:], p)
		if err := s.conn.Write(context.Background(), websocket.MessageBinary, buf[:1+k]); err != nil {
			return n, fmt.Errorf("kubernetes stream: %w", err)
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

// CloseWrite ends the command's stdin while its output can still be read;
// only v5 can, else it is an error.
func (s *stream) CloseWrite() error {
	if s.proto != protocolV5 {
		return fmt.Errorf("kubernetes stream: %s cannot close stdin alone", s.proto)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.conn.Write(context.Background(), websocket.MessageBinary, []byte{chanClose, chanStdin})
}

// Close ends the stream: every Read and Write returns, and the command's
// stdin ends.
func (s *stream) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return nil
	}
	s.stdout.Close()
	return s.conn.CloseNow()
}

// Done is closed when the output has ended.
func (s *stream) Done() <-chan struct{} { return s.done }

// Status is how the command ended, once Done is closed; nil when the
// stream ended without saying (attach, or a lost connection).
func (s *stream) Status() *streamStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}
