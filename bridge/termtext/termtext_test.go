package termtext

import "testing"

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, line, lines string
	}{
		{"plain", "echo a-b_c (1) «é» 漢字 😀", "echo a-b_c (1) «é» 漢字 😀", "echo a-b_c (1) «é» 漢字 😀"},
		{"empty", "", "", ""},
		{"paths and quotes", `C:\Users\a "b"`, `C:\Users\a "b"`, `C:\Users\a "b"`},
		{"no-break space kept", "a\u00a0b", "a\u00a0b", "a\u00a0b"},
		{"newline forges a row", "x\n2026-01-01 github delete_repo ok", `x\n2026-01-01 github delete_repo ok`, "x\n2026-01-01 github delete_repo ok"},
		{"tab shifts a column", "a\tb", `a\tb`, "a\tb"},
		{"carriage return overwrites", "ok\rfailed", `ok\rfailed`, `ok\rfailed`},
		{"ANSI clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`, `\x1b[2J\x1b[H`},
		{"OSC 52 clipboard", "\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`, `\x1b]52;c;ZXZpbA==\x07`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`, `a\x00b\x7f`},
		{"C1 CSI and NEL", "\u009b31m\u0085", `\u009b31m\u0085`, `\u009b31m\u0085`},
		{"bidirectional override", "abc\u202eexe.txt\u2066", `abc\u202eexe.txt\u2066`, `abc\u202eexe.txt\u2066`},
		{"zero width and line separator", "a\u200bb\u2028c\ufeff", `a\u200bb\u2028c\ufeff`, `a\u200bb\u2028c\ufeff`},
		{"private use and tags", "\ue000\U000e0041", `\ue000\U000e0041`, `\ue000\U000e0041`},
		{"not UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"replacement character written", "a\ufffdb", `a\ufffdb`, `a\ufffdb`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Lines(tt.in); got != tt.lines {
				t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.lines)
			}
		})
	}
}
