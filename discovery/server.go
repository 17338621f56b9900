package discovery

// Transport names how codebridge reaches a server.
type Transport string

const (
	Stdio      Transport = "stdio"           // a local command speaking MCP on stdin/stdout
	Streamable Transport = "streamable-http" // MCP streamable HTTP at URL
	SSE        Transport = "sse"             // the older HTTP+SSE transport at URL
)

// Server is one configured MCP server, with ${VAR} references already expanded.
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
}
