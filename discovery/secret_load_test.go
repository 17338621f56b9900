package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// TestLoadSecrets: ${keyring:...} and ${cmd:...} resolve into env, headers,
// args and url, each value is kept in Server.Secrets, and a reference that
// cannot resolve is a problem that says what to do and holds no secret.
func TestLoadSecrets(t *testing.T) {
	keyring.MockInit()
	const kv, cv = "keyring-secret-123", "command-secret-456"
	if err := secret.Set(secret.Ref{Service: "cb-test", Account: "token"}, secret.New(kv)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw.sh")
	if err := os.WriteFile(pw, []byte("#!/bin/sh\necho "+cv+"\necho second\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fail := filepath.Join(dir, "fail.sh")
	if err := os.WriteFile(fail, []byte("#!/bin/sh\necho "+cv+"; exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"s.json": `{"mcpServers": {
  "local": {"command": "srv", "args": ["--pw=${cmd:` + pw + `}"], "env": {"A": "${keyring:cb-test/token}", "B": "x-${TOKEN}"}},
  "remote": {"url": "https://h/mcp?k=${keyring:cb-test/token}", "headers": {"Authorization": "Bearer ${cmd:` + pw + `}"}},
  "missing": {"command": "srv", "env": {"A": "${keyring:cb-test/nope}"}},
  "failing": {"command": "srv", "env": {"A": "${cmd:` + fail + `}"}},
  "off": {"command": "srv", "disabled": true, "env": {"A": "${cmd:` + fail + `}", "K": "${keyring:cb-test/nope}"}}
}}`})
	cfg := Load(dir, nil, testEnv)

	local := cfg.Server("local")
	if local == nil || local.Env["A"] != kv || local.Env["B"] != "x-s3cret" || local.Args[0] != "--pw="+cv {
		t.Fatalf("local = %+v", local)
	}
	if got := local.Secrets.Mask(kv + " " + cv); got != "[secret] [secret]" {
		t.Errorf("local's secrets mask %q", got)
	}
	remote := cfg.Server("remote")
	if remote == nil || remote.URL != "https://h/mcp?k="+kv || remote.Headers["Authorization"] != "Bearer "+cv || len(remote.Secrets) != 2 {
		t.Fatalf("remote = %+v", remote)
	}
	if off := cfg.Server("off"); off == nil || off.Env["A"] != "${cmd:"+fail+"}" || len(off.Secrets) != 0 {
		t.Errorf("a disabled server's references resolved: %+v", off)
	}
	if cfg.Server("missing") != nil || cfg.Server("failing") != nil {
		t.Errorf("servers whose secrets did not resolve loaded")
	}
	var msgs []string
	for _, p := range cfg.Problems {
		msgs = append(msgs, p.String())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		`server "missing": env.A: ${keyring:cb-test/nope}: no such secret in the OS keyring: run 'codebridge secret set cb-test/nope' to store it`,
		`server "failing": env.A: ${cmd:` + fail + `}: ` + fail + ` failed (exit status 1; its output is not shown`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, cv) || strings.Contains(all, kv) || len(msgs) != 2 {
		t.Errorf("problems hold a secret, or are not two:\n%s", all)
	}
}

// TestLoadSecretsNoKeyring: without a keyring, a reference says so and
// suggests the other ways.
func TestLoadSecretsNoKeyring(t *testing.T) {
	keyring.MockInitWithError(os.ErrNotExist) // any error but "not found": no keyring
	t.Cleanup(keyring.MockInit)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"s.json": `{"mcpServers": {"a": {"command": "srv", "env": {"A": "${keyring:svc/acct}"}}}}`})
	cfg := Load(dir, nil, testEnv)
	if len(cfg.Problems) != 1 || !strings.Contains(cfg.Problems[0].Message, "no OS keyring is available") ||
		!strings.Contains(cfg.Problems[0].Message, "use ${cmd:...}") {
		t.Fatalf("problems: %v", cfg.Problems)
	}
}

// TestLoadLeaveSecrets: with LeaveSecrets, as an import plans, references
// stay as written and no command runs.
func TestLoadLeaveSecrets(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	writeFiles(t, dir, map[string]string{"s.json": `{"mcpServers": {"a": {"command": "srv",
  "env": {"A": "${keyring:svc/none}", "B": "${cmd:touch ` + marker + `}"}}}}`})
	cfg := Load(dir, nil, Options{LeaveSecrets: true})
	a := cfg.Server("a")
	if a == nil || a.Env["A"] != "${keyring:svc/none}" || a.Env["B"] != "${cmd:touch "+marker+"}" || len(cfg.Problems) != 0 {
		t.Fatalf("a = %+v, problems %v", a, cfg.Problems)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
}
