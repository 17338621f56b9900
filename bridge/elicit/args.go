package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrCannotShow is returned, wrapped, when a confirmation cannot show a
// call's arguments as they would be sent: they repeat a key, or they have
// more keys than the question can show. The call must not run.
var ErrCannotShow = errors.New("the arguments cannot be shown to the person for approval")

// Canonical returns a tool call's arguments, a JSON object, in the one form
// a confirmation shows and the call then sends: no insignificant space,
// each object's keys sorted, numbers as written, and every character of a
// string that does not print (controls, bidirectional and other format
// characters, line separators) written as a \u escape. It refuses, with
// an error wrapping [ErrCannotShow], JSON that is not an object and an
// object that names a key twice at any depth: parsers differ on which one
// counts, so the person could approve one value and the server read the
// other.
func Canonical(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: they are not JSON: %v", ErrCannotShow, err)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: they are not a JSON object", ErrCannotShow)
	}
	if err := canonicalValue(&b, dec, tok, "the arguments", 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: there is more after the JSON object", ErrCannotShow)
	}
	return b.Bytes(), nil
}

// maxDepth bounds how deeply [Canonical] nests arrays and objects.
const maxDepth = 1000

// canonicalValue writes the value that starts with tok, at path and depth,
// to b.
func canonicalValue(b *bytes.Buffer, dec *json.Decoder, tok json.Token, path string, depth int) error {
	switch v := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return fmt.Errorf("%w: they nest arrays and objects more than %d deep", ErrCannotShow, maxDepth)
		}
		switch v {
		case '{':
			return canonicalObject(b, dec, path, depth+1)
		case '[':
			b.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				next, err := dec.Token()
				if err != nil {
					return fmt.Errorf("%w: they are not JSON: %v", ErrCannotShow, err)
				}
				if err := canonicalValue(b, dec, next, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%w: they are not JSON: %v", ErrCannotShow, err)
			}
			b.WriteByte(']')
		}
	case string:
		writeString(b, v)
	case json.Number:
		b.WriteString(string(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// canonicalObject writes the object whose '{' was read, at path and depth,
// with its keys sorted.
func canonicalObject(b *bytes.Buffer, dec *json.Decoder, path string, depth int) error {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: they are not JSON: %v", ErrCannotShow, err)
		}
		key := tok.(string) // the decoder allows nothing else here
		if seen[key] {
			return fmt.Errorf("%w: the key %s appears twice in %s: name each key once", ErrCannotShow, quote(key), path)
		}
		seen[key] = true
		next, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: they are not JSON: %v", ErrCannotShow, err)
		}
		var v bytes.Buffer
		if err := canonicalValue(&v, dec, next, path+"["+quote(key)+"]", depth); err != nil {
			return err
		}
		members = append(members, member{key, v.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: they are not JSON: %v", ErrCannotShow, err)
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, m.key)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return nil
}

// quote is s as a canonical JSON string.
func quote(s string) string {
	var b bytes.Buffer
	writeString(&b, s)
	return b.String()
}

// writeString writes s to b as a JSON string whose every character prints:
// the quote, the backslash and what does not print are escaped.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s { // the decoder made s valid UTF-8
		switch {
		case r == '"', r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsGraphic(r) && r != utf8.RuneError:
			b.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16Pair(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}

// utf16Pair is the UTF-16 surrogate pair of r, above U+FFFF.
func utf16Pair(r rune) (hi, lo rune) {
	r -= 0x10000
	return 0xD800 + r>>10&0x3FF, 0xDC00 + r&0x3FF
}

// maxShown bounds the arguments shown in a question, in bytes.
const maxShown = 1000

// minValue is the fewest bytes of each value a question shows; arguments
// whose keys leave less cannot be shown.
const minValue = 12

// cutMark ends a value that was cut to fit.
const cutMark = "…"

// showArgs is canon, arguments as [Canonical] returns them, as a question
// shows them in at most budget bytes (more only by the cut marks): whole
// when they fit, otherwise one line per top-level key, each with its value
// cut on its own to its share of the budget, so that no key hides behind
// another's long value. When even that does not fit, it refuses with an
// error wrapping [ErrCannotShow].
func showArgs(canon json.RawMessage, budget int) (string, error) {
	if len(canon) <= budget {
		return string(canon), nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(canon, &members); err != nil {
		return "", fmt.Errorf("%w: %v", ErrCannotShow, err)
	}
	type line struct {
		name  string
		key   string // quoted
		value string // canonical JSON
		shown int    // bytes of value shown
	}
	lines := make([]*line, 0, len(members))
	avail := budget
	for k, v := range members {
		l := &line{name: k, key: quote(k), value: string(v)}
		lines = append(lines, l)
		avail -= len("\n  : ") + len(l.key)
	}
	if avail < len(lines)*minValue {
		return "", fmt.Errorf("%w: %d keys (%d bytes of them) leave less than %d bytes of each value in a question of %d bytes",
			ErrCannotShow, len(lines), budget-avail, minValue, budget)
	}
	// Fill the shortest values first; those longer than an equal share of
	// what is left get that share.
	byLen := slices.Clone(lines)
	slices.SortFunc(byLen, func(a, b *line) int { return len(a.value) - len(b.value) })
	for i, l := range byLen {
		l.shown = min(len(l.value), avail/(len(byLen)-i))
		avail -= l.shown
	}
	slices.SortFunc(lines, func(a, b *line) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n  " + l.key + ": ")
		if l.shown == len(l.value) {
			b.WriteString(l.value)
			continue
		}
		cut := l.shown
		for cut > 0 && !utf8.RuneStart(l.value[cut]) {
			cut--
		}
		b.WriteString(l.value[:cut] + cutMark)
	}
	return b.String(), nil
}

// MaxShownSource bounds the source of a helper that [Session.ConfirmSave]
// shows, in bytes: it shows a source whole or not at all.
const MaxShownSource = 8 << 10

// sourceGutter starts each line of a source that a question shows.
const sourceGutter = "\n  | "

// showSource is src, a helper's source, as a question shows it: each line
// after [sourceGutter], so that none passes for the question's own text, and
// every character that does not print (controls, bidirectional and other
// format characters) but the tab written as a \u escape, as [Canonical]
// writes them. A source over budget bytes is refused with an error wrapping
// [ErrCannotShow]: the person could not see all of what they allow.
func showSource(src string, budget int) (string, error) {
	if len(src) > budget {
		return "", fmt.Errorf("%w: the source is %d bytes, more than the %d a question shows whole", ErrCannotShow, len(src), budget)
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		b.WriteString(sourceGutter)
		for _, r := range line {
			switch {
			case r == '\t' || unicode.IsGraphic(r) && r != utf8.RuneError:
				b.WriteRune(r)
			case r > 0xFFFF:
				hi, lo := utf16Pair(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			default:
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	return b.String(), nil
}
