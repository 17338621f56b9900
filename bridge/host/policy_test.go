package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/pool"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// annotatedPool is a downstream whose one server has tools with the
// annotations read-only mode looks at; every call answers "ok", and an
// "error_*" tool answers with isError.
type annotatedPool struct{ recordingPool }

func (*annotatedPool) Tools(context.Context, string) ([]*mcp.Tool, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	return []*mcp.Tool{
		{Name: "read_file", Description: "Read a file", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write_file", Description: "Write a file", InputSchema: schema},
		{Name: "wipe_file", Description: "Wipe a file", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(true)}},
		{Name: "read_secret", Description: "Read a secret file", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "error_file", Description: "Fail on a file", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
	}, nil
}

func (p *annotatedPool) CallFor(ctx context.Context, peer pool.Peer, server, tool string, args any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	res, err := p.recordingPool.CallFor(ctx, peer, server, tool, args, progress)
	res.IsError = strings.HasPrefix(tool, "error_")
	return res, err
}

const policyFile = "/home/u/MCPs/fs.json"

func policyDirectory(global, entry discovery.ToolPolicy) (*Directory, *annotatedPool) {
	fp := &annotatedPool{}
	d := newDirectory(fp, 1<<20, nil)
	d.tools = global
	d.Update(policyConfig(entry))
	return d, fp
}

func policyConfig(entry discovery.ToolPolicy) *discovery.Config {
	return &discovery.Config{Servers: []*discovery.Server{{Name: "fs", Source: policyFile, Transport: discovery.Stdio, Command: "x", Tools: entry}}}
}

// visibleEverywhere lists the tools each way of looking at the server shows.
func visibleEverywhere(t *testing.T, d *Directory) map[string][]string {
	t.Helper()
	h := d.host(Run{})
	names := func(v any, key string) []string {
		var out []string
		for _, e := range v.([]any) {
			out = append(out, e.(map[string]any)[key].(string))
		}
		slices.Sort(out)
		return out
	}
	got := map[string][]string{}
	for _, m := range []string{"list_tools", "query_tool_docs"} {
		v, err := hostCall(t, h, m, map[string]any{"server": "fs"})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		got[m] = names(v, "name")
	}
	v, err := hostCall(t, h, "describe_server", map[string]any{"server": "fs"})
	if err != nil {
		t.Fatal(err)
	}
	got["describe_server"] = names(v.(map[string]any)["tools"], "name")
	v, err = hostCall(t, h, "search_tool_docs", map[string]any{"query": "file secret read write wipe fail", "limit": 20})
	if err != nil {
		t.Fatal(err)
	}
	got["search_tool_docs"] = names(v.(map[string]any)["results"], "tool")
	infos, err := d.Prepare(t.Context(), []string{"fs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range infos[0].Tools {
		got["prepare"] = append(got["prepare"], ts.Name)
	}
	slices.Sort(got["prepare"])
	return got
}

func TestPolicyHidesAndRefuses(t *testing.T) {
	all := []string{"error_file", "read_file", "read_secret", "wipe_file", "write_file"}
	tests := []struct {
		name           string
		global, entry  discovery.ToolPolicy
		visible        []string
		refusedBecause map[string][]string // tool → what its refusal says
	}{
		{name: "no policy", visible: all},
		{
			name:    "entry deny glob",
			entry:   discovery.ToolPolicy{Deny: []string{"*secret*", "wipe_file"}},
			visible: []string{"error_file", "read_file", "write_file"},
			refusedBecause: map[string][]string{
				"read_secret": {`tool "read_secret" of MCP server "fs" is blocked by policy`, `"*secret*"`, `"tools.deny" of ` + policyFile, "no restart"},
				"wipe_file":   {`"wipe_file" in "tools.deny" of ` + policyFile},
			},
		},
		{
			name:    "entry allow, deny wins",
			entry:   discovery.ToolPolicy{Allow: []string{"read_*"}, Deny: []string{"read_secret"}},
			visible: []string{"read_file"},
			refusedBecause: map[string][]string{
				"write_file":  {`matches none of "read_*" in "tools.allow" of ` + policyFile},
				"error_file":  {`"tools.allow"`},
				"wipe_file":   {`"tools.allow"`},
				"read_secret": {`"read_secret" in "tools.deny"`},
			},
		},
		{
			name:    "entry read-only",
			entry:   discovery.ToolPolicy{ReadOnly: new(true)},
			visible: []string{"error_file", "read_file", "read_secret"},
			refusedBecause: map[string][]string{
				"write_file": {`read-only ("readOnly": true of ` + policyFile + `)`, "not annotated readOnlyHint: true"},
				"wipe_file":  {"annotated destructiveHint: true"},
			},
		},
		{
			name:    "global deny adds to the entry's",
			global:  discovery.ToolPolicy{Deny: []string{"write_*"}},
			entry:   discovery.ToolPolicy{Deny: []string{"wipe_*"}},
			visible: []string{"error_file", "read_file", "read_secret"},
			refusedBecause: map[string][]string{
				"write_file": {`"write_*" in MCP_BRIDGE_TOOLS_DENY`, "restart"},
				"wipe_file":  {`"tools.deny" of ` + policyFile},
			},
		},
		{
			name:    "global allow, replaced by the entry's",
			global:  discovery.ToolPolicy{Allow: []string{"read_file"}},
			entry:   discovery.ToolPolicy{Allow: []string{"write_file"}},
			visible: []string{"write_file"},
			refusedBecause: map[string][]string{
				"read_file": {`"tools.allow" of ` + policyFile}, "error_file": {`"tools.allow"`},
				"wipe_file": {`"tools.allow"`}, "read_secret": {`"tools.allow"`},
			},
		},
		{
			name:           "global read-only",
			global:         discovery.ToolPolicy{ReadOnly: new(true)},
			visible:        []string{"error_file", "read_file", "read_secret"},
			refusedBecause: map[string][]string{"write_file": {"MCP_BRIDGE_READ_ONLY=1"}, "wipe_file": {"MCP_BRIDGE_READ_ONLY=1", "destructiveHint"}},
		},
		{
			name:    "entry turns global read-only off",
			global:  discovery.ToolPolicy{ReadOnly: new(true)},
			entry:   discovery.ToolPolicy{ReadOnly: new(false)},
			visible: all,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, fp := policyDirectory(tt.global, tt.entry)
			for way, got := range visibleEverywhere(t, d) {
				if !slices.Equal(got, tt.visible) {
					t.Errorf("%s shows %v, want %v", way, got, tt.visible)
				}
			}
			h := d.host(Run{})
			for _, tool := range all {
				_, err := hostCall(t, h, "call_tool", map[string]any{"server": "fs", "tool": tool})
				_, qerr := hostCall(t, h, "query_tool_docs", map[string]any{"server": "fs", "tool": tool})
				want, refused := tt.refusedBecause[tool]
				if !slices.Contains(tt.visible, tool) && !refused {
					t.Fatalf("test case: say why %s is refused", tool)
				}
				if !refused {
					if err != nil || qerr != nil {
						t.Errorf("%s: call %v, docs %v; want it admitted", tool, err, qerr)
					}
					continue
				}
				for what, err := range map[string]error{"call_tool": err, "query_tool_docs": qerr} {
					var re *protocol.Error
					if !errors.As(err, &re) || re.Code != protocol.CodePolicyDenied {
						t.Errorf("%s %s: err = %v, want policy_denied", what, tool, err)
						continue
					}
					for _, w := range want {
						if !strings.Contains(re.Message, w) {
							t.Errorf("%s %s: %q does not say %q", what, tool, re.Message, w)
						}
					}
				}
			}
			if n, want := len(fp.callSizes()), len(tt.visible); n != want {
				t.Errorf("%d calls reached the server, want %d (the admitted tools only)", n, want)
			}
			// A misspelt name suggests admitted tools only.
			_, err := hostCall(t, h, "call_tool", map[string]any{"server": "fs", "tool": "read_secrt"})
			var re *protocol.Error
			if !errors.As(err, &re) || (re.Code != "unknown_tool" && re.Code != protocol.CodePolicyDenied) {
				t.Fatalf("misspelt tool: %v", err)
			}
			if re.Code == "unknown_tool" && !slices.Contains(tt.visible, "read_secret") && strings.Contains(re.Message, `"read_secret"`) {
				t.Errorf("the unknown-tool message names a blocked tool: %s", re.Message)
			}
		})
	}
}

// TestPolicyEditAppliesToRunningRun: a run keeps the view it started with,
// but a tool the policy blocks since then is refused at once.
func TestPolicyEditAppliesToRunningRun(t *testing.T) {
	d, fp := policyDirectory(discovery.ToolPolicy{}, discovery.ToolPolicy{})
	h := d.host(Run{}) // a run in progress
	call := func() error {
		_, err := hostCall(t, h, "call_tool", map[string]any{"server": "fs", "tool": "write_file"})
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	d.Update(policyConfig(discovery.ToolPolicy{Deny: []string{"write_file"}}))
	var re *protocol.Error
	if err := call(); !errors.As(err, &re) || re.Code != protocol.CodePolicyDenied {
		t.Fatalf("after the edit: %v, want policy_denied", err)
	}
	if n := len(fp.callSizes()); n != 1 {
		t.Errorf("%d calls reached the server, want 1", n)
	}
	// A new run does not even see it.
	if got := visibleEverywhere(t, d)["list_tools"]; slices.Contains(got, "write_file") {
		t.Errorf("after the edit a new run lists %v", got)
	}
}

// TestAuditOneLinePerCall: every call_tool request, whatever its outcome,
// is one record with the resolved names, the outcome and the sizes.
func TestAuditOneLinePerCall(t *testing.T) {
	for _, contents := range []bool{false, true} {
		d, _ := policyDirectory(discovery.ToolPolicy{}, discovery.ToolPolicy{Deny: []string{"wipe_file"}})
		dir := t.TempDir()
		d.audit = audit.New(dir, audit.Options{Contents: contents})
		h := d.host(Run{Session: "s1", Run: 2})
		calls := []struct {
			server, tool, outcome string
			args                  map[string]any
		}{
			{"fs", "read_file", "ok", map[string]any{"path": "/x"}},
			{"fs", "error_file", "tool_error", nil},
			{"fs", "wipe_file", "policy_denied", map[string]any{"path": "/x"}},
			{"fs", "nope", "unknown_tool", nil},
			{"nope", "read_file", "unknown_server", nil},
			{"fs", "READ_FILE", "ok", nil}, // recorded by its real name
		}
		for _, c := range calls {
			params := map[string]any{"server": c.server, "tool": c.tool}
			if c.args != nil {
				params["arguments"] = c.args
			}
			hostCall(t, h, "call_tool", params)
		}
		recs, skipped, err := audit.Tail(dir, 0, nil)
		if err != nil || skipped != 0 || len(recs) != len(calls) {
			t.Fatalf("contents=%v: %d records (skipped %d, err %v), want %d: %+v", contents, len(recs), skipped, err, len(calls), recs)
		}
		for i, c := range calls {
			r := recs[i]
			wantTool := c.tool
			if c.tool == "READ_FILE" {
				wantTool = "read_file"
			}
			if r.Server != c.server || r.Tool != wantTool || r.Outcome != c.outcome || r.DurationMS < 0 || r.Time.IsZero() || r.Session != "s1" || r.Run != 2 {
				t.Errorf("record %d = %+v, want %s.%s %s", i, r, c.server, wantTool, c.outcome)
			}
			if (r.Outcome == "ok" || r.Outcome == "tool_error") != (r.ResultBytes > 0) || (r.Outcome != "ok" && r.Outcome != "tool_error") != (r.Error != "") {
				t.Errorf("record %d: result %d bytes, error %q", i, r.ResultBytes, r.Error)
			}
			if c.args != nil && r.ArgBytes != len(`{"path":"/x"}`) {
				t.Errorf("record %d: %d argument bytes", i, r.ArgBytes)
			}
			if got := r.Arguments != nil; c.args != nil && got != contents {
				t.Errorf("record %d: arguments recorded %v with contents=%v", i, got, contents)
			}
		}
	}
}
