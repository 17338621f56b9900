package discovery

import (
	"strconv"
	"strings"
)

// pythonKeywords are the hard keywords of Python 3.9 and later. Soft keywords
// (match, case, type, _) are valid identifiers and need no change.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true,
	"assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// Alias turns a server or tool name into a valid Python identifier, so the
// sandbox can expose it as mcp_<server alias>.<tool alias>.
//
// Every character outside [A-Za-z0-9_] becomes "_" (non-ASCII letters too:
// Python folds identifiers with NFKC, which could merge two distinct names), a
// leading digit gets a "_" prefix, a hard keyword such as "class" gets a
// trailing "_", and the empty name becomes "_". Alias does not resolve
// collisions between names; [Aliases] does.
func Alias(name string) string {
	if name == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(name) + 1)
	if name[0] >= '0' && name[0] <= '9' {
		b.WriteByte('_')
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if pythonKeywords[s] {
		s += "_"
	}
	return s
}

// Aliases maps each of names to a distinct Python identifier.
//
// A name that is already a valid identifier (Alias(name) == name) always keeps
// itself. The others get Alias(name), and when that is taken, the first free
// of Alias(name)+"_2", "_3", ... in the order of names, so the result is
// deterministic for a given (sorted) list: "a-b" and "a.b" become "a_b" and
// "a_b_2". Duplicate entries in names share one alias.
func Aliases(names []string) map[string]string {
	out := make(map[string]string, len(names))
	taken := make(map[string]bool, len(names))
	// First pass: names that are identifiers already keep themselves, so adding
	// "a-b" to a config never renames an existing "a_b".
	for _, n := range names {
		if Alias(n) == n {
			out[n] = n
			taken[n] = true
		}
	}
	for _, n := range names {
		if _, done := out[n]; done {
			continue
		}
		base := Alias(n)
		a := base
		for i := 2; taken[a]; i++ {
			a = base + "_" + strconv.Itoa(i)
		}
		out[n] = a
		taken[a] = true
	}
	return out
}
