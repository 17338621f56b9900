package host

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestAuditedNamesCapped: a server, tool, resource URI or prompt name that
// sandboxed code made up is recorded in the audit log cut to maxAuditName
// bytes of whole UTF-8 characters, however long the code made it.
func TestAuditedNamesCapped(t *testing.T) {
	d, _ := policyDirectory(discovery.ToolPolicy{}, discovery.ToolPolicy{})
	dir := t.TempDir()
	d.audit = audit.New(dir, audit.Options{})
	h := d.host(Run{Session: "s", Run: 1})
	long := strings.Repeat("é", 50_000)
	for _, p := range []protocol.CallToolParams{
		{Server: long, Tool: new("t")},
		{Server: "fs", Tool: new(long)},
	} {
		if _, err := h.CallTool(t.Context(), p); err == nil {
			t.Fatalf("calling an unknown name succeeded")
		}
	}
	// Resource URIs and prompt names are recorded as the tool.
	h.ReadResource(t.Context(), protocol.ReadResourceParams{Server: long, URI: "file:///a"})
	h.ReadResource(t.Context(), protocol.ReadResourceParams{Server: "fs", URI: "file:///" + long})
	h.GetPrompt(t.Context(), protocol.GetPromptParams{Server: "fs", Name: long})
	recs, _, err := audit.Tail(dir, 0, nil)
	if err != nil || len(recs) != 5 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		for _, name := range []string{r.Server, r.Tool} {
			if len(name) > maxAuditName || !utf8.ValidString(name) {
				t.Errorf("audited name of %d bytes (valid UTF-8: %v), want at most %d", len(name), utf8.ValidString(name), maxAuditName)
			}
		}
	}
}
