// Package secret resolves the secrets that server definitions take by
// reference, ${keyring:SERVICE/ACCOUNT} from the OS keyring and ${cmd:COMMAND}
// from a command's output, and holds each in a [Value] that redacts itself:
// printed, logged, encoded or wrapped in an error it shows [Placeholder], so
// only the code that hands it to a server, which calls [Value.Reveal], sees it.
//
// A [List] of a server's values masks them in what the server sends back
// (tool results, its stderr, error messages) before anyone else sees it.
package secret

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"
)

// Placeholder is what a [Value] prints as, and what [List.Mask] writes in
// place of a secret.
const Placeholder = "[secret]"

// MinMasked is the length under which a value is not masked in what a server
// sends back: replacing every "abc" or "1" in a result would garble it and
// tell a reader the secret anyway.
const MinMasked = 6

// A Value is a secret. Its String, Format (every fmt verb), LogValue,
// MarshalJSON and MarshalText give [Placeholder]; only [Value.Reveal] gives
// the secret. The zero Value is the empty secret.
//
// It holds a pointer, so that even fmt's printing of a struct with an
// unexported Value field, which cannot call its methods, prints an address
// rather than the secret.
type Value struct {
	p *string
}

// New returns s as a secret.
func New(s string) Value { return Value{p: &s} }

// Reveal returns the secret. Call it only to hand the secret to the server
// that needs it.
func (v Value) Reveal() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// String returns [Placeholder].
func (v Value) String() string { return Placeholder }

// GoString returns [Placeholder].
func (v Value) GoString() string { return Placeholder }

// Format writes [Placeholder] for every verb (quoted for %q).
func (v Value) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", Placeholder)
		return
	}
	io.WriteString(f, Placeholder)
}

// LogValue implements [slog.LogValuer]: a logged Value is [Placeholder].
func (v Value) LogValue() slog.Value { return slog.StringValue(Placeholder) }

// MarshalJSON encodes [Placeholder], so a record that holds a Value cannot
// write it to a file.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(Placeholder) }

// MarshalText gives [Placeholder].
func (v Value) MarshalText() ([]byte, error) { return []byte(Placeholder), nil }

// A List is the secrets of one server, to mask in what it sends back.
type List []Value

// Add appends v to l unless it is empty or l holds it already.
func (l *List) Add(v Value) {
	if s := v.Reveal(); s != "" && !slices.ContainsFunc(*l, func(o Value) bool { return o.Reveal() == s }) {
		*l = append(*l, v)
	}
}

// maskable returns the values long enough to mask, longest first, so that a
// secret holding another is masked whole.
func (l List) maskable() []string {
	var out []string
	for _, v := range l {
		if s := v.Reveal(); len(s) >= MinMasked && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// Mask replaces every secret of l at least [MinMasked] bytes long in s by
// [Placeholder].
func (l List) Mask(s string) string {
	for _, v := range l.maskable() {
		s = strings.ReplaceAll(s, v, Placeholder)
	}
	return s
}

// MaskJSON replaces every secret of l at least [MinMasked] bytes long in the
// strings (keys and values) of the JSON document raw by [Placeholder], and
// reports whether it replaced any. Numbers and the JSON's structure are left
// alone, so the result is still valid JSON; base64 data (images, blobs) is
// not searched. JSON that does not parse is masked as text.
func (l List) MaskJSON(raw []byte) (masked []byte, changed bool) {
	vals := l.maskable()
	if !slices.ContainsFunc(vals, func(v string) bool { return jsonMayHold(raw, v) }) {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return []byte(l.Mask(string(raw))), true
	}
	out, err := json.Marshal(maskValue(doc, l.Mask))
	if err != nil {
		return []byte(l.Mask(string(raw))), true
	}
	return out, true
}

// jsonMayHold reports whether raw may hold v in a string once decoded: v
// is in it as it is, or raw has an escape that spells a character of v
// (`\/` a slash, `\"` a quote, "a\u0062c" is "abc"), or raw is not valid
// UTF-8 and v holds the character that decoding puts in its place. Escapes
// that spell no character of v, such as the \u003c and \n of most
// results, keep the document off the decode.
func jsonMayHold(raw []byte, v string) bool {
	if bytes.Contains(raw, []byte(v)) {
		return true
	}
	if strings.ContainsRune(v, utf8.RuneError) && !utf8.Valid(raw) {
		return true
	}
	var ascii [128]bool // the ASCII characters of v
	for i := range len(v) {
		if v[i] < utf8.RuneSelf {
			ascii[v[i]] = true
		}
	}
	for rest := raw; ; {
		i := bytes.IndexByte(rest, '\\')
		if i < 0 || i+1 == len(rest) {
			return false
		}
		c, n := unescaped(rest[i+1:])
		if c < 0 || (c < utf8.RuneSelf && ascii[c]) || (c >= utf8.RuneSelf && strings.ContainsRune(v, c)) || (c >= 0xd800 && c < 0xe000 && hasAstral(v)) {
			return true // c < 0: not an escape JSON knows; decode to be sure
		}
		rest = rest[i+1+n:]
	}
}

// unescaped is the character that the JSON escape after a backslash, e,
// spells, and the bytes it takes; a \u escape of half a surrogate pair gives
// that half. It returns -1 for what is not an escape.
func unescaped(e []byte) (c rune, n int) {
	switch e[0] {
	case '"', '\\', '/':
		return rune(e[0]), 1
	case 'b':
		return '\b', 1
	case 'f':
		return '\f', 1
	case 'n':
		return '\n', 1
	case 'r':
		return '\r', 1
	case 't':
		return '\t', 1
	case 'u':
		if len(e) < 5 {
			return -1, len(e)
		}
		for _, h := range e[1:5] {
			switch {
			case '0' <= h && h <= '9':
				c = c<<4 | rune(h-'0')
			case 'a' <= h|0x20 && h|0x20 <= 'f':
				c = c<<4 | rune(h|0x20-'a'+10)
			default:
				return -1, 1
			}
		}
		return c, 5
	}
	return -1, 1
}

// hasAstral reports whether s holds a character outside the Basic
// Multilingual Plane, which JSON spells as a pair of \u escapes.
func hasAstral(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r > 0xffff })
}

// maskValue applies mask to every string of a decoded JSON value.
func maskValue(v any, mask func(string) string) any {
	switch v := v.(type) {
	case string:
		return mask(v)
	case []any:
		for i, e := range v {
			v[i] = maskValue(e, mask)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[mask(k)] = maskValue(e, mask)
		}
		return out
	}
	return v
}
