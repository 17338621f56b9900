package discovery

import (
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// Transport names how codebridge reaches a server.
type Transport string

const (
	Stdio      Transport = "stdio"           // a local command speaking MCP on stdin/stdout
	Streamable Transport = "streamable-http" // MCP streamable HTTP at URL
	SSE        Transport = "sse"             // the older HTTP+SSE transport at URL
)

// Server is one configured MCP server, with ${VAR} references already expanded
// and secret references resolved.
// A Server is never modified after the [Config] holding it is published.
type Server struct {
	Name        string            // key in the file's "mcpServers" (or "servers") object
	Source      string            // path of the file that defined it
	Description string            // the server's own, else the file's "description"
	Disabled    bool              // "disabled": true; kept so listings can show it
	Transport   Transport         // derived from command / url / type
	Command     string            // stdio only
	Args        []string          // stdio only
	Env         map[string]string // stdio only: added to a minimal inherited environment
	Cwd         string            // stdio only; empty means codebridge's working directory
	URL         string            // HTTP transports only
	Headers     map[string]string // HTTP transports only
	OAuth       *OAuth            // HTTP transports only: "oauth", the client to sign in with; nil when absent
	Tools       ToolPolicy        // "tools", "readOnly" and "confirmWrites": which tools code may see and call, and which need the person's approval
	// NoElicitation and NoSampling ("elicitation": false, "sampling":
	// false) refuse the server's questions and sampling requests, which
	// codebridge otherwise passes to the agent's client.
	NoElicitation bool
	NoSampling    bool
	// Trusted ("trust": "trusted") skips the tool-poisoning scanner
	// (bridge/scan) for the server's definitions; the default, "trust":
	// "scan", scans each new or changed one before it is pinned.
	Trusted bool
	// MaxConcurrency ("maxConcurrency") is how many tool calls the server
	// is given at once, across every run and session; more wait in line
	// in codebridge. 0 leaves it to codebridge's server_concurrency setting.
	MaxConcurrency int

	// Secrets are the values that ${keyring:...} and ${cmd:...} references
	// resolved to, already written into Command, Args, Env, Cwd, URL and
	// Headers (which only the code that starts or reaches the server
	// reads); what the server sends back is masked with them.
	Secrets secret.List
}

// OAuth is an entry's "oauth" object, for a server that signs in with OAuth
// through a client the user registered:
//
//	"oauth": {"clientId": "...", "clientSecret": "${keyring:github/oauth}", "scopes": ["repo"]}
//
// Without it codebridge registers itself with the server's authorization
// server (`codebridge login NAME`). ClientSecret, when given, is also in
// [Server.Secrets].
type OAuth struct {
	ClientID     string
	ClientSecret secret.Value // empty for a public client
	Scopes       []string     // asked for instead of those the server's challenge names
}

// Equal reports whether o and p say the same.
func (o *OAuth) Equal(p *OAuth) bool {
	if o == nil || p == nil {
		return o == p
	}
	return o.ClientID == p.ClientID && o.ClientSecret.Reveal() == p.ClientSecret.Reveal() && slices.Equal(o.Scopes, p.Scopes)
}

// ToolPolicy is what a server's entry says about its tools:
//
//	"tools": {"allow": ["read_*", "search"], "deny": ["*delete*"], "confirm": ["send_*"]}, "readOnly": true, "confirmWrites": true
//
// Patterns are tool names or globs in [path.Match] syntax, already checked. A
// deny match always wins; an empty Allow admits every tool. ReadOnly admits
// only tools annotated readOnlyHint: true and not destructiveHint: true; nil
// leaves it to codebridge's global setting. The entry refines the global
// policy (its allow, deny and read-only settings): its deny adds to theirs,
// its allow and readOnly replace theirs.
//
// Confirm and ConfirmWrites name the calls that wait for the person's
// approval, asked through the agent's client: tools matching a Confirm
// pattern, and with ConfirmWrites every tool not annotated readOnlyHint:
// true. The entry's confirm adds to the global one; its confirmWrites, when
// set, replaces the global one.
type ToolPolicy struct {
	Allow         []string
	Deny          []string
	ReadOnly      *bool
	Confirm       []string
	ConfirmWrites *bool
}

// Equal reports whether p and o say the same.
func (p ToolPolicy) Equal(o ToolPolicy) bool {
	return slices.Equal(p.Allow, o.Allow) && slices.Equal(p.Deny, o.Deny) && slices.Equal(p.Confirm, o.Confirm) &&
		sameBool(p.ReadOnly, o.ReadOnly) && sameBool(p.ConfirmWrites, o.ConfirmWrites)
}

// sameBool reports whether two optional flags say the same.
func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// CheckPattern reports whether p can be a tool pattern: a tool name, or a
// glob in [path.Match] syntax (*, ?, [a-z], \ to escape).
func CheckPattern(p string) error {
	if p == "" {
		return errors.New("an empty pattern matches no tool: remove it")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob (%v): use *, ? and [...] as in Go's path.Match, \\ before a literal one", p, err)
	}
	return nil
}

// MatchTool reports whether the tool called name matches pattern, which
// [CheckPattern] accepted.
func MatchTool(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}
