// Package policy decides which tools of a downstream MCP server code may see
// and call: the global tool settings (MCP_BRIDGE_TOOLS_ALLOW, _DENY,
// _READ_ONLY) refined by each server's entry. A refusal says which rule
// blocked the tool and where that rule is written.
package policy
