package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
)

const planted = "hunter2-s3cr3t-value"

// TestValueRedactsItself: every way a Value can be printed, logged or
// encoded gives the placeholder, also nested in structs, maps, errors.
func TestValueRedactsItself(t *testing.T) {
	v := New(planted)
	type holder struct {
		Name   string
		Token  Value
		hidden Value
	}
	h := holder{Name: "x", Token: v, hidden: v}
	for _, verb := range []string{"%v", "%s", "%q", "%+v", "%#v", "%x", "%d", "%T %v"} {
		for _, arg := range []any{v, &v, h, &h, []Value{v}, map[string]Value{"k": v}} {
			if out := fmt.Sprintf(verb, arg); strings.Contains(out, planted) || strings.Contains(out, fmt.Sprintf("%x", planted)) {
				t.Errorf("Sprintf(%q, %T) = %q: holds the secret", verb, arg, out)
			}
		}
	}
	if got := fmt.Sprintf("%q", v); got != `"[secret]"` {
		t.Errorf("%%q = %s, want %q", got, `"[secret]"`)
	}
	if err := fmt.Errorf("starting with %v: %w", v, errors.New("x")); strings.Contains(err.Error(), planted) {
		t.Errorf("error %q holds the secret", err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("start", "token", v, "holder", h, slog.Any("ptr", &v), slog.Group("g", "t", v))
	slog.New(slog.NewTextHandler(&buf, nil)).Info("start", "token", v, "holder", h)
	if strings.Contains(buf.String(), planted) || !strings.Contains(buf.String(), `"token":"[secret]"`) {
		t.Errorf("log holds the secret or not the placeholder:\n%s", buf.String())
	}
	raw, err := json.Marshal(h)
	if err != nil || strings.Contains(string(raw), planted) || !strings.Contains(string(raw), `"Token":"[secret]"`) {
		t.Errorf("json = %s, %v", raw, err)
	}
	if v.Reveal() != planted || (Value{}).Reveal() != "" {
		t.Errorf("Reveal = %q", v.Reveal())
	}
}

// TestListMask: secrets at least MinMasked bytes long are masked in text and
// in JSON as encoding/json escapes them; shorter ones are left.
func TestListMask(t *testing.T) {
	l := List{New("short"), New("abc<def>&\"x"), New(planted), New(planted + "-longer")}
	got := l.Mask("a " + planted + "-longer b " + planted + " c short")
	if want := "a [secret] b [secret] c short"; got != want {
		t.Errorf("Mask = %q, want %q", got, want)
	}
	raw, _ := json.Marshal(map[string]any{"text": "got abc<def>&\"x and " + planted, "n": []string{planted}, planted: 1})
	m, changed := l.MaskJSON(raw)
	masked := string(m)
	if !changed || strings.Contains(masked, planted) || strings.Contains(masked, "def") || strings.Count(masked, Placeholder) != 4 {
		t.Errorf("MaskJSON = %s, %v", masked, changed)
	}
	// A secret of digits is masked in strings, not in numbers, and the JSON
	// stays valid.
	pin := List{New("12345678")}
	m, changed = pin.MaskJSON([]byte(`{"n":12345678,"s":"pin 12345678","f":1.5e300}`))
	if want := `{"f":1.5e300,"n":12345678,"s":"pin [secret]"}`; !changed || string(m) != want {
		t.Errorf("MaskJSON of a number = %s, want %s", m, want)
	}
	if m, changed := l.MaskJSON([]byte(`{"a": "` + planted)); !changed || !strings.Contains(string(m), Placeholder) {
		t.Errorf("MaskJSON of broken JSON = %s, %v", m, changed)
	}
	if _, changed := l.MaskJSON([]byte(`{"a":"nothing here"}`)); changed {
		t.Errorf("MaskJSON changed JSON without secrets")
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(masked), &back); err != nil {
		t.Errorf("masked JSON no longer parses: %v", err)
	}
	if got := (List{}).Mask(planted); got != planted {
		t.Errorf("empty list masked %q", got)
	}
}

func TestSplitWords(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "pass show github/token", want: []string{"pass", "show", "github/token"}},
		{in: `  op read  "op://My Vault/item/pw" `, want: []string{"op", "read", "op://My Vault/item/pw"}},
		{in: `sh -c 'echo $HOME; x'`, want: []string{"sh", "-c", "echo $HOME; x"}},
		{in: `a\ b "q\"x\n" ''`, want: []string{"a b", `q"x\n`, ""}},
		{in: "", want: nil},
		{in: "'open", err: true},
		{in: `"open`, err: true},
	} {
		got, err := splitWords(tt.in, true)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	// On Windows a backslash is a path's, not an escape.
	if got, _ := splitWords(`C:\tools\pw.exe get "C:\My Vault\x"`, false); !slices.Equal(got, []string{`C:\tools\pw.exe`, "get", `C:\My Vault\x`}) {
		t.Errorf("splitWords without backslash escapes = %q", got)
	}
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCommand: the first line of a command's stdout; its failures say what
// happened but never what it printed.
func TestCommand(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := t.Context()
	v, err := Command(ctx, "printf '%s\\nsecond line\\n' "+planted, 0)
	if err != nil || v.Reveal() != planted {
		t.Fatalf("printf: %q, %v", v.Reveal(), err)
	}
	v, err = Command(ctx, script(t, "echo \"$1-$2\"")+` "a b" c`, 0)
	if err != nil || v.Reveal() != "a b-c" {
		t.Fatalf("script with quoted args: %q, %v", v.Reveal(), err)
	}
	for _, tt := range []struct {
		name, line, want string
		timeout          time.Duration
	}{
		{"fails", script(t, "echo "+planted+"; echo "+planted+" >&2; exit 3"), "exit status 3", 0},
		{"times out", script(t, "echo "+planted+"; exec sleep 30"), "did not finish within 200ms", 200 * time.Millisecond},
		{"prints nothing", script(t, "echo; echo "+planted), "printed nothing", 0},
		{"prints too much", script(t, "echo "+planted+"; head -c 1000000 /dev/zero"), "printed more than 64 KiB", 0},
		{"prints without end", script(t, "echo "+planted+"; exec yes"), "printed more than 64 KiB", 0},
		{"not found", "no-such-command-xyz " + planted, "executable file not found", 0},
		{"empty", "  ", "no command", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Command(ctx, tt.line, tt.timeout)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), planted) && tt.name != "not found" {
				t.Errorf("error %q holds the command's output", err)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

// TestKeyring: Set, Get and Delete through go-keyring's mock, and a keyring
// that is not there.
func TestKeyring(t *testing.T) {
	keyring.MockInit()
	r, err := ParseRef("codebridge-test/acct/with/slash")
	if err != nil || r.Service != "codebridge-test" || r.Account != "acct/with/slash" {
		t.Fatalf("ParseRef = %+v, %v", r, err)
	}
	for _, bad := range []string{"", "svc", "/acct", "svc/", " / "} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) succeeded", bad)
		}
	}
	if _, err := Get(r); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get before Set: %v, want ErrNotFound", err)
	}
	if err := Set(r, New(planted)); err != nil {
		t.Fatal(err)
	}
	if v, err := Get(r); err != nil || v.Reveal() != planted {
		t.Fatalf("Get = %q, %v", v.Reveal(), err)
	}
	if err := Delete(r); err != nil {
		t.Fatal(err)
	}
	if err := Delete(r); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}

	keyring.MockInitWithError(errors.New("The name org.freedesktop.secrets was not provided by any .service files"))
	t.Cleanup(keyring.MockInit)
	_, err = Get(r)
	if !errors.Is(err, ErrNoKeyring) || !strings.Contains(err.Error(), "org.freedesktop.secrets") {
		t.Fatalf("Get without a keyring: %v, want ErrNoKeyring naming the cause", err)
	}
}

// TestMaskJSONEscapes: a secret spelled with JSON escapes is masked whatever
// the escape (\/ for a slash, \" for a quote, \u for any character), while
// escapes that spell no character of a secret (Go's \u003e, a \n in text)
// leave the document on the fast path, unchanged.
func TestMaskJSONEscapes(t *testing.T) {
	l := List{New("tok/en+abc"), New(`pa"ss<word`)}
	for _, raw := range []string{
		`{"a":"tok\/en+abc"}`,
		`{"a":"tok\u002fen+abc"}`,
		`{"a":"pa\"ss<word"}`,
		`{"a":"pa\"ss\u003cword"}`,
		`{"a":"x\ud83d\ude00 t\u006fk/en+abc"}`,
	} {
		m, changed := l.MaskJSON([]byte(raw))
		var doc map[string]string
		if err := json.Unmarshal(m, &doc); err != nil {
			t.Fatalf("MaskJSON(%s) = %s: %v", raw, m, err)
		}
		if !changed || strings.Contains(doc["a"], "tok/en") || strings.Contains(doc["a"], "ss<word") {
			t.Errorf("MaskJSON(%s) = %s, %v: the secret is left", raw, m, changed)
		}
	}
	for _, raw := range []string{`{"a":"\u003eb\u003e line\nnext \\ a\tb \u00e9"}`, `{"a":"tok/e","b":"n+abc"}`} {
		if m, changed := l.MaskJSON([]byte(raw)); changed || string(m) != raw {
			t.Errorf("MaskJSON(%s) = %s, %v: no secret is there", raw, m, changed)
		}
	}
}

// BenchmarkMaskJSON masks a tool result as go-sdk encodes it (HTML
// characters escaped, new lines in text) with a server's secret that it
// does not hold: the fast path, which every call of such a server takes.
//
//	go test ./discovery/secret -run '^$' -bench MaskJSON
func BenchmarkMaskJSON(b *testing.B) {
	l := List{New("ghp_0123456789abcdefABCDEF0123456789")}
	raw, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": strings.Repeat("<li>item & more</li>\n", 200)}}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, changed := l.MaskJSON(raw); changed {
			b.Fatal("masked a secret that is not there")
		}
	}
}
