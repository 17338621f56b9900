package bridge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// docsFor describes tools the way the sandbox helpers return them: summary is
// name, aliases and the first line of the description; full adds the complete
// description, the schemas and a Python signature. withSchema forces the
// schemas in (list_tools). saved is when the tools' manifest was written, zero
// when the running server listed them.
func docsFor(s *snapshot, srv *discovery.Server, tools []*mcp.Tool, saved time.Time, detail string, withSchema bool) []python.ToolDoc {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	aliases := discovery.Aliases(names)
	full := strings.EqualFold(detail, "full")
	out := make([]python.ToolDoc, len(tools))
	for i, t := range tools {
		d := python.ToolDoc{
			Server: srv.Name, ServerAlias: s.alias[srv.Name],
			Tool: t.Name, ToolAlias: aliases[t.Name],
			Name: t.Name, Alias: aliases[t.Name],
			Description: firstLine(t.Description),
			Listed:      listedNote(saved),
		}
		if full || withSchema {
			d.Description = t.Description
			d.InputSchema = t.InputSchema
			d.OutputSchema = t.OutputSchema
			d.Signature = signature(aliases[t.Name], t)
		}
		out[i] = d
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// schema is the part of a JSON Schema a signature needs.
type schema struct {
	Type       any                `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Items      *schema            `json:"items"`
	Enum       []any              `json:"enum"`
	AnyOf      []*schema          `json:"anyOf"`
}

func decodeSchema(v any) *schema {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var s schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}

// paramNames lists a tool's parameter names, for search.
func paramNames(t *mcp.Tool) []string {
	s := decodeSchema(t.InputSchema)
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// signature renders a Python signature such as
// "get_sum(a: float, b: float) -> Any": required parameters first, in schema
// order where known, optional ones as keyword arguments defaulting to None.
func signature(alias string, t *mcp.Tool) string {
	s := decodeSchema(t.InputSchema)
	var params []string
	if s != nil {
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		var opt []string
		for _, n := range s.Required {
			if p, ok := s.Properties[n]; ok {
				params = append(params, fmt.Sprintf("%s: %s", discovery.Alias(n), pyType(p)))
			}
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			if !required[n] {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			opt = append(opt, fmt.Sprintf("%s: %s = None", discovery.Alias(n), pyType(s.Properties[n])))
		}
		if len(opt) > 0 {
			params = append(params, append([]string{"*"}, opt...)...)
		}
	}
	ret := "Any"
	if out := decodeSchema(t.OutputSchema); out != nil && t.OutputSchema != nil {
		ret = pyType(out)
	}
	return fmt.Sprintf("%s(%s) -> %s", alias, strings.Join(params, ", "), ret)
}

// pyType names the Python type of a JSON Schema.
func pyType(s *schema) string {
	if s == nil {
		return "Any"
	}
	var types []string
	switch v := s.Type.(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			if str, ok := x.(string); ok {
				types = append(types, str)
			}
		}
	}
	if len(types) == 0 && len(s.AnyOf) > 0 {
		var parts []string
		for _, a := range s.AnyOf {
			parts = append(parts, pyType(a))
		}
		return "Union[" + strings.Join(parts, ", ") + "]"
	}
	var parts []string
	for _, ty := range types {
		switch ty {
		case "string":
			parts = append(parts, "str")
		case "number":
			parts = append(parts, "float")
		case "integer":
			parts = append(parts, "int")
		case "boolean":
			parts = append(parts, "bool")
		case "array":
			if s.Items != nil {
				parts = append(parts, "List["+pyType(s.Items)+"]")
			} else {
				parts = append(parts, "list")
			}
		case "object":
			parts = append(parts, "dict")
		case "null":
			parts = append(parts, "None")
		}
	}
	switch len(parts) {
	case 0:
		return "Any"
	case 1:
		return parts[0]
	}
	return "Union[" + strings.Join(parts, ", ") + "]"
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
