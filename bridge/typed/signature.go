package typed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// schema is the part of a JSON Schema that Python signatures need.
type schema struct {
	Type                 any                `json:"type"`
	Properties           properties         `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"items"`
	Enum                 []any              `json:"enum"`
	Const                json.RawMessage    `json:"const"`
	AnyOf                []*schema          `json:"anyOf"`
	OneOf                []*schema          `json:"oneOf"`
	Ref                  string             `json:"$ref"`
	Defs                 map[string]*schema `json:"$defs"`
	Definitions          map[string]*schema `json:"definitions"`
	Default              json.RawMessage    `json:"default"`
	Description          string             `json:"description"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
}

// properties are a schema's properties in the order of the JSON text (for
// tools listed by a client that decoded their schemas into maps, that order
// is alphabetical).
type properties struct {
	names []string
	byKey map[string]*schema
}

func (p *properties) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("properties: want an object")
	}
	p.byKey = map[string]*schema{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var s schema
		if err := dec.Decode(&s); err != nil {
			return err
		}
		if _, dup := p.byKey[name]; !dup {
			p.names = append(p.names, name)
		}
		p.byKey[name] = &s
	}
	return nil
}

func decodeSchema(v any) *schema {
	if v == nil {
		return nil
	}
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

// ParamNames lists a tool's parameter names, for search.
func ParamNames(t *mcp.Tool) []string {
	s := decodeSchema(t.InputSchema)
	if s == nil {
		return nil
	}
	names := append([]string(nil), s.Properties.names...)
	sort.Strings(names)
	return names
}

// Doc is a tool's Python rendering: a one-line signature, the
// parameters the sandbox checks calls against, and a stub (the TypedDicts the
// signature names, then the function with its docstring).
type Doc struct {
	Signature string
	Params    []protocol.Param
	Stub      string
}

// renderTool renders t, known to code as alias. inferred, if non-nil, is
// the type of the structured results seen so far (n of them), used when the
// tool declares no output schema.
func renderTool(alias string, t *mcp.Tool, inferred *schema, n int) Doc {
	in := decodeSchema(t.InputSchema)
	r := &renderer{root: in, names: map[string]string{}}
	var doc Doc
	var params, args []string
	if in != nil {
		required := map[string]bool{}
		for _, name := range in.Required {
			required[name] = true
		}
		// Required first, each group in the server's order.
		var names []string
		for _, req := range []bool{true, false} {
			for _, name := range in.Properties.names {
				if required[name] == req {
					names = append(names, name)
				}
			}
		}
		for _, name := range names {
			p := in.Properties.byKey[name]
			pa := discovery.Alias(name)
			ty := r.typ(p, camel(pa), 0)
			param := protocol.Param{Name: name, Alias: pa, Type: ty, Required: required[name]}
			text := pa + ": " + ty
			switch {
			case required[name]:
			case len(p.Default) > 0:
				param.Default = p.Default
				text += " = " + pyLiteral(p.Default)
			default:
				text += " = None"
			}
			doc.Params = append(doc.Params, param)
			params = append(params, text)
			if d := FirstLine(docText(p.Description)); d != "" {
				args = append(args, fmt.Sprintf("    %s: %s", pa, d))
			}
		}
	}
	ret, retNote := "Any", ""
	if out := decodeSchema(t.OutputSchema); out != nil {
		rr := &renderer{root: out, names: r.names, classes: r.classes}
		ret = rr.typ(out, camel(alias)+"Result", 0)
		r.classes = rr.classes
	} else if inferred != nil {
		ret = r.typ(inferred, camel(alias)+"Result", 0)
		retNote = fmt.Sprintf("inferred from %d structured %s seen so far; the server declares no output schema", n, pluralWord(n, "result"))
	}
	sig := alias + "("
	if len(params) > 0 {
		sig += "*, " + strings.Join(params, ", ")
	}
	sig += ") -> " + ret
	doc.Signature = sig

	var b strings.Builder
	for _, c := range r.classes {
		b.WriteString(c + "\n\n")
	}
	fmt.Fprintf(&b, "def %s:\n    \"\"\"", sig)
	desc := strings.TrimSpace(docText(t.Description))
	first, rest, _ := strings.Cut(desc, "\n")
	b.WriteString(first)
	if rest != "" {
		b.WriteString("\n" + indentLines(rest, "    "))
	}
	if len(args) > 0 {
		b.WriteString("\n\n    Args:\n" + indentLines(strings.Join(args, "\n"), "    "))
	}
	if retNote != "" {
		b.WriteString("\n\n    Returns:\n        " + ret + " (" + retNote + ")")
	}
	b.WriteString("\n    \"\"\"")
	doc.Stub = b.String()
	return doc
}

// renderer turns schemas into Python types, collecting the TypedDicts the
// types name.
type renderer struct {
	root    *schema
	names   map[string]string // class name → its body, to reuse or rename
	refs    map[string]string // $ref → its class name, set before its body is rendered
	classes []string
	types   int // calls of typ so far, bounded by maxTypes
}

// ref is the type a $ref names. An object definition becomes a TypedDict
// named after it, declared once; a reference back to it from inside (a
// recursive type) uses the name.
func (r *renderer) ref(ref, hint string, depth int) string {
	if name, ok := r.refs[ref]; ok {
		return name
	}
	target := r.resolve(ref)
	if target == nil || len(target.Properties.names) == 0 {
		return r.typ(target, refName(ref, hint), depth+1)
	}
	name := r.freeName(refName(ref, hint))
	r.names[name] = "" // reserved while its fields are rendered
	if r.refs == nil {
		r.refs = map[string]string{}
	}
	r.refs[ref] = name
	r.declare(name, r.fields(target, name, depth+1))
	return name
}

// freeName is hint, or hint with a number when a class has that name.
func (r *renderer) freeName(hint string) string {
	hint = discovery.Alias(hint) // not a keyword (None, True), nor empty
	name := hint
	for i := 2; ; i++ {
		if _, taken := r.names[name]; !taken {
			return name
		}
		name = fmt.Sprintf("%s%d", hint, i)
	}
}

// maxDepth bounds nesting and $ref chains, cycles included.
const maxDepth = 8

// maxTypes bounds the types rendered for one schema: alternatives that each
// refer back to the root ({"anyOf":[{"$ref":"#"},...]}) multiply at every
// level of maxDepth, so a schema of a few hundred bytes took minutes.
const maxTypes = 5000

// typ is the Python type of s; hint names a TypedDict it needs.
func (r *renderer) typ(s *schema, hint string, depth int) string {
	r.types++
	if s == nil || depth > maxDepth || r.types > maxTypes {
		return "Any"
	}
	if s.Ref != "" {
		return r.ref(s.Ref, hint, depth)
	}
	if len(s.Const) > 0 {
		return "Literal[" + pyLiteral(s.Const) + "]"
	}
	if len(s.Enum) > 0 {
		lits := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			raw, _ := json.Marshal(e)
			lits[i] = pyLiteral(raw)
		}
		return "Literal[" + strings.Join(lits, ", ") + "]"
	}
	var parts []string
	for _, alt := range append(append([]*schema(nil), s.AnyOf...), s.OneOf...) {
		parts = append(parts, r.typ(alt, hint, depth+1))
	}
	for _, ty := range typeNames(s) {
		parts = append(parts, r.basic(s, ty, hint, depth))
	}
	return union(parts)
}

// basic is the Python type of s as JSON type ty.
func (r *renderer) basic(s *schema, ty, hint string, depth int) string {
	switch ty {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "null":
		return "None"
	case "array":
		if s.Items == nil {
			return "list[Any]"
		}
		return "list[" + r.typ(s.Items, hint+"Item", depth+1) + "]"
	case "object":
		if len(s.Properties.names) > 0 {
			return r.typedDict(s, hint, depth)
		}
		if extra := decodeRaw(s.AdditionalProperties); extra != nil {
			return "dict[str, " + r.typ(extra, hint+"Value", depth+1) + "]"
		}
		return "dict[str, Any]"
	}
	return "Any"
}

// typedDict declares a TypedDict for object schema s and returns its name:
// hint, unless a different TypedDict has that name already.
func (r *renderer) typedDict(s *schema, hint string, depth int) string {
	fields := r.fields(s, hint, depth)
	body := shape(fields)
	for name, old := range r.names {
		if old == body {
			return name // the same shape as one already declared
		}
	}
	hint = discovery.Alias(hint) // not a keyword (None, True), nor empty
	name := hint
	for i := 2; ; i++ {
		old, taken := r.names[name]
		if !taken {
			break
		}
		if old == body {
			return name // the same shape again
		}
		name = fmt.Sprintf("%s%d", hint, i)
	}
	r.declare(name, fields)
	return name
}

type field struct{ name, typ, desc string }

// shape is fields as one string, to tell TypedDicts of the same shape; each
// part is quoted, so that no key (which may hold any character) can pass
// for another shape.
func shape(fields []field) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(strconv.Quote(f.name) + " " + strconv.Quote(f.typ) + " " + strconv.Quote(f.desc) + "\n")
	}
	return b.String()
}

// fields renders the fields of object schema s, whose TypedDict is hint.
func (r *renderer) fields(s *schema, hint string, depth int) []field {
	required := map[string]bool{}
	for _, name := range s.Required {
		required[name] = true
	}
	var fields []field
	for _, name := range s.Properties.names {
		p := s.Properties.byKey[name]
		ty := r.typ(p, hint+camel(discovery.Alias(name)), depth+1)
		if !required[name] {
			ty = "NotRequired[" + ty + "]"
		}
		fields = append(fields, field{name, ty, FirstLine(p.Description)})
	}
	return fields
}

// declare adds the TypedDict name with fields: a class, or the functional
// form when a key is not a Python name.
func (r *renderer) declare(name string, fields []field) {
	r.names[name] = shape(fields)
	functional := false
	for _, f := range fields {
		functional = functional || !isIdentifier(f.name)
	}
	var lines []string
	for _, f := range fields {
		key, sep := f.name+": ", ""
		if functional {
			key, sep = strconv.Quote(f.name)+": ", ","
		}
		line := "    " + key + f.typ + sep
		if d := strings.ReplaceAll(strings.ToValidUTF8(f.desc, "\uFFFD"), "\x00", ""); d != "" {
			if len(d) > 80 {
				cut := 77
				for cut > 0 && !utf8.RuneStart(d[cut]) {
					cut--
				}
				d = d[:cut] + "..."
			}
			line += "  # " + d
		}
		lines = append(lines, line)
	}
	if functional {
		r.classes = append(r.classes, fmt.Sprintf("%s = TypedDict(%q, {\n%s\n})", name, name, strings.Join(lines, "\n")))
	} else {
		r.classes = append(r.classes, fmt.Sprintf("class %s(TypedDict):\n%s", name, strings.Join(lines, "\n")))
	}
}

// resolve follows a local $ref (#/$defs/X, #/definitions/X) in the root.
func (r *renderer) resolve(ref string) *schema {
	if r.root == nil {
		return nil
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if ok {
		return r.root.Defs[name]
	}
	if name, ok = strings.CutPrefix(ref, "#/definitions/"); ok {
		return r.root.Definitions[name]
	}
	if ref == "#" {
		return r.root
	}
	return nil
}

func refName(ref, hint string) string {
	if i := strings.LastIndexByte(ref, '/'); i >= 0 && i+1 < len(ref) {
		return camel(discovery.Alias(ref[i+1:]))
	}
	return hint
}

func typeNames(s *schema) []string {
	switch v := s.Type.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	if len(s.Properties.names) > 0 {
		return []string{"object"}
	}
	if s.Items != nil {
		return []string{"array"}
	}
	return nil
}

// union joins types with |, once each, None last.
func union(parts []string) string {
	var out []string
	none := false
	seen := map[string]bool{}
	for _, p := range parts {
		switch {
		case p == "None":
			none = true
		case p == "Any":
			return "Any"
		case !seen[p]:
			seen[p] = true
			out = append(out, p)
		}
	}
	if none {
		out = append(out, "None")
	}
	if len(out) == 0 {
		return "Any"
	}
	return strings.Join(out, " | ")
}

func decodeRaw(raw json.RawMessage) *schema {
	if len(raw) == 0 || raw[0] != '{' {
		return nil // absent, or a boolean
	}
	var s schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}

// pyLiteral writes a JSON value as a Python literal.
func pyLiteral(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "..."
	}
	return pyValue(v)
}

func pyValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return strconv.Quote(v)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = pyValue(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ": " + pyValue(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "..."
}

// camel turns an identifier into a class-name part: entity_type → EntityType.
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isIdentifier reports whether s can be a Python name as it is.
func isIdentifier(s string) bool { return discovery.Alias(s) == s }

// docText is s as it can stand inside a """docstring""": valid UTF-8,
// backslashes escaped (no invalid escape such as \x or \N), no closing
// quotes, no NUL (which Python source cannot hold), and \n for line breaks.
func docText(s string) string { return docEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

var docEscaper = strings.NewReplacer(`\`, `\\`, `"""`, `'''`, "\x00", "", "\r\n", "\n", "\r", "\n")

func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

func pluralWord(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

// FirstLine is the first line of a description, trimmed: what summaries
// and signatures show of it.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 { // Python ends a line at either
		s = strings.TrimSpace(s[:i])
	}
	return s
}
