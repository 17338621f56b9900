// Package settings is codebridge's configuration: the [Config] every other
// part reads, the table of MCP_BRIDGE_* settings behind [LoadConfig] (and the
// README's settings table, which a test keeps in step), and the parsers of
// their values such as [ParseSeconds].
package settings
