// Package scan looks for tool poisoning in what an MCP server says of its
// tools before codebridge pins them: text aimed at the model rather than at a
// person (imperatives to the assistant, secrecy, "ignore previous
// instructions", markup such as <IMPORTANT>), references to credentials and
// private paths, other servers' tool names used to change how those tools
// behave (shadowing), places to send data to, invisible or misleading
// Unicode, and encoded blobs. It reads every string of a definition: the
// name, title and description, and every key and string value of its
// schemas at any depth (property names, descriptions, defaults, enums,
// titles, items, anyOf...), and a server's instructions.
//
// Each signal has a weight; a definition is held when the weights of what
// fired reach [Threshold], so that one word a benign tool has reason to say
// ("password", a URL, "you must provide") does not hold it, while the
// combinations published attacks use do. bridge/manifest calls it on every
// new or changed definition ([manifest.Store.Check]); docs/security.md
// ("Tool-poisoning scanner") gives its scores.
package scan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Finding is one signal that fired in a definition.
type Finding struct {
	// Code is a short stable reason code, such as "model-instruction" or
	// "credential-path" (see [Codes]).
	Code string `json:"code"`
	// Field is where it fired: "description", "name", "title",
	// "inputSchema.properties.path.description", a property's name
	// ("inputSchema.properties.X (name)"), "instructions"...
	Field string `json:"field"`
	// Excerpt is the text around the match, Go-quoted (every character
	// that does not print is escaped) and at most [MaxExcerpt] bytes
	// before quoting.
	Excerpt string `json:"excerpt"`
	// Weight is how much the signal counts towards [Threshold].
	Weight int `json:"weight"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s in %s: %s", f.Code, f.Field, f.Excerpt)
}

// Name is a tool of some server, as the scanner is told of the others a
// definition might shadow.
type Name struct {
	Server, Tool string
}

// Threshold is the total weight at which a definition is held.
const Threshold = 3

// MaxExcerpt bounds an excerpt, in bytes of the text it quotes.
const MaxExcerpt = 96

// Limits on what one definition can make the scanner read: text beyond
// them is not read, and reading stops there with a finding of its own
// (a definition that large is unusual and cannot be vetted whole).
const (
	maxText  = 256 << 10 // bytes of text over all fields
	maxDepth = 32        // nesting of schemas
	maxEach  = 3         // findings of one code kept per definition
)

// Tool scans t, a tool of server, for poisoning; others are the tools the
// gateway knows: another server's tool named with behavioural language is
// shadowing, the server's own are not. It
// returns nothing when the weights of what fired stay under [Threshold],
// else every finding, heaviest first.
func Tool(server string, t *mcp.Tool, others ...Name) []Finding {
	if t == nil {
		return nil
	}
	s := newScanner(server, others)
	s.tool(t)
	return s.result()
}

// tool reads every string of t.
func (s *scanner) tool(t *mcp.Tool) {
	s.text("name", t.Name, true)
	s.text("title", t.Title, false)
	s.text("description", t.Description, false)
	if t.Annotations != nil {
		s.text("annotations.title", t.Annotations.Title, false)
	}
	s.schema("inputSchema", t.InputSchema)
	s.schema("outputSchema", t.OutputSchema)
}

// Instructions scans the instructions a server gave in its initialize
// result, as [Tool] does a tool's description.
func Instructions(server, text string, others ...Name) []Finding {
	s := newScanner(server, others)
	s.text("instructions", text, false)
	return s.result()
}

// Total is what fs weigh together: for each group of codes, the weight of
// its heaviest finding, summed. A signal said three times counts once, and
// so do two that say what is there rather than what to do with it (a
// secret and a private path; an address and sending to it).
func Total(fs []Finding) int {
	heaviest := map[string]int{}
	for _, f := range fs {
		g := cmp.Or(group[f.Code], f.Code)
		heaviest[g] = max(heaviest[g], f.Weight)
	}
	n := 0
	for _, w := range heaviest {
		n += w
	}
	return n
}

// Summary is fs in one line for a message: each code with where it fired.
func Summary(fs []Finding) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, f.Code+" ("+f.Field+")")
	}
	return strings.Join(parts, ", ")
}

// group puts together the codes that count once between them ([Total]).
var group = map[string]string{
	"credential": "secret", "credential-path": "secret",
	"email-address": "destination", "send-to": "destination",
}

type scanner struct {
	server string
	others []Name          // the other servers' tools, distinctive names only
	own    map[string]bool // the server's own tools, lower case
	read   int
	found  []Finding
	count  map[string]int
}

func newScanner(server string, others []Name) *scanner {
	var mine []Name
	own := map[string]bool{}
	for _, o := range others {
		switch {
		case o.Server == server:
			own[strings.ToLower(o.Tool)] = true
		case distinctive(o.Tool):
			mine = append(mine, o)
		}
	}
	// A name the server's own tools have too means its own tool.
	mine = slices.DeleteFunc(mine, func(o Name) bool { return own[strings.ToLower(o.Tool)] })
	return &scanner{server: server, others: mine, own: own, count: map[string]int{}}
}

// distinctive reports whether a tool name is specific enough that its
// mention in another tool's text means that tool: it has a separator or a
// change of case (send_email, getUser), not a plain word (search).
func distinctive(name string) bool {
	if len(name) < 5 {
		return false
	}
	if strings.ContainsAny(name, "_-.") {
		return true
	}
	for i := 1; i < len(name); i++ {
		if name[i] >= 'A' && name[i] <= 'Z' && name[i-1] >= 'a' && name[i-1] <= 'z' {
			return true
		}
	}
	return false
}

func (s *scanner) add(code, field, excerpt string, weight int) {
	if s.count[code] >= maxEach {
		return
	}
	s.count[code]++
	s.found = append(s.found, Finding{Code: code, Field: field, Excerpt: quote(excerpt), Weight: weight})
}

// result keeps the findings when they reach the threshold, heaviest first
// (in the order found among equals).
func (s *scanner) result() []Finding {
	if Total(s.found) < Threshold {
		return nil
	}
	sort.SliceStable(s.found, func(i, j int) bool { return s.found[i].Weight > s.found[j].Weight })
	return s.found
}

// schema walks a JSON schema (whatever Go value holds it) and scans every
// key and every string in it.
func (s *scanner) schema(field string, v any) {
	if v == nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return
	}
	s.walk(field, generic, 0, false)
}

// walk scans v at path; names says v's keys are names a server chose
// (those of "properties", "$defs" and the like).
func (s *scanner) walk(path string, v any, depth int, names bool) {
	if depth > maxDepth {
		s.add("schema-too-deep", path, "", Threshold)
		return
	}
	switch v := v.(type) {
	case string:
		s.text(path, v, false)
	case []any:
		for i, e := range v {
			s.walk(path+"["+strconv.Itoa(i)+"]", e, depth+1, false)
		}
	case map[string]any:
		for _, k := range slices.Sorted(mapKeys(v)) {
			p := path + "." + k
			if names || !schemaKeyword[k] {
				s.text(p+" (name)", k, true)
			}
			s.walk(p, v[k], depth+1, nameKeyword[k])
		}
	}
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// nameKeyword are the schema keywords whose object's keys are names.
var nameKeyword = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}

// schemaKeyword are JSON Schema's own keywords: no need to read them as text.
var schemaKeyword = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`$schema $id $ref $anchor $comment $defs $dynamicRef $vocabulary type properties required
		description title default enum const examples items prefixItems additionalProperties patternProperties
		anyOf oneOf allOf not if then else minimum maximum exclusiveMinimum exclusiveMaximum minLength maxLength
		pattern format minItems maxItems uniqueItems contains minContains maxContains minProperties maxProperties
		dependentRequired dependentSchemas propertyNames definitions readOnly writeOnly deprecated nullable
		contentEncoding contentMediaType unevaluatedItems unevaluatedProperties multipleOf additionalItems`) {
		schemaKeyword[k] = true
	}
}

// quote is text Go-quoted, at most MaxExcerpt bytes of it.
func quote(text string) string {
	if len(text) > MaxExcerpt {
		cut := MaxExcerpt
		for cut > 0 && !isRuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return strconv.QuoteToGraphic(text)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// excerptAt is the text around text[i:j], within MaxExcerpt.
func excerptAt(text string, i, j int) string {
	pad := max(0, (MaxExcerpt-(j-i))/2)
	a, b := max(0, i-pad), min(len(text), j+pad)
	for a > 0 && !isRuneStart(text[a]) {
		a--
	}
	for b < len(text) && !isRuneStart(text[b]) {
		b++
	}
	out := text[a:b]
	if a > 0 {
		out = "…" + out
	}
	return out
}
