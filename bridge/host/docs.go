package host

import (
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/typed"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// docsFor describes tools the way the sandbox helpers return them: summary is
// name, aliases and the first line of the description; full adds the complete
// description, the schemas and a Python signature. withSchema forces the
// schemas in (list_tools). saved is when the tools' manifest was written, zero
// when the running server listed them.
func docsFor(s *snapshot, srv *discovery.Server, tools []*mcp.Tool, saved time.Time, detail string, withSchema bool) []protocol.ToolDoc {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	aliases := discovery.Aliases(names)
	full := strings.EqualFold(detail, "full")
	out := make([]protocol.ToolDoc, len(tools))
	for i, t := range tools {
		d := protocol.ToolDoc{
			Server: srv.Name, ServerAlias: s.alias[srv.Name],
			Tool: t.Name, ToolAlias: aliases[t.Name],
			Name: t.Name, Alias: aliases[t.Name],
			Description: typed.FirstLine(t.Description),
			Listed:      listedNote(saved),
		}
		if full || withSchema {
			d.Description = t.Description
			d.InputSchema = t.InputSchema
			d.OutputSchema = t.OutputSchema
			td := s.results.Render(srv.Name, aliases[t.Name], t)
			d.Signature, d.Params, d.Stub = td.Signature, td.Params, td.Stub
		}
		out[i] = d
	}
	return out
}

// closest returns up to n of candidates nearest to name by edit distance
// (case-insensitive, with '-' and '_' equal), nearest first, leaving out ones
// too far to be a plausible typo.
func closest(name string, candidates []string, n int) []string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	type scored struct {
		s string
		d int
	}
	var out []scored
	key := norm(name)
	for _, c := range candidates {
		nc := norm(c)
		d := editDistance(key, nc)
		if strings.Contains(nc, key) || strings.Contains(key, nc) {
			d = min(d, 1)
		}
		if d <= max(2, len(key)/3) {
			out = append(out, scored{c, d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].d < out[j].d })
	res := make([]string, 0, n)
	for i := 0; i < len(out) && i < n; i++ {
		res = append(res, out[i].s)
	}
	return res
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
