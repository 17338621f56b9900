package server

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/internal/bridgetest"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestResultAttachments: a run's result is its text first, then the images
// and files it kept, in order, a note for each dropped one, and both lists in
// structuredContent. (The host's tests check which are kept and why.)
func TestResultAttachments(t *testing.T) {
	att := host.NewAttachments(host.AttachLimits{Max: 100, MaxN: 3, MaxSum: 150})
	h := att.Host(host.NoServers)
	for _, p := range []struct {
		kind, name, mime string
		data             []byte
		size             int
	}{
		{"image", "figure-1.png", "image/png", make([]byte, 60), 0},
		{"image", "big.png", "image/png", nil, 101},
		{"file", "out.csv", "text/csv", []byte("a,b\n1,2\n"), 0},
		{"image", "figure-1.png", "image/png", make([]byte, 90), 0},
		{"file", "blob.bin", "application/octet-stream", []byte{0xff, 0, 1}, 0},
		{"image", "late.png", "image/png", []byte{1}, 0},
	} {
		h.Call(t.Context(), protocol.MethodAttach, bridgetest.AttachParams(p.kind, p.name, p.mime, p.data, p.size))
	}
	// The result: text first, then the attachments in order, a note for each
	// dropped one, and both lists in structuredContent.
	r := formatResult(&python.Result{Stdout: "done\n"}, nil, att, nil, 0)
	if len(r.Content) != 4 {
		t.Fatalf("result has %d contents, want text + 3", len(r.Content))
	}
	text := r.Content[0].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, "done\n[attachments]\n") || strings.Count(text, "not returned") != 3 || !strings.Contains(text, `image "big.png" (image/png) not returned`) {
		t.Errorf("text:\n%s", text)
	}
	out := r.StructuredContent.(output)
	if len(out.Attachments) != 3 || out.Attachments[1].Bytes != 8 || len(out.DroppedAttachments) != 3 {
		t.Errorf("structuredContent attachments %+v, dropped %+v", out.Attachments, out.DroppedAttachments)
	}
	if r.IsError {
		t.Error("dropped attachments made the result an error")
	}
}

// TestResultDropsBounded: code that sends endless oversized attachments gets
// a result that lists the first ones dropped and counts the rest.
func TestResultDropsBounded(t *testing.T) {
	att := host.NewAttachments(host.AttachLimits{Max: 10, MaxN: 2, MaxSum: 100})
	h := att.Host(host.NoServers)
	for range 1000 {
		h.Call(context.Background(), protocol.MethodAttach, bridgetest.AttachParams("image", "x.png", "image/png", nil, 11))
	}
	r := formatResult(&python.Result{}, nil, att, nil, 0)
	if text := r.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "and 980 more not returned.") {
		t.Errorf("text:\n%s", text)
	}
	if out := r.StructuredContent.(output); out.DroppedMore != 980 {
		t.Errorf("dropped_attachments_more = %d", out.DroppedMore)
	}
}
