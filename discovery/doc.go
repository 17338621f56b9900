// Package discovery reads the MCP servers a user has configured in a folder of
// JSON files (~/MCPs/*.json by default) and follows that folder for changes.
//
// The files use the "mcpServers" format that Claude Desktop and Cursor use, or
// the "servers" format of VS Code. A [Config] is an immutable snapshot; a
// [Watcher] produces a new one after every burst of changes to the folder.
package discovery
