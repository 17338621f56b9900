package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
)

// TestBlocked: the global policy and a server's entry combine as New says,
// and a refusal names the rule and where it is written. The host's tests
// check that what is blocked is hidden and refused.
func TestBlocked(t *testing.T) {
	const file = "/home/u/MCPs/fs.json"
	read := &mcp.Tool{Name: "read_file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	write := &mcp.Tool{Name: "write_file"}
	wipe := &mcp.Tool{Name: "wipe_file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(true)}}
	tools := []*mcp.Tool{read, write, wipe}
	tests := []struct {
		name          string
		global, entry discovery.ToolPolicy
		want          []string // the tools admitted
		why           string   // a substring of write_file's refusal, if refused
	}{
		{name: "none", want: []string{"read_file", "write_file", "wipe_file"}},
		{name: "global deny", global: discovery.ToolPolicy{Deny: []string{"write_*"}},
			want: []string{"read_file", "wipe_file"}, why: `matches "write_*" in MCP_BRIDGE_TOOLS_DENY; that setting is codebridge's environment`},
		{name: "entry deny adds", global: discovery.ToolPolicy{Deny: []string{"wipe_file"}}, entry: discovery.ToolPolicy{Deny: []string{"write_file"}},
			want: []string{"read_file"}, why: `"tools.deny" of ` + file + `; edit that file`},
		{name: "entry allow replaces", global: discovery.ToolPolicy{Allow: []string{"write_file"}}, entry: discovery.ToolPolicy{Allow: []string{"read_*"}},
			want: []string{"read_file"}, why: `matches none of "read_*" in "tools.allow" of ` + file},
		{name: "global read-only", global: discovery.ToolPolicy{ReadOnly: new(true)},
			want: []string{"read_file"}, why: "read-only (MCP_BRIDGE_READ_ONLY=1) and the tool is not annotated readOnlyHint"},
		{name: "entry turns read-only off", global: discovery.ToolPolicy{ReadOnly: new(true)}, entry: discovery.ToolPolicy{ReadOnly: new(false)},
			want: []string{"read_file", "write_file", "wipe_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.global, &discovery.Server{Name: "fs", Source: file, Tools: tt.entry})
			var got []string
			for _, tool := range p.Admitted("fs", tools) {
				got = append(got, tool.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("admitted %v, want %v", got, tt.want)
			}
			why := p.Blocked("fs", write)
			if (why == "") != (tt.why == "") || !strings.Contains(why, tt.why) {
				t.Errorf("write_file blocked: %q, want %q", why, tt.why)
			}
		})
	}
}

// TestClosed: only a deny rule "*" closes a server to resources and
// prompts; other globs and read-only mode name tools only.
func TestClosed(t *testing.T) {
	const file = "/home/u/MCPs/fs.json"
	tests := []struct {
		name          string
		global, entry discovery.ToolPolicy
		why           string // a substring of the refusal; "" when open
	}{
		{name: "none"},
		{name: "deny some", entry: discovery.ToolPolicy{Deny: []string{"write_*"}}},
		{name: "allow some", entry: discovery.ToolPolicy{Allow: []string{"read_*"}}},
		{name: "read-only", global: discovery.ToolPolicy{ReadOnly: new(true)}},
		{name: "entry denies all", entry: discovery.ToolPolicy{Deny: []string{"*"}},
			why: `MCP server "fs" is closed by policy: "*" in "tools.deny" of ` + file + ` denies every tool, and with them its resources and prompts; edit that file`},
		{name: "global denies all", global: discovery.ToolPolicy{Deny: []string{"*"}},
			why: `"*" in MCP_BRIDGE_TOOLS_DENY`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why := New(tt.global, &discovery.Server{Name: "fs", Source: file, Tools: tt.entry}).Closed("fs")
			if (why == "") != (tt.why == "") || !strings.Contains(why, tt.why) {
				t.Errorf("Closed = %q, want %q", why, tt.why)
			}
		})
	}
}
