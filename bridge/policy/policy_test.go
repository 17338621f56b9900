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

// TestConfirm: confirm patterns add up, confirmWrites asks for every tool
// not annotated read-only and an entry's setting replaces the global one,
// and the reason names the rule and where it is written.
func TestConfirm(t *testing.T) {
	const file = "/home/u/MCPs/mem.json"
	read := &mcp.Tool{Name: "read_graph", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	create := &mcp.Tool{Name: "create_entities"}
	send := &mcp.Tool{Name: "send_note", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	tools := []*mcp.Tool{read, create, send}
	tests := []struct {
		name          string
		global, entry discovery.ToolPolicy
		want          map[string]string // tool → a substring of why it asks; absent: it does not
	}{
		{name: "none"},
		{name: "global pattern", global: discovery.ToolPolicy{Confirm: []string{"create_*"}},
			want: map[string]string{"create_entities": `it matches "create_*" in MCP_BRIDGE_TOOLS_CONFIRM`}},
		{name: "entry pattern adds", global: discovery.ToolPolicy{Confirm: []string{"create_*"}}, entry: discovery.ToolPolicy{Confirm: []string{"send_*"}},
			want: map[string]string{"create_entities": "MCP_BRIDGE_TOOLS_CONFIRM", "send_note": `"send_*" in "tools.confirm" of ` + file}},
		{name: "global writes", global: discovery.ToolPolicy{ConfirmWrites: new(true)},
			want: map[string]string{"create_entities": "not annotated readOnlyHint: true and MCP_BRIDGE_TOOLS_CONFIRM_WRITES=1 asks"}},
		{name: "entry writes", entry: discovery.ToolPolicy{ConfirmWrites: new(true)},
			want: map[string]string{"create_entities": `"confirmWrites": true of ` + file}},
		{name: "entry turns writes off", global: discovery.ToolPolicy{ConfirmWrites: new(true)}, entry: discovery.ToolPolicy{ConfirmWrites: new(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.global, &discovery.Server{Name: "mem", Source: file, Tools: tt.entry})
			if (p == nil) != (len(tt.want) == 0) {
				t.Errorf("New = %v: want nil exactly when no call asks", p)
			}
			for _, tool := range tools {
				got, want := p.Confirm(tool), tt.want[tool.Name]
				if (got == "") != (want == "") || !strings.Contains(got, want) {
					t.Errorf("Confirm(%s) = %q, want %q", tool.Name, got, want)
				}
				if why := p.Blocked("mem", tool); why != "" {
					t.Errorf("Blocked(%s) = %q: confirmation never hides a tool", tool.Name, why)
				}
			}
		})
	}
}
