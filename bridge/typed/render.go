package typed

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Render renders t of server, known to code as alias. Its return type is the
// declared output schema or, failing that, the shape of the structured
// results r has seen; a nil r has seen none.
func (r *Results) Render(server, alias string, t *mcp.Tool) Doc {
	inferred, n := r.inferred(server, t.Name)
	return renderTool(alias, t, inferred, n)
}
