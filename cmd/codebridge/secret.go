package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/term"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

const secretHelp = `Usage: codebridge secret set SERVICE/ACCOUNT
       codebridge secret check SERVICE/ACCOUNT
       codebridge secret rm SERVICE/ACCOUNT

Keeps the secrets that server entries in ~/MCPs take by reference,
"${keyring:SERVICE/ACCOUNT}", in the OS keyring (macOS Keychain, the Secret
Service on Linux such as gnome-keyring or KWallet, Windows Credential Manager),
so no token is written in a config file.

  set    store the secret read from stdin (typed without echo in a terminal;
         one trailing newline is dropped), replacing any
  check  say whether the keyring holds it (never prints it)
  rm     remove it

No command prints a secret. Where there is no keyring (a server or container
without a desktop session), references cannot resolve: use ${cmd:COMMAND},
the first line a password manager's CLI prints, or ${env:NAME} instead.

Example:
  codebridge secret set github/token
  {"mcpServers": {"github": {"command": "github-mcp-server", "args": ["stdio"],
    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${keyring:github/token}"}}}}

Exit status: 0 when done (check: the secret is there); 1 when the keyring
failed or holds no such secret; 2 when the command line is wrong.
`

// secretCmd runs codebridge secret VERB SERVICE/ACCOUNT.
func secretCmd(_ context.Context, c *call) int {
	if len(c.args) != 2 {
		fmt.Fprintf(c.stderr, "codebridge secret: want a verb (set, check or rm) and SERVICE/ACCOUNT\n\n%s", secretHelp)
		return 2
	}
	verb := c.args[0]
	r, err := secret.ParseRef(c.args[1])
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge secret %s: %v\n", verb, err)
		return 2
	}
	switch verb {
	case "set":
		var v secret.Value
		if v, err = readSecret(c, r); err == nil {
			err = secret.Set(r, v)
		}
		if err == nil {
			fmt.Fprintf(c.stdout, "stored %s: reference it as ${keyring:%s}\n", r, r)
		}
	case "check":
		if _, err = secret.Get(r); err == nil {
			fmt.Fprintf(c.stdout, "%s is in the OS keyring\n", r)
		}
	case "rm":
		if err = secret.Delete(r); err == nil {
			fmt.Fprintf(c.stdout, "removed %s\n", r)
		}
	default:
		fmt.Fprintf(c.stderr, "codebridge secret: unknown verb %q: want set, check or rm\n", verb)
		return 2
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge secret %s: %v%s\n", verb, err, keyringAdvice(err))
		return 1
	}
	return 0
}

// keyringAdvice says what to do about a keyring error.
func keyringAdvice(err error) string {
	switch {
	case errors.Is(err, secret.ErrNoKeyring):
		return ": start your desktop's keyring (on Linux a Secret Service such as gnome-keyring, in a D-Bus session), " +
			"or keep the secret elsewhere and reference it with ${cmd:COMMAND} or ${env:NAME}"
	case errors.Is(err, secret.ErrNotFound):
		return ": store it with 'codebridge secret set SERVICE/ACCOUNT'"
	}
	return ""
}

// maxSecret bounds what set reads from stdin.
const maxSecret = 64 << 10

// readSecret reads the secret for r from stdin: without echo from a
// terminal, else all of it, one trailing newline dropped.
func readSecret(c *call, r secret.Ref) (secret.Value, error) {
	var b []byte
	var err error
	if isTerminal(c.stdin) {
		fmt.Fprintf(c.stderr, "secret for %s (not shown): ", r)
		b, err = term.ReadPassword(int(c.stdin.Fd()))
		fmt.Fprintln(c.stderr)
	} else {
		b, err = io.ReadAll(io.LimitReader(c.stdin, maxSecret+1))
	}
	if err != nil {
		return secret.Value{}, fmt.Errorf("reading the secret from stdin: %w", err)
	}
	if len(b) > maxSecret {
		return secret.Value{}, fmt.Errorf("stdin holds over %d bytes: a secret is a token or password", maxSecret)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return secret.Value{}, errors.New("stdin was empty: type the secret, or pipe it in, e.g. pass show github/token | codebridge secret set github/token")
	}
	return secret.New(s), nil
}
