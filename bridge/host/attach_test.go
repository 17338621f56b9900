package host

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// recordingHost records the tools called through it and refuses the rest.
type recordingHost struct {
	protocol.Refuse
	tools []string
}

func (h *recordingHost) CallTool(_ context.Context, p protocol.CallToolParams) (protocol.CallToolResult, error) {
	h.tools = append(h.tools, *p.Tool)
	return protocol.CallToolResult{RawMessage: json.RawMessage(`"passed on"`)}, nil
}

func TestAttachmentLimits(t *testing.T) {
	inner := &recordingHost{}
	att := NewAttachments(AttachLimits{Max: 100, MaxN: 3, MaxSum: 150, Setting: envName})
	h := att.Host(inner)
	ctx := context.Background()
	got, err := h.Call(ctx, protocol.MethodCallTool, json.RawMessage(`{"server":"s","tool":"t"}`))
	if res, ok := got.(protocol.CallToolResult); !ok || string(res.RawMessage) != `"passed on"` || err != nil {
		t.Fatalf("call_tool through attachHost: %v %v", got, err)
	}
	if len(inner.tools) != 1 {
		t.Fatalf("inner host saw %v", inner.tools)
	}
	steps := []struct {
		params   json.RawMessage
		wantErr  string // a substring of the too_large message; "" for kept
		wantName string
	}{
		{bridgetest.AttachParams("image", "figure-1.png", "image/png", make([]byte, 60), 0), "", "figure-1.png"},
		{bridgetest.AttachParams("image", "big.png", "image/png", nil, 101), "MCP_BRIDGE_MAX_ATTACHMENT_SIZE", "big.png"},
		{bridgetest.AttachParams("file", "out.csv", "text/csv", []byte("a,b\n1,2\n"), 0), "", "out.csv"},
		{bridgetest.AttachParams("image", "figure-1.png", "image/png", make([]byte, 90), 0), "MCP_BRIDGE_MAX_ATTACHMENTS_TOTAL", "figure-1-2.png"},
		{bridgetest.AttachParams("file", "blob.bin", "application/octet-stream", []byte{0xff, 0, 1}, 0), "", "blob.bin"},
		{bridgetest.AttachParams("image", "late.png", "image/png", []byte{1}, 0), "MCP_BRIDGE_MAX_ATTACHMENTS)", "late.png"},
	}
	for i, st := range steps {
		_, err := h.Call(ctx, protocol.MethodAttach, st.params)
		if st.wantErr == "" {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			continue
		}
		var rpc *protocol.Error
		if !errors.As(err, &rpc) || rpc.Code != "too_large" || !strings.Contains(rpc.Message, st.wantErr) || !strings.Contains(rpc.Message, st.wantName) {
			t.Fatalf("step %d: error %v, want too_large naming %s and %s", i, err, st.wantErr, st.wantName)
		}
	}
	if _, err := h.Call(ctx, protocol.MethodAttach, bridgetest.AttachParams("video", "x", "", []byte{1}, 0)); err == nil {
		t.Error("an unknown kind was accepted")
	}
	if _, err := h.Call(ctx, protocol.MethodAttach, bridgetest.AttachParams("image", "x", "", nil, 10)); err == nil {
		t.Error("an attachment under the limit without data was accepted")
	}

	content, kept, dropped, _ := att.Contents()
	if len(content) != 3 || len(kept) != 3 || len(dropped) != 3 {
		t.Fatalf("content %d, kept %+v, dropped %+v; want 3 of each", len(content), kept, dropped)
	}
	if img, ok := content[0].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) != 60 {
		t.Errorf("first: %#v, want the 60-byte PNG", content[0])
	}
	if res, ok := content[1].(*mcp.EmbeddedResource); !ok || res.Resource.Text != "a,b\n1,2\n" || res.Resource.Blob != nil ||
		res.Resource.MIMEType != "text/csv" || res.Resource.URI != "sandbox:///out.csv" {
		t.Errorf("second: %#v, want out.csv as text", content[1])
	}
	if res, ok := content[2].(*mcp.EmbeddedResource); !ok || string(res.Resource.Blob) != "\xff\x00\x01" || res.Resource.Text != "" {
		t.Errorf("third: %#v, want blob.bin as a blob", content[2])
	}
	for i, want := range []string{"big.png", "figure-1-2.png", "late.png"} {
		if dropped[i].Name != want || dropped[i].Reason == "" {
			t.Errorf("dropped[%d] = %+v, want %s with a reason", i, dropped[i], want)
		}
	}

}

func TestIsText(t *testing.T) {
	for mime, want := range map[string]bool{
		"text/csv": true, "text/plain; charset=utf-8": true, "application/json": true, "application/geo+json": true,
		"image/svg+xml": true, "image/png": false, "application/octet-stream": false, "application/pdf": false,
	} {
		if got := isText(mime); got != want {
			t.Errorf("isText(%q) = %v, want %v", mime, got, want)
		}
	}
}

// TestAttachmentDropsBounded: code that sends endless oversized attachments
// makes the result list the first maxDropped and count the rest.
func TestAttachmentDropsBounded(t *testing.T) {
	att := NewAttachments(AttachLimits{Max: 10, MaxN: 2, MaxSum: 100})
	h := att.Host(&recordingHost{})
	for range 1000 {
		if _, err := h.Call(context.Background(), protocol.MethodAttach, bridgetest.AttachParams("image", "x.png", "image/png", nil, 11)); err == nil {
			t.Fatal("an oversized attachment was accepted")
		}
	}
	_, _, dropped, more := att.Contents()
	if len(dropped) != maxDropped || more != 1000-maxDropped || len(att.names) != maxDropped {
		t.Errorf("%d dropped listed, %d more, %d names; want %d, %d, %d", len(dropped), more, len(att.names), maxDropped, 1000-maxDropped, maxDropped)
	}
}

// TestAttachmentURIEscaped: a file's name, whatever it holds, makes a
// sandbox: URI that parses back to that name, one segment under the root (F21).
func TestAttachmentURIEscaped(t *testing.T) {
	for _, name := range []string{"out.csv", "a b.txt", "q?x=1", "frag#top", "100%.txt", "..", ".", "a\x00b\x1f\x7f.txt",
		"user@evil.example:80", "ünï.txt", "dir/../../etc/passwd"} {
		a := &Attachments{max: 1 << 20, maxN: 10, maxSum: 1 << 20}
		if err := a.add(protocol.AttachParams{Kind: kindFile, Name: name, Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		content, kept, _, _ := a.Contents()
		uri := content[0].(*mcp.EmbeddedResource).Resource.URI
		u, err := url.Parse(uri)
		if err != nil {
			t.Errorf("%q: URI %q does not parse: %v", name, uri, err)
			continue
		}
		if u.Scheme != "sandbox" || u.Host != "" || u.Path != "/"+kept[0].Name || u.RawQuery != "" || u.Fragment != "" ||
			path.Clean(u.Path) != u.Path && kept[0].Name != "." && kept[0].Name != ".." || strings.Count(u.EscapedPath(), "/") != 1 {
			t.Errorf("%q (kept as %q): URI %q parses to host %q path %q query %q fragment %q", name, kept[0].Name, uri, u.Host, u.Path, u.RawQuery, u.Fragment)
		}
	}
}
