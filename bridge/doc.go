// Package bridge is codebridge's MCP server. It offers one tool, run_python,
// which runs the agent's code in a sandbox and proxies the code's requests to
// the downstream MCP servers the user has configured.
package bridge
