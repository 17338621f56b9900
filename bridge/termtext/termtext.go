// Package termtext makes text that someone else wrote safe to print on a
// person's terminal. Names, descriptions, sources and errors come from
// sandboxed code, downstream servers and project files; printed as they
// are, a newline forges a table row, a carriage return overwrites one, an
// ANSI escape clears the screen or hides what follows, OSC 52 writes the
// clipboard, and a bidirectional override reorders the line. [Line] and
// [Lines] show every such character as an escape instead.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line is s as one line or table cell: every character that does not
// print is written as an escape (\n, \t, \r, \x1b, \u202e, and \xff for a
// byte that is not UTF-8); the rest, spaces included, is kept.
func Line(s string) string { return escape(s, false) }

// Lines is s as lines of text, such as source code or a program's output:
// as [Line], but newlines and tabs are kept.
func Lines(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	if printable(s, lines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'), prints(r):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

// prints reports whether r shows as itself: a letter, mark, number,
// punctuation, symbol or space, not a control, format (bidirectional
// overrides, zero-width characters), separator, private or unassigned
// character.
func prints(r rune) bool { return r != utf8.RuneError && unicode.IsGraphic(r) }

// printable reports whether s needs no escape.
func printable(s string, lines bool) bool {
	for _, r := range s {
		if !prints(r) && !(lines && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}
