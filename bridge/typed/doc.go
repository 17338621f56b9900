// Package typed renders MCP tools as Python: from a tool's JSON schemas, a
// one-line signature, the parameters the sandbox checks calls against, and a
// stub with TypedDicts for the structured arguments and results. A tool that
// declares no output schema gets a return type inferred from the results
// [Results] has seen.
package typed

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Render renders t of server, known to code as alias. Its return type is the
// declared output schema or, failing that, the shape of the structured
// results r has seen; a nil r has seen none.
func (r *Results) Render(server, alias string, t *mcp.Tool) Doc {
	inferred, n := r.inferred(server, t.Name)
	return renderTool(alias, t, inferred, n)
}
