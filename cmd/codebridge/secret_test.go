package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// runSecret runs codebridge with args in process, stdin read from a file
// holding in.
func runSecret(t *testing.T, in string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var o, e bytes.Buffer
	code = run(t.Context(), args, f, &o, &e)
	return o.String(), e.String(), code
}

// TestSecretCommand: set stores stdin without its trailing newline, check
// and rm find it, and no output ever holds the secret; a keyring that is not
// there is said so, with what to use instead.
func TestSecretCommand(t *testing.T) {
	keyring.MockInit()
	const tok = "s3cr3t-token-value"
	r := secret.Ref{Service: "cb-test", Account: "tok"}
	var all strings.Builder
	step := func(in string, wantCode int, wantOut string, args ...string) {
		t.Helper()
		out, errOut, code := runSecret(t, in, args...)
		all.WriteString(out + errOut)
		if code != wantCode || !strings.Contains(out+errOut, wantOut) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", args, code, out, errOut, wantCode, wantOut)
		}
	}
	step(tok+"\r\n", 0, "stored cb-test/tok: reference it as ${keyring:cb-test/tok}", "secret", "set", "cb-test/tok")
	if v, err := secret.Get(r); err != nil || v.Reveal() != tok {
		t.Fatalf("stored %q, %v; want %q", v.Reveal(), err, tok)
	}
	step("", 0, "cb-test/tok is in the OS keyring", "secret", "check", "cb-test/tok")
	step("", 0, "removed cb-test/tok", "secret", "rm", "cb-test/tok")
	step("", 1, "no such secret in the OS keyring: store it with 'codebridge secret set", "secret", "check", "cb-test/tok")
	step("", 1, "stdin was empty", "secret", "set", "cb-test/tok")
	step("x", 2, "is not SERVICE/ACCOUNT", "secret", "set", "nope")
	step("x", 2, "unknown verb", "secret", "get", "cb-test/tok")
	step("x", 2, "want a verb", "secret", "set")

	keyring.MockInitWithError(errors.New("exec: \"dbus-launch\": executable file not found in $PATH"))
	t.Cleanup(keyring.MockInit)
	step(tok, 1, "no OS keyring is available", "secret", "set", "cb-test/tok")
	if strings.Contains(all.String(), tok) {
		t.Errorf("output holds the secret:\n%s", all.String())
	}
}
