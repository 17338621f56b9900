package stdio

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// transport makes a Conn an mcp.Transport.
type transport struct{ c *Conn }

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// TestWithGoSDK connects a go-sdk client through a Conn to a go-sdk server
// on its own IOTransport, and a go-sdk client on its own transport to a
// server through a Conn, over pipes: each end must understand the other.
func TestWithGoSDK(t *testing.T) {
	for _, ours := range []string{"client", "server"} {
		t.Run("ours-"+ours, func(t *testing.T) {
			cr, sw := pipe(t) // server → client
			sr, cw := pipe(t) // client → server
			server := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
			type in struct {
				Text string `json:"text"`
			}
			mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
				if a.Text == "fail" {
					return nil, nil, errors.New("failed as asked")
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
			})
			var st, ct mcp.Transport = &mcp.IOTransport{Reader: sr, Writer: sw}, &mcp.IOTransport{Reader: cr, Writer: cw}
			if ours == "server" {
				st = transport{NewConn(sr, sw, 0, func() error { sr.Close(); return sw.Close() })}
			} else {
				ct = transport{NewConn(cr, cw, 0, func() error { cr.Close(); return cw.Close() })}
			}
			ss, err := server.Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(t.Context(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A message far longer than the read buffer, then short ones.
			for _, text := range []string{strings.Repeat("long line ", 50_000), "short", "é \n \"quoted\""} {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content[0].(*mcp.TextContent).Text; got != text {
					t.Errorf("echo of %d bytes came back as %d bytes", len(text), len(got))
				}
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "fail"}})
			if err != nil || !res.IsError {
				t.Errorf("a failing tool: %v, %+v", err, res)
			}
			_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "no-such-tool"})
			if wire, ok := errors.AsType[*jsonrpc.Error](err); !ok || wire.Code == 0 {
				t.Errorf("an unknown tool: %v, want a JSON-RPC error with its code", err)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("closing the client: %v", err)
			}
			if err := ss.Wait(); err != nil {
				t.Errorf("the server's session: %v", err)
			}
		})
	}
}

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestRead(t *testing.T) {
	id1, _ := jsonrpc.MakeID(float64(1))
	idS, _ := jsonrpc.MakeID("a")
	tests := []struct {
		name  string
		input string
		want  []jsonrpc.Message
		err   string // the error after want, "" for io.EOF
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n",
			[]jsonrpc.Message{&jsonrpc.Request{ID: id1, Method: "tools/call", Params: []byte(`{"name":"x"}`)}}, ""},
		{"notification, empty method, CRLF and blank lines", "\r\n" + `{"jsonrpc":"2.0","method":""}` + "\r\n\n",
			[]jsonrpc.Message{&jsonrpc.Request{Method: ""}}, ""},
		{"response, string id, no newline at the end", `{"jsonrpc":"2.0","id":"a","result":{"ok":true}}`,
			[]jsonrpc.Message{&jsonrpc.Response{ID: idS, Result: []byte(`{"ok":true}`)}}, ""},
		{"error response", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}` + "\n",
			[]jsonrpc.Message{&jsonrpc.Response{ID: id1, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}}}, ""},
		{"batch", `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":null}]` + "\n",
			[]jsonrpc.Message{&jsonrpc.Request{Method: "a"}, &jsonrpc.Response{ID: id1, Result: []byte("null")}}, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"result":1}` + "\n", nil, "version"},
		{"response without id", `{"jsonrpc":"2.0","result":1}` + "\n", nil, "without an id"},
		{"empty batch", "[]\n", nil, "empty"},
		{"not JSON", "hello\n", nil, "decoding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConn(strings.NewReader(tt.input), io.Discard, 0, nil)
			var got []jsonrpc.Message
			var err error
			for {
				var m jsonrpc.Message
				if m, err = c.Read(t.Context()); err != nil {
					break
				}
				got = append(got, m)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b jsonrpc.ID) bool { return a == b })); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if tt.err == "" && err != io.EOF || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q (empty: io.EOF)", err, tt.err)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("x", 100) + `"}` + "\n"
	if _, err := NewConn(strings.NewReader(big), io.Discard, len(big)-1, nil).Read(t.Context()); err != nil {
		t.Errorf("a message at the limit: %v", err)
	}
	if _, err := NewConn(strings.NewReader(big+big), io.Discard, 50, nil).Read(t.Context()); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a message over the limit: %v, want ErrTooLarge", err)
	}
}

// TestCloseEndsRead: Close unblocks a Read waiting on a pipe, which then
// reports the end of the stream.
func TestCloseEndsRead(t *testing.T) {
	r, w := pipe(t)
	c := NewConn(r, w, 0, r.Close)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	if _, err := w.WriteString(`{"jsonrpc":"2.0","method":"partial"`); err != nil { // no end yet: Read waits
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != io.EOF {
		t.Errorf("Read after Close: %v, want io.EOF", err)
	}
}
