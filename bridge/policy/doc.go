// Package policy decides which tools of a downstream MCP server code may see
// and call, and which calls wait for the person's approval: the global tool
// settings (MCP_BRIDGE_TOOLS_ALLOW, _DENY, _READ_ONLY, _TOOLS_CONFIRM,
// _TOOLS_CONFIRM_WRITES) refined by each server's entry. A refusal, or a
// question, says which rule applies and where that rule is written.
package policy
