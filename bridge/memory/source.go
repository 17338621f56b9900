package memory

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A saved helper's source runs in every later session, before that
// session's code, so the host checks it, whatever the sandbox that sent it
// checked: [CheckSource] accepts exactly one top-level function definition,
//
//	def NAME(PARAMS) [-> SIMPLE]:
//	    BODY
//
// (or async def, or a body on the header's line), with no decorator and
// nothing else at the top level but blank lines and comments. The body may
// hold anything: it runs only when the helper is called. What runs at
// definition time is the parameters' defaults and annotations and the
// return annotation, so each of those must be SIMPLE:
//
//   - a number, optionally signed (-1, +2.5, 0x10, 1e-3, 2j);
//   - one or more adjacent strings, of any prefix but f ('a', r"\d", b'x');
//   - ... (Ellipsis);
//   - a name of ASCII letters, digits and _ that is not a keyword other than
//     None, True and False (int, str, None);
//   - such a name subscripted by SIMPLE items (list[str], dict[str, int]);
//   - a tuple, list, set or dict display of SIMPLE items ((), [1, 'a'], {});
//   - SIMPLE | SIMPLE (int | None).
//
// No calls, attribute lookups, other operators, lambdas, comprehensions,
// walrus or f-strings. Looking up a name and subscripting a builtin type
// run no code of the source's choosing: a session's namespace then holds
// only builtins, codebridge's globals and other checked helpers.
//
// The tokenizer follows Python 3.11 (f-strings are single tokens, as
// before 3.12). Later Pythons tokenize f-strings' fields as code, so an
// f-string whose fields hold a quote, a backslash or a # or do not close
// is refused, where the two tokenizations could disagree about its end.
// Carriage returns (which Python reads as line breaks), NUL bytes and
// invalid UTF-8 are refused too.

// CheckTool validates a saved helper: a name that is not reserved and a
// source that [CheckSource] accepts.
func CheckTool(name, source string) error {
	if err := checkToolName(name); err != nil {
		return err
	}
	if why := reserved(name); why != "" {
		return bad("a saved helper cannot be named %q: %s. Choose another name", name, why)
	}
	if strings.TrimSpace(source) == "" {
		return bad("saved helper %q has no source", name)
	}
	return CheckSource(name, source)
}

// CheckSource checks that source is exactly one top-level def of name, as
// the comment above says.
func CheckSource(name, source string) error {
	refuse := func(format string, args ...any) error {
		return bad("saved helper %q: %s. save_tool saves one function defined at the top level with def, without decorators; "+
			"its defaults and annotations may only be literals and names", name, fmt.Sprintf(format, args...))
	}
	switch {
	case !utf8.ValidString(source):
		return refuse("the source is not valid UTF-8")
	case strings.ContainsRune(source, 0):
		return refuse("the source has a NUL byte")
	case strings.ContainsRune(source, '\r'):
		return refuse("the source has a carriage return: end lines with \\n only")
	}
	lines, err := tokenize(source)
	if err != nil {
		return refuse("%v", err)
	}
	if len(lines) == 0 {
		return refuse("the source has no statement")
	}
	first := lines[0]
	if first.indent != 0 {
		return refuse("the first statement is indented")
	}
	p := &header{toks: first.toks}
	if p.is(opTok, "@") {
		return refuse("decorators are not saved (they run when the helper is defined)")
	}
	if p.is(nameTok, "async") {
		p.i++
	}
	if !p.is(nameTok, "def") {
		return refuse("the source must start with def %s(...), not %q", name, p.text())
	}
	p.i++
	if !p.is(nameTok, name) {
		return refuse("the source defines %q, not %q", p.text(), name)
	}
	p.i++
	if err := p.signature(); err != nil {
		return refuse("in the header of %s: %v", name, err)
	}
	oneLine := p.i < len(p.toks) // the body follows the colon on the header's line
	switch {
	case oneLine && len(lines) > 1:
		return refuse("line %d: nothing may follow a function written on one line", lines[1].line)
	case !oneLine && len(lines) == 1:
		return refuse("the function has no body")
	}
	for _, l := range lines[1:] {
		if l.indent == 0 {
			return refuse("line %d: a second top-level statement (%q); only the one def is saved", l.line, l.toks[0].text)
		}
	}
	return nil
}

// tokKind is the kind of a token; only what the header check needs.
type tokKind int

const (
	nameTok tokKind = iota
	numberTok
	stringTok  // any string but an f-string
	fstringTok // an f-string
	opTok      // an operator or a bracket
)

type token struct {
	kind tokKind
	text string
}

// logical is one logical line: its tokens, the first physical line's
// number, and its indentation (0 only for a top-level statement).
type logical struct {
	line   int
	indent int
	toks   []token
}

// stringPrefixes are Python's string prefixes, lower-cased.
var stringPrefixes = []string{"r", "u", "f", "b", "br", "rb", "fr", "rf"}

// operators are the operators of more than one character the header check
// tells apart (the others need not be split correctly).
var operators = []string{"...", "**=", "//=", ">>=", "<<=", "->", ":=", "**", "//", "==", "!=", "<=", ">=", "<<", ">>"}

// tokenize splits src into logical lines as Python 3.11's tokenizer does:
// comments and blank lines dropped, lines joined inside brackets and after
// a backslash, strings (triple-quoted ones across lines) single tokens.
// It takes time linear in len(src).
func tokenize(src string) ([]logical, error) {
	var (
		lines []logical
		cur   *logical
		depth int // open brackets
		line  = 1
		i     int
		bol   = true // at the beginning of a logical line
	)
	for i < len(src) {
		if bol {
			// Indentation as CPython measures it: a form feed resets it.
			col := 0
			for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\f') {
				switch src[i] {
				case ' ':
					col++
				case '\t':
					col = (col/8 + 1) * 8
				case '\f':
					col = 0
				}
				i++
			}
			if i == len(src) {
				break
			}
			switch src[i] {
			case '#':
				for i < len(src) && src[i] != '\n' {
					i++
				}
				continue
			case '\n':
				i++
				line++
				continue
			}
			lines = append(lines, logical{line: line, indent: col})
			cur = &lines[len(lines)-1]
			bol = false
		}
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\\':
			if i+1 >= len(src) || src[i+1] != '\n' {
				return nil, fmt.Errorf("line %d: a backslash outside a string must end its line", line)
			}
			i += 2
			line++
		case c == '\n':
			i++
			line++
			if depth == 0 {
				bol = true
			}
		case c == '\'' || c == '"':
			end, nl, err := scanString(src, i, line)
			if err != nil {
				return nil, err
			}
			cur.toks = append(cur.toks, token{stringTok, src[i:end]})
			i, line = end, line+nl
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && slices.Contains(stringPrefixes, strings.ToLower(word)) {
				end, nl, err := scanString(src, j, line)
				if err != nil {
					return nil, err
				}
				kind := stringTok
				if strings.ContainsAny(word, "fF") {
					kind = fstringTok
					if err := checkFields(src[j:end], line); err != nil {
						return nil, err
					}
				}
				cur.toks = append(cur.toks, token{kind, src[i:end]})
				i, line = end, line+nl
				continue
			}
			cur.toks = append(cur.toks, token{nameTok, word})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isIdentPart(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[i:j]), "0x")) {
				j++
			}
			cur.toks = append(cur.toks, token{numberTok, src[i:j]})
			i = j
		default:
			op := src[i : i+1]
			for _, o := range operators {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth--; depth < 0 {
					return nil, fmt.Errorf("line %d: %q closes no bracket", line, op)
				}
			}
			cur.toks = append(cur.toks, token{opTok, op})
			i += len(op)
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("a bracket is not closed at the end of the source")
	}
	return lines, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// scanString returns the end of the string whose quote is at src[i], and
// how many line breaks it holds. A backslash escapes the next character in
// every string, raw ones too (for finding the end).
func scanString(src string, i, line int) (end, newlines int, err error) {
	q := src[i]
	triple := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	j := i + 1
	if triple {
		j = i + 3
	}
	for j < len(src) {
		switch c := src[j]; {
		case c == '\\':
			if j+1 < len(src) && src[j+1] == '\n' {
				newlines++
			}
			j += 2
			continue
		case c == '\n':
			if !triple {
				return 0, 0, fmt.Errorf("line %d: a string is not closed on its line", line)
			}
			newlines++
		case c == q && !triple:
			return j + 1, newlines, nil
		case c == q && strings.HasPrefix(src[j:], strings.Repeat(string(q), 3)):
			return j + 3, newlines, nil
		}
		j++
	}
	return 0, 0, fmt.Errorf("line %d: a string is not closed", line)
}

// checkFields refuses an f-string (from its opening quote on) whose
// replacement fields hold a quote, a backslash or a # other than in a
// simple quoted string, or do not close: Python 3.12 and later could end
// such an f-string elsewhere than 3.11 does.
func checkFields(s string, line int) error {
	q := s[0]
	n := 1
	if strings.HasPrefix(s, strings.Repeat(string(q), 3)) {
		n = 3
	}
	body := s[n : len(s)-n]
	depth := 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case depth == 0 && (c == '{' || c == '}') && i+1 < len(body) && body[i+1] == c:
			i++ // {{ or }}
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth < 0 {
				return fmt.Errorf("line %d: an f-string has a single '}'", line)
			}
		case depth > 0 && (c == '\\' || c == '#'):
			return fmt.Errorf("line %d: an f-string's field holds %q", line, c)
		case depth > 0 && (c == '\'' || c == '"'):
			end := strings.IndexByte(body[i+1:], c)
			if end < 0 || strings.ContainsAny(body[i+1:i+1+end], "\\\n'\"") {
				return fmt.Errorf("line %d: an f-string's field holds a quote it does not close", line)
			}
			i += end + 1
		}
	}
	if depth != 0 {
		return fmt.Errorf("line %d: an f-string's field is not closed", line)
	}
	return nil
}

// header parses a def's header after its name: the parameters, the return
// annotation and the colon.
type header struct {
	toks []token
	i    int
}

// maxNesting bounds how deeply brackets nest in a default or annotation.
const maxNesting = 32

func (p *header) is(kind tokKind, text string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == kind && p.toks[p.i].text == text
}

func (p *header) op(text string) bool {
	if p.is(opTok, text) {
		p.i++
		return true
	}
	return false
}

func (p *header) text() string {
	if p.i >= len(p.toks) {
		return "end of line"
	}
	return p.toks[p.i].text
}

func (p *header) expect(text string) error {
	if !p.op(text) {
		return fmt.Errorf("expected %q, found %q", text, p.text())
	}
	return nil
}

// signature parses (PARAMS) [-> SIMPLE] :
func (p *header) signature() error {
	if err := p.expect("("); err != nil {
		return err
	}
	for !p.op(")") {
		if err := p.param(); err != nil {
			return err
		}
		if !p.op(",") {
			if err := p.expect(")"); err != nil {
				return err
			}
			break
		}
	}
	if p.op("->") {
		if err := p.simple(0); err != nil {
			return fmt.Errorf("return annotation: %w", err)
		}
	}
	return p.expect(":")
}

// param parses one parameter: /, *, *NAME[: SIMPLE], **NAME[: SIMPLE] or
// NAME[: SIMPLE][= SIMPLE].
func (p *header) param() error {
	if p.op("/") {
		return nil
	}
	star := ""
	switch {
	case p.op("*"):
		star = "*"
		if p.is(opTok, ",") || p.is(opTok, ")") {
			return nil
		}
	case p.op("**"):
		star = "**"
	}
	if !p.identifier() {
		return fmt.Errorf("expected a parameter's name, found %q", p.text())
	}
	name := p.toks[p.i].text
	p.i++
	if p.op(":") {
		if err := p.simple(0); err != nil {
			return fmt.Errorf("annotation of %s: %w", name, err)
		}
	}
	if star == "" && p.op("=") {
		if err := p.simple(0); err != nil {
			return fmt.Errorf("default of %s: %w", name, err)
		}
	}
	return nil
}

// identifier reports whether the next token is an ASCII name that is not
// a keyword.
func (p *header) identifier() bool {
	if p.i >= len(p.toks) || p.toks[p.i].kind != nameTok {
		return false
	}
	w := p.toks[p.i].text
	for j := 0; j < len(w); j++ {
		if w[j] >= 0x80 {
			return false
		}
	}
	return !slices.Contains(keywords, w)
}

// simple parses SIMPLE ('|' SIMPLE)*.
func (p *header) simple(nesting int) error {
	if nesting > maxNesting {
		return fmt.Errorf("brackets nest more than %d deep", maxNesting)
	}
	for {
		if err := p.term(nesting); err != nil {
			return err
		}
		if !p.op("|") {
			return nil
		}
	}
}

func (p *header) term(nesting int) error {
	if p.i >= len(p.toks) {
		return fmt.Errorf("expected a literal or a name, found the end of the line")
	}
	t := p.toks[p.i]
	p.i++
	var err error
	switch {
	case t.kind == opTok && (t.text == "-" || t.text == "+"):
		if p.i >= len(p.toks) || p.toks[p.i].kind != numberTok {
			return fmt.Errorf("%s may only sign a number", t.text)
		}
		p.i++
	case t.kind == numberTok, t.kind == opTok && t.text == "...":
	case t.kind == stringTok:
		for p.i < len(p.toks) && p.toks[p.i].kind == stringTok {
			p.i++
		}
		if p.i < len(p.toks) && p.toks[p.i].kind == fstringTok {
			return fmt.Errorf("f-strings run code: use a plain string")
		}
	case t.kind == fstringTok:
		return fmt.Errorf("f-strings run code: use a plain string")
	case t.kind == nameTok:
		p.i--
		if !p.identifier() && t.text != "None" && t.text != "True" && t.text != "False" {
			return fmt.Errorf("%q is not a literal or a plain name", t.text)
		}
		p.i++
		if p.op("[") {
			err = p.items(nesting+1, "]", false)
		}
	case t.kind == opTok && t.text == "(":
		err = p.items(nesting+1, ")", false)
	case t.kind == opTok && t.text == "[":
		err = p.items(nesting+1, "]", false)
	case t.kind == opTok && t.text == "{":
		err = p.items(nesting+1, "}", true)
	default:
		return fmt.Errorf("%q is not a literal or a name: defaults and annotations run when the helper is defined", t.text)
	}
	if err != nil {
		return err
	}
	if p.is(opTok, ".") || p.is(opTok, "(") || p.is(opTok, "[") {
		return fmt.Errorf("%q after a literal or name runs code: only literals and names are kept", p.text())
	}
	return nil
}

// items parses SIMPLE items separated by commas up to close; in a dict
// display (dict), an item may be SIMPLE: SIMPLE.
func (p *header) items(nesting int, close string, dict bool) error {
	for !p.op(close) {
		if err := p.simple(nesting); err != nil {
			return err
		}
		if dict && p.op(":") {
			if err := p.simple(nesting); err != nil {
				return err
			}
		}
		if !p.op(",") {
			return p.expect(close)
		}
	}
	return nil
}
