// Package stdio is MCP's stdio transport: JSON-RPC messages, one per line,
// over a pair of byte streams (a server's stdin and stdout, or codebridge's
// own). It does what go-sdk's IOTransport does, but a message is read and
// decoded in the goroutine that asks for it (go-sdk's connection loop),
// not read by a goroutine of its own and handed over, and decoded with the
// standard library's JSON once: on the path of every tool call that saves a
// goroutine hand-off (a thread woken on a machine with idle cores) and the
// 64 KiB of buffers that go-sdk's decoding allocates for each message.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/codebridge-mcp/codebridge/runtime/rawio"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessage bounds one incoming message when Options.MaxMessage is
// 0: go-sdk's default for its stdio transports.
const DefaultMaxMessage = mcp.DefaultMaxLineLength

// ErrTooLarge: an incoming message is longer than the connection accepts.
// The connection cannot be read further.
var ErrTooLarge = errors.New("incoming JSON-RPC message exceeds the size limit")

// Conn is an [mcp.Connection] over r and w. Read must not be called
// concurrently with itself (go-sdk reads from one goroutine); Write may be.
// A batch (a JSON array of messages, which MCP allowed in 2025-03-26 only)
// is read as its messages one by one, and requests in it are answered one
// by one.
type Conn struct {
	r     *bufio.Reader
	max   int
	close func() error

	queue []jsonrpc.Message // the rest of a batch; touched by Read only
	line  []byte            // a line longer than r's buffer; touched by Read only

	wmu sync.Mutex // protects following
	w   io.Writer

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// NewConn returns a connection that reads messages from r and writes them to
// w. max bounds one incoming message (0 means [DefaultMaxMessage], negative
// no bound). A pipe or socket in non-blocking mode (those of os/exec are)
// is read and written with raw system calls (package rawio). Close calls
// close, which must unblock a Read in progress: close the file r reads, or
// end what writes to it.
func NewConn(r io.Reader, w io.Writer, max int, close func() error) *Conn {
	if max == 0 {
		max = DefaultMaxMessage
	}
	r, w = rawio.Reader(r), rawio.Writer(w)
	return &Conn{r: bufio.NewReaderSize(r, 16<<10), w: w, max: max, close: close, closed: make(chan struct{})}
}

// Transport is an [mcp.Transport] over a pair of streams, as go-sdk's
// IOTransport, whose connection is a [Conn]: what codebridge serves its
// own client on. Connect may be called once. A message is bounded by
// [DefaultMaxMessage].
type Transport struct {
	Reader io.ReadCloser // closed by the connection's Close
	Writer io.Writer
}

// Connect implements [mcp.Transport].
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	return NewConn(t.Reader, t.Writer, 0, t.Reader.Close), nil
}

// SessionID implements [mcp.Connection]: stdio has no session IDs.
func (c *Conn) SessionID() string { return "" }

// Read implements [mcp.Connection]: it returns the next message, or io.EOF
// once the stream has ended or the connection was closed.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF // the file was closed under the read
			default:
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '[' {
			return decode(line)
		}
		msgs, err := decodeBatch(line)
		if err != nil {
			return nil, err
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine returns the next line without its newline, or the last one
// without a newline at the end of the stream. The slice is valid until the
// next call.
func (c *Conn) readLine() ([]byte, error) {
	c.line = c.line[:0]
	for {
		b, err := c.r.ReadSlice('\n')
		if c.max > 0 && len(c.line)+len(b) > c.max+1 {
			return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, c.max)
		}
		switch {
		case err == nil && len(c.line) == 0:
			return b[:len(b)-1], nil
		case err == nil:
			c.line = append(c.line, b[:len(b)-1]...)
			return c.keep(), nil
		case errors.Is(err, bufio.ErrBufferFull):
			c.line = append(c.line, b...)
		case err == io.EOF && len(c.line)+len(b) > 0:
			c.line = append(c.line, b...)
			return c.keep(), nil
		default:
			return nil, err
		}
	}
}

// keep returns the long line read, dropping its buffer afterwards if it is
// too big to keep for the connection's life.
func (c *Conn) keep() []byte {
	line := c.line
	if cap(c.line) > 1<<20 {
		c.line = nil
	}
	return line
}

// Write implements [mcp.Connection]: one message, one line, one write.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(data)
	return err
}

// Close implements [mcp.Connection]; it may be called more than once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.close != nil {
			c.closeErr = c.close()
		}
	})
	return c.closeErr
}

// wire is a JSON-RPC message as it is on the wire: a request or
// notification if it has a method, else a response.
type wire struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// decode returns the message of one JSON object, as go-sdk's
// jsonrpc.DecodeMessage does.
func decode(data []byte) (jsonrpc.Message, error) {
	var m wire
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding a JSON-RPC message: %w", err)
	}
	if m.Version != "2.0" {
		return nil, fmt.Errorf("invalid JSON-RPC version %q; expected \"2.0\"", m.Version)
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return nil, err
	}
	if m.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *m.Method, Params: m.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a JSON-RPC response without an id")
	}
	r := &jsonrpc.Response{ID: id, Result: m.Result}
	if m.Error != nil { // not a typed nil in the error interface
		r.Error = m.Error
	}
	return r, nil
}

// decodeBatch returns the messages of a JSON-RPC batch (an array).
func decodeBatch(data []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("decoding a JSON-RPC batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("an empty JSON-RPC batch")
	}
	msgs := make([]jsonrpc.Message, len(raws))
	for i, raw := range raws {
		m, err := decode(raw)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}
