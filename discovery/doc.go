// Package discovery reads the MCP servers a user has configured in a folder of
// JSON files (~/MCPs/*.json by default) and follows that folder for changes.
//
// The files use the "mcpServers" format that Claude Desktop and Cursor use, or
// the "servers" format of VS Code. [Load] reads the folder into a [Config], an
// immutable snapshot; what cannot be loaded is reported as a [Problem] and the
// rest loads, and a file that breaks keeps its last good servers. [Watch]
// produces a new snapshot after every burst of changes to the folder, and
// [Diff] tells the servers that were added, removed or changed.
//
// [Alias] and [Aliases] turn server and tool names into Python identifiers for
// the sandbox's mcp_<server>.<tool> proxies.
package discovery
