package memory

import (
	"strings"
	"testing"
)

// genSource builds a valid one-def source named f from b: parameters with
// simple defaults and annotations, and a body of lines that use strings,
// comments, brackets across lines and continuations.
func genSource(b []byte) string {
	next := func() byte {
		if len(b) == 0 {
			return 0
		}
		c := b[0]
		b = b[1:]
		return c
	}
	simples := []string{"1", "-2.5", "0x1F", "'a'", `r"\d"`, "b'x' 'y'", "None", "True", "...", "()", "[1, 'a']",
		"{}", "{'k': (1, 2)}", "int", "list[str]", "dict[str, int] | None", `"""doc"""`}
	var sb strings.Builder
	if next()%4 == 0 {
		sb.WriteString("# leading comment\n\n")
	}
	if next()%5 == 0 {
		sb.WriteString("async ")
	}
	sb.WriteString("def f(")
	for i, n := 0, int(next()%5); i < n; i++ {
		sb.WriteString("p" + string(rune('a'+i)))
		if c := next(); c%3 == 0 {
			sb.WriteString(": " + simples[int(c)%len(simples)])
		}
		if c := next(); c%2 == 0 {
			sb.WriteString("=" + simples[int(c)%len(simples)])
		}
		sb.WriteString(", ")
	}
	sb.WriteString(")")
	if c := next(); c%4 == 0 {
		sb.WriteString(" -> " + simples[int(c)%len(simples)])
	}
	sb.WriteString(":\n")
	bodies := []string{
		"    return 1\n", "    x = '''\nimport os\n'''\n", "    y = (1,\n2)\n", "    # c\n", "\n",
		"    z = 1 + \\\n2\n", "    s = f\"{x!r}\" + 'q\\'' + \"\\\"\"\n", "    @dec\n    def g(): pass\n",
		"\tif x:\n\t\tpass\n", "    t = {\n'a': [\n]}\n", "    import os\n",
	}
	sb.WriteString("    pass\n")
	for n := int(next() % 6); n > 0; n-- {
		sb.WriteString(bodies[int(next())%len(bodies)])
	}
	if next()%3 == 0 {
		sb.WriteString("# trailing\n")
	}
	return sb.String()
}

// FuzzCheckSource: CheckSource never panics; it accepts every generated
// one-def source, and refuses it with a second top-level statement.
func FuzzCheckSource(f *testing.F) {
	f.Add([]byte{}, "")
	f.Add([]byte{1, 2, 3, 4, 5, 6}, "def f():\n    pass\n")
	f.Add([]byte{0, 0, 4, 0, 6, 9, 12}, "def f(x=f'{\"'):\n  pass\n")
	f.Fuzz(func(t *testing.T, b []byte, raw string) {
		CheckSource("f", raw) // must not panic
		src := genSource(b)
		if err := CheckSource("f", src); err != nil {
			t.Fatalf("refused a valid source: %v\n%s", err, src)
		}
		for _, extra := range []string{"import os\n", "print = f\n", "f()\n", "\fx = 1\n", "\\\nx = 1\n", "def f(): pass\n", "@d\ndef g(): pass\n"} {
			if err := CheckSource("f", src+extra); err == nil {
				t.Fatalf("accepted a second top-level statement:\n%s", src+extra)
			}
		}
	})
}
