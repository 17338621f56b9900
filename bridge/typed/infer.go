package typed

import (
	"slices"
	"sort"
	"sync"
)

// Results remembers the shape of each tool's structured results, so that a
// tool declaring no output schema still gets a return type, marked as
// inferred. Safe for concurrent use; a nil *Results remembers nothing.
type Results struct {
	mu   sync.Mutex
	seen map[[2]string]*observed
}

type observed struct {
	s *schema
	n int
}

// maxObserved bounds how many tools' results are remembered.
const maxObserved = 4096

// NewResults returns a Results that has seen nothing.
func NewResults() *Results { return &Results{seen: map[[2]string]*observed{}} }

// Observe records one structured result of server's tool.
func (r *Results) Observe(server, tool string, v any) {
	if r == nil || v == nil {
		return
	}
	s := inferSchema(v, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [2]string{server, tool}
	o := r.seen[key]
	if o == nil {
		if len(r.seen) >= maxObserved {
			return
		}
		r.seen[key] = &observed{s: s, n: 1}
		return
	}
	o.s = mergeSchemas(o.s, s, 0)
	o.n++
}

// inferred is the merged shape of the tool's results and how many were seen.
func (r *Results) inferred(server, tool string) (*schema, int) {
	if r == nil {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.seen[[2]string{server, tool}]; o != nil {
		return o.s, o.n
	}
	return nil, 0
}

// inferSchema describes a JSON value (as encoding/json decodes it into any)
// as a schema: objects with their keys, arrays with the merged shape of their
// first elements.
func inferSchema(v any, depth int) *schema {
	if depth > maxDepth {
		return &schema{}
	}
	switch v := v.(type) {
	case nil:
		return &schema{Type: "null"}
	case bool:
		return &schema{Type: "boolean"}
	case float64:
		if v == float64(int64(v)) {
			return &schema{Type: "integer"}
		}
		return &schema{Type: "number"}
	case string:
		return &schema{Type: "string"}
	case []any:
		s := &schema{Type: "array"}
		for i, x := range v {
			if i == 50 {
				break
			}
			if s.Items == nil {
				s.Items = inferSchema(x, depth+1)
			} else {
				s.Items = mergeSchemas(s.Items, inferSchema(x, depth+1), depth+1)
			}
		}
		return s
	case map[string]any:
		s := &schema{Type: "object", Properties: properties{byKey: map[string]*schema{}}}
		for k, x := range v {
			s.Properties.names = append(s.Properties.names, k)
			s.Properties.byKey[k] = inferSchema(x, depth+1)
		}
		sort.Strings(s.Properties.names)
		s.Required = append([]string(nil), s.Properties.names...)
		return s
	}
	return &schema{}
}

// mergeSchemas is a shape that both a and b fit: objects merge their keys (a
// key missing from either is optional), arrays their items, different types
// become alternatives.
func mergeSchemas(a, b *schema, depth int) *schema {
	ta, tb := a.Type, b.Type
	switch {
	case depth > maxDepth:
		return &schema{}
	case len(a.AnyOf) > 0:
		for i, alt := range a.AnyOf {
			if alt.Type == tb {
				a.AnyOf[i] = mergeSchemas(alt, b, depth+1)
				return a
			}
		}
		if len(a.AnyOf) < 8 {
			a.AnyOf = append(a.AnyOf, b)
		}
		return a
	case ta == "integer" && tb == "number", ta == "number" && tb == "integer":
		return &schema{Type: "number"}
	case ta != tb:
		return &schema{AnyOf: []*schema{a, b}}
	case ta == "array":
		switch {
		case a.Items == nil:
			a.Items = b.Items
		case b.Items != nil:
			a.Items = mergeSchemas(a.Items, b.Items, depth+1)
		}
		return a
	case ta == "object":
		inB := map[string]bool{}
		for _, k := range b.Properties.names {
			inB[k] = true
			if old, ok := a.Properties.byKey[k]; ok {
				a.Properties.byKey[k] = mergeSchemas(old, b.Properties.byKey[k], depth+1)
			} else {
				a.Properties.names = append(a.Properties.names, k)
				a.Properties.byKey[k] = b.Properties.byKey[k]
			}
		}
		var req []string
		for _, k := range a.Required {
			if inB[k] && slices.Contains(b.Required, k) {
				req = append(req, k)
			}
		}
		a.Required = req
		return a
	}
	return a
}
