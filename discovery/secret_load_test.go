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
	if remote == nil || remote.URL != "https://h/mcp?k="+kv || remote.Headers["Authorization"] != "Bearer "+cv || len(remote.Secrets) != 3 { // kv, cv and "Bearer cv"
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

// TestLoadOAuth: an entry's "oauth" object gives the client to sign in with,
// its secret by reference kept in Server.Secrets; a malformed one makes the
// entry invalid, saying what to write.
func TestLoadOAuth(t *testing.T) {
	keyring.MockInit()
	const cs = "client-secret-789"
	if err := secret.Set(secret.Ref{Service: "cb-test", Account: "oauth"}, secret.New(cs)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"s.json": `{"mcpServers": {
  "hosted": {"url": "https://h/mcp", "oauth": {"clientId": "cb", "clientSecret": "${keyring:cb-test/oauth}", "scopes": ["read", "write"]}},
  "public": {"url": "https://p/mcp", "oauth": {}},
  "local": {"command": "srv", "oauth": {"clientId": "cb"}},
  "typo": {"url": "https://t/mcp", "oauth": {"client_id": "cb"}},
  "scopes": {"url": "https://s/mcp", "oauth": {"clientId": "cb", "scopes": "read write"}},
  "orphan": {"url": "https://o/mcp", "oauth": {"clientSecret": "x"}}
}}`})
	cfg := Load(dir, nil, testEnv)
	h := cfg.Server("hosted")
	if h == nil || h.OAuth == nil {
		t.Fatalf("hosted = %+v; want it with its oauth client (problems: %v)", h, cfg.Problems)
	}
	if h.OAuth.ClientID != "cb" || h.OAuth.ClientSecret.Reveal() != cs || strings.Join(h.OAuth.Scopes, " ") != "read write" {
		t.Errorf("hosted.OAuth = {%q, %q, %v}; want {cb, %s, [read write]}", h.OAuth.ClientID, h.OAuth.ClientSecret.Reveal(), h.OAuth.Scopes, cs)
	}
	if h.Secrets.Mask(cs) != secret.Placeholder {
		t.Errorf("the client secret is not in hosted's Secrets")
	}
	if p := cfg.Server("public"); p == nil || p.OAuth == nil || p.OAuth.ClientID != "" {
		t.Errorf("public = %+v; want an empty oauth client (registered at login)", p)
	}
	problems := map[string]string{}
	for _, p := range cfg.Problems {
		problems[p.Server] = p.Message
		if strings.Contains(p.Message, cs) {
			t.Errorf("problem %q holds the secret", p.Message)
		}
	}
	for name, want := range map[string]string{
		"local":  `"oauth" is for servers reached by "url"`,
		"typo":   `unknown key "client_id" in "oauth"`,
		"scopes": "oauth.scopes must be an array",
		"orphan": "oauth.clientSecret needs oauth.clientId",
	} {
		if !strings.Contains(problems[name], want) || cfg.Server(name) != nil {
			t.Errorf("%s: problem %q, server %v; want it skipped with %q", name, problems[name], cfg.Server(name), want)
		}
	}
	other := *h
	other.OAuth = &OAuth{ClientID: "cb", ClientSecret: secret.New("other"), Scopes: h.OAuth.Scopes}
	if h.SameEndpoint(&other) {
		t.Error("a changed client secret leaves the server the same endpoint; want it restarted")
	}
}

// TestLoadEnvSecrets: the value of each ${env:NAME} is a secret, in any
// field, as are the values of env and headers under keys that name one
// (Authorization, *token*, *key*, *secret*, *password*, in any case), and
// the credential after an Authorization scheme; ${NAME} under another key
// is not, nor is a literal value under another key; values under
// secret.MinMasked bytes are kept but not masked.
func TestLoadEnvSecrets(t *testing.T) {
	const envTok, headerTok, litTok = "env-token-1234", "header-token-5678", "literal-token-9012"
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"s.json": `{"mcpServers": {
  "local": {"command": "srv", "env": {"GH": "${env:GH_TOKEN}", "Api_Key": "` + litTok + `", "NOTES": "${HOME}/notes", "DEBUG": "true", "PASSWORD": "1"}},
  "remote": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${env:SEARCH_TOKEN}", "x-auth-TOKEN": "` + litTok + `", "proxy-authorization": "Basic ` + headerTok + `", "Accept": "text/plain-long"}}
}}`})
	opts := Options{LookupEnv: env(map[string]string{"GH_TOKEN": envTok, "SEARCH_TOKEN": headerTok, "HOME": "/home/user"})}
	cfg := Load(dir, nil, opts)
	for _, tt := range []struct {
		server string
		in     string
		want   string
	}{
		{"local", "gh=" + envTok + " api=" + litTok + " notes=/home/user/notes debug=true pw=1",
			"gh=[secret] api=[secret] notes=/home/user/notes debug=true pw=1"},
		{"remote", "auth=Bearer " + headerTok + " x=" + litTok + " accept=text/plain-long",
			"auth=[secret] x=[secret] accept=text/plain-long"},
		{"remote", "token alone: " + headerTok, "token alone: [secret]"},
	} {
		s := cfg.Server(tt.server)
		if s == nil {
			t.Fatalf("%s did not load: %v", tt.server, cfg.Problems)
		}
		if got := s.Secrets.Mask(tt.in); got != tt.want {
			t.Errorf("%s's secrets mask %q as %q, want %q", tt.server, tt.in, got, tt.want)
		}
	}
}
