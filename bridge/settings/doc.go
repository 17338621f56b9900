// Package settings is codebridge's configuration: the [Config] every other
// part reads, and the one table of settings it is made from. [Load] reads the
// table's defaults, the settings file config.toml, the MCP_BRIDGE_*
// environment variables and the command-line flags as koanf layers, each
// winning over the ones before, records where each value came from, and has
// koanf decode each setting into its field of Config.
// docs/settings.md is generated from the same table, and the parsers of the
// values, such as [ParseSize] and [ParseSeconds], live here.
package settings
