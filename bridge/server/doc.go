// Package server is codebridge's MCP server. It offers one tool, run_python,
// which runs the agent's code through a [Runner] with the configured MCP
// servers reachable through a [Directory], and formats the run as a tool
// result: the printed output, the images and files the run returned, and
// every detail as structured content. It also serves the sandbox manual as a
// resource.
package server
