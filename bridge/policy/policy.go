package policy

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// Policy is one server's effective tool policy: the global settings refined
// by the server's entry, each rule with where it was written, so a refusal
// can say what to edit.
type Policy struct {
	allow      []rule // empty admits every tool
	allowWhere string
	deny       []rule
	readOnly   string // where read-only mode was asked for; "" when off
	confirm    []rule // calls of matching tools wait for the person's approval
	// confirmWrites is where approval of every tool not annotated
	// readOnlyHint was asked for; "" when off.
	confirmWrites string
}

// rule is one pattern and where it was written.
type rule struct{ pattern, where string }

// New combines the global policy (from the settings) with srv's entry:
// the entry's deny and confirm add to the global ones, its allow, readOnly
// and confirmWrites replace the global ones. It returns nil when every tool
// is admitted without asking.
func New(global discovery.ToolPolicy, srv *discovery.Server) *Policy {
	p := &Policy{}
	inFile := func(key string) string { return fmt.Sprintf("%s of %s", key, srv.Source) }
	for _, d := range global.Deny {
		p.deny = append(p.deny, rule{d, settings.EnvPrefix + "TOOLS_DENY"})
	}
	for _, d := range srv.Tools.Deny {
		p.deny = append(p.deny, rule{d, inFile(`"tools.deny"`)})
	}
	allow, where := global.Allow, settings.EnvPrefix+"TOOLS_ALLOW"
	if len(srv.Tools.Allow) > 0 {
		allow, where = srv.Tools.Allow, inFile(`"tools.allow"`)
	}
	for _, a := range allow {
		p.allow = append(p.allow, rule{a, where})
	}
	p.allowWhere = where
	switch ro := srv.Tools.ReadOnly; {
	case ro != nil && *ro:
		p.readOnly = inFile(`"readOnly": true`)
	case ro == nil && global.ReadOnly != nil && *global.ReadOnly:
		p.readOnly = settings.EnvPrefix + "READ_ONLY=1"
	}
	for _, c := range global.Confirm {
		p.confirm = append(p.confirm, rule{c, settings.EnvPrefix + "TOOLS_CONFIRM"})
	}
	for _, c := range srv.Tools.Confirm {
		p.confirm = append(p.confirm, rule{c, inFile(`"tools.confirm"`)})
	}
	switch cw := srv.Tools.ConfirmWrites; {
	case cw != nil && *cw:
		p.confirmWrites = inFile(`"confirmWrites": true`)
	case cw == nil && global.ConfirmWrites != nil && *global.ConfirmWrites:
		p.confirmWrites = settings.EnvPrefix + "TOOLS_CONFIRM_WRITES=1"
	}
	if len(p.allow) == 0 && len(p.deny) == 0 && p.readOnly == "" && len(p.confirm) == 0 && p.confirmWrites == "" {
		return nil
	}
	return p
}

// Blocked says why code may not see or call t of server, or "" when it may.
// A nil policy admits every tool.
func (p *Policy) Blocked(server string, t *mcp.Tool) string {
	if p == nil {
		return ""
	}
	what := fmt.Sprintf("tool %q of MCP server %q is blocked by policy", t.Name, server)
	for _, r := range p.deny {
		if discovery.MatchTool(r.pattern, t.Name) {
			return fmt.Sprintf("%s: it matches %q in %s; %s", what, r.pattern, r.where, fixHint(r.where))
		}
	}
	if len(p.allow) > 0 {
		admitted := false
		pats := make([]string, len(p.allow))
		for i, r := range p.allow {
			pats[i] = r.pattern
			admitted = admitted || discovery.MatchTool(r.pattern, t.Name)
		}
		if !admitted {
			return fmt.Sprintf("%s: it matches none of %s in %s; %s", what, QuoteList(pats), p.allowWhere, fixHint(p.allowWhere))
		}
	}
	if p.readOnly != "" {
		a := t.Annotations
		switch {
		case a == nil || !a.ReadOnlyHint:
			return fmt.Sprintf("%s: the server is read-only (%s) and the tool is not annotated readOnlyHint: true; %s", what, p.readOnly, fixHint(p.readOnly))
		case a.DestructiveHint != nil && *a.DestructiveHint:
			return fmt.Sprintf("%s: the server is read-only (%s) and the tool is annotated destructiveHint: true; %s", what, p.readOnly, fixHint(p.readOnly))
		}
	}
	return ""
}

// Closed says why code may not use server at all, or "" when it may: a deny
// rule "*" blocks every tool, and with them the server's resources and
// prompts. Resources and prompts are not tools, so no other rule applies to
// them: the allow and deny globs name tools, and read-only mode admits them
// (reading a resource or getting a prompt changes nothing by the protocol's
// definition). A nil policy closes nothing.
func (p *Policy) Closed(server string) string {
	if p == nil {
		return ""
	}
	for _, r := range p.deny {
		if r.pattern == "*" {
			return fmt.Sprintf("MCP server %q is closed by policy: %q in %s denies every tool, and with them its resources and prompts; %s",
				server, r.pattern, r.where, fixHint(r.where))
		}
	}
	return ""
}

// fixHint says how to change the rule written in where.
func fixHint(where string) string {
	if strings.HasPrefix(where, settings.EnvPrefix) {
		return "that setting is codebridge's environment (a change needs a restart)"
	}
	return "edit that file to change it (no restart needed)"
}

// Confirm says why a call of t needs the person's approval first, naming
// the rule and where it is written (`it matches "send_*" in ...`), or ""
// when it does not. A nil policy asks for none. Call it only for a tool
// [Policy.Blocked] admits.
func (p *Policy) Confirm(t *mcp.Tool) string {
	if p == nil {
		return ""
	}
	for _, r := range p.confirm {
		if discovery.MatchTool(r.pattern, t.Name) {
			return fmt.Sprintf("it matches %q in %s", r.pattern, r.where)
		}
	}
	if p.confirmWrites != "" && (t.Annotations == nil || !t.Annotations.ReadOnlyHint) {
		return fmt.Sprintf("it is not annotated readOnlyHint: true and %s asks before such calls", p.confirmWrites)
	}
	return ""
}

// Admitted returns the tools p admits; tools itself when it admits all.
func (p *Policy) Admitted(server string, tools []*mcp.Tool) []*mcp.Tool {
	if p == nil {
		return tools
	}
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if p.Blocked(server, t) == "" {
			out = append(out, t)
		}
	}
	return out
}

// QuoteList quotes names and joins them with commas, as refusals and
// suggestions list them.
func QuoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
