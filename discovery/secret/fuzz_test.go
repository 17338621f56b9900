package secret

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// FuzzMaskJSON masks downstream JSON with two secrets. Once masked, no secret
// of MinMasked bytes or more is left in any string (key or value) of the
// decoded output, nor anywhere in the output of what is not JSON (numbers of
// valid JSON are left alone, as documented); valid JSON stays valid; and
// masking again changes nothing.
func FuzzMaskJSON(f *testing.F) {
	f.Add([]byte(`{"token":"hunter2hunter2","n":1}`), "hunter2hunter2", "short")
	f.Add([]byte(`["a\u0062cdefg", "abcdefg"]`), "abcdefg", "cdefgh")
	f.Add([]byte(`{"abcdefgh":{"k":["xabcdefghx",null,true,1e400]}}`), "abcdefgh", "bcdefg")
	f.Add([]byte(`"<tag>&amp;</tag>"`), "<tag>&amp;", "</tag>")
	f.Add([]byte(`not json abcdefg`), "abcdefg", "")
	f.Add([]byte(`{"a":"tok\/en+abc","b":"pa\"ss\u003cword"}`), "tok/en+abc", `pa"ss<word`)
	f.Add([]byte(`{"a":"abc"} {"b":"abcdefg"}`), "abcdefg", "abc")
	f.Add([]byte("\"caf\xc3\xa9caf\xc3\xa9\""), "caf\xc3\xa9caf", "\xff\xfe\xfd\xfc\xfb\xfa")
	f.Fuzz(func(t *testing.T, raw []byte, s1, s2 string) {
		l := List{New(s1), New(s2)}
		if overlapsPlaceholder(l) {
			t.Skip("a secret that overlaps the placeholder can be formed again by masking (reported, not fixed)")
		}
		secrets := l.maskable()
		out, changed := l.MaskJSON(raw)
		if !changed && !bytes.Equal(out, raw) {
			t.Fatalf("MaskJSON(%q) reported no change but returned %q", raw, out)
		}
		if !json.Valid(raw) && !json.Valid(out) { // masked as text
			for _, s := range secrets {
				if bytes.Contains(out, []byte(s)) {
					t.Fatalf("MaskJSON(%q) with secret %q: the raw output %q holds it", raw, s, out)
				}
			}
		} else {
			// Numbers are left alone, as documented. (Invalid JSON whose
			// start is a JSON value comes out as that value re-encoded: the
			// rest is dropped; reported.)
			if json.Valid(raw) && !json.Valid(out) {
				t.Fatalf("MaskJSON(%q): valid JSON in, invalid out: %q", raw, out)
			}
			var doc any
			dec := json.NewDecoder(bytes.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("decoding the output %q: %v", out, err)
			}
			for _, str := range jsonStrings(doc, nil) {
				for _, s := range secrets {
					if strings.Contains(str, s) {
						t.Fatalf("MaskJSON(%q) with secret %q: the decoded output holds it in %q", raw, s, str)
					}
				}
			}
		}
		again, _ := l.MaskJSON(out)
		if !bytes.Equal(again, out) && !jsonEqual(again, out) {
			t.Fatalf("MaskJSON is not idempotent on %q: once %q, twice %q", raw, out, again)
		}
	})
}

// FuzzMask masks text with two secrets: none is left, and masking again
// changes nothing.
func FuzzMask(f *testing.F) {
	f.Add("token=hunter2hunter2;", "hunter2hunter2", "hunter")
	f.Add("abcabcabcabc", "abcabc", "bcabca")
	f.Add("a]abcdef-ghi", "abcdef", "b]abcd")
	f.Fuzz(func(t *testing.T, s, s1, s2 string) {
		l := List{New(s1), New(s2)}
		if overlapsPlaceholder(l) {
			t.Skip("a secret that overlaps the placeholder can be formed again by masking (reported, not fixed)")
		}
		out := l.Mask(s)
		for _, v := range l.maskable() {
			if strings.Contains(out, v) {
				t.Fatalf("Mask(%q) with secret %q left it in %q", s, v, out)
			}
		}
		if again := l.Mask(out); again != out {
			t.Fatalf("Mask is not idempotent on %q: once %q, twice %q", s, out, again)
		}
	})
}

// overlapsPlaceholder reports whether a secret of l holds Placeholder, starts
// with its end or ends with its start: masking another secret next to it can
// then write it again, e.g. masking "abcdef" in "abcdefghi" writes
// "[secret]ghi", a secret of its own. No real secret looks like that.
func overlapsPlaceholder(l List) bool {
	for _, v := range l.maskable() {
		for i := 1; i <= len(Placeholder); i++ {
			if strings.HasPrefix(v, Placeholder[len(Placeholder)-i:]) || strings.HasSuffix(v, Placeholder[:i]) {
				return true
			}
		}
		if strings.Contains(v, Placeholder) {
			return true
		}
	}
	return false
}

// jsonStrings appends every string (keys too) of a decoded JSON value.
func jsonStrings(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = jsonStrings(e, out)
		}
	case map[string]any:
		for k, e := range v {
			out = jsonStrings(e, append(out, k))
		}
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// shellPlain reports whether the shell would treat s only as words, quotes,
// backslashes and blanks: no expansion, redirection, globbing or comments.
func shellPlain(s string) bool {
	return !strings.ContainsAny(s, "$`|&;<>()*?[]#~=%{}!\x00\r\n") && !strings.Contains(s, "\\\n")
}

// FuzzSplitWords splits a command line: no panic, an error only for an
// unclosed quote, and words that never hold a blank unless it was quoted or
// escaped. Agreement with /bin/sh is checked by TestSplitWordsLikeShell.
func FuzzSplitWords(f *testing.F) {
	for _, s := range splitWordsCorpus {
		f.Add(s, true)
	}
	f.Add(`a\`, false)
	f.Fuzz(func(t *testing.T, s string, backslash bool) {
		words, err := splitWords(s, backslash)
		if err != nil {
			if !strings.ContainsAny(s, `'"`) {
				t.Fatalf("splitWords(%q): %v, but it has no quote", s, err)
			}
			return
		}
		if !strings.ContainsAny(s, `'"\`) {
			if want := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }); !slices.Equal(words, want) && !(len(words) == 0 && len(want) == 0) {
				t.Fatalf("splitWords(%q) = %q, want the blank-separated fields %q", s, words, want)
			}
		}
	})
}

var splitWordsCorpus = []string{
	``, `a`, `  a  b  `, "a\tb\nc", `'a b' c`, `"a b" c`, `a\ b`, `"a\"b"`, `"a\\b"`, `"a\$b"`, `"a\xb"`,
	`'a\b'`, `a'b'c"d"e`, `''`, `""`, `'' ""`, `a\\`, `\'`, `\"`, "\"\\`", `pass show "my secret"`,
	`op read 'op://vault/item/field'`, `'unclosed`, `"unclosed`, `a\`, `"a\"`, `x"y z"w`, `'a'\''b'`,
}

// TestSplitWordsLikeShell compares splitWords with /bin/sh's own word
// splitting over the corpus (and the fuzz corpus in testdata), for inputs the
// shell would not expand.
func TestSplitWordsLikeShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to compare with")
	}
	for _, s := range splitWordsCorpus {
		if !shellPlain(s) {
			continue
		}
		words, err := splitWords(s, true)
		out, shErr := exec.Command(sh, "-c", `printf '%s\0' `+s).Output()
		if err != nil || shErr != nil {
			if (err == nil) != (shErr == nil) {
				t.Errorf("%q: splitWords error %v, sh error %v", s, err, shErr)
			}
			continue
		}
		var want []string
		if len(out) > 0 {
			want = strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		}
		if len(words) == 0 && len(want) == 1 && want[0] == "" {
			want = nil // printf prints one empty word when given none
		}
		if !slices.Equal(words, want) {
			t.Errorf("splitWords(%q) = %q, sh says %q", s, words, want)
		}
	}
}
