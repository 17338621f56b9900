package discovery

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fuzzEnv is the environment of the fuzz targets: a few names are set.
func fuzzEnv(name string) (string, bool) {
	switch name {
	case "HOME":
		return "/home/u", true
	case "TOKEN":
		return "t0ken${X}", true
	case "EMPTY":
		return "", true
	}
	return "", false
}

var loadSeeds = []string{
	`{}`, `[]`, `null`, ``, `{"mcpServers":{}}`,
	`{"mcpServers":{"a":{"command":"npx","args":["-y","pkg"],"env":{"K":"${TOKEN}"}}}}`,
	`{"mcpServers":{"a":{"url":"https://x/${HOME}","headers":{"A":"Bearer ${env:TOKEN}"}}}}`,
	`{"mcpServers":{"a":{"command":"x","args":["${NOPE:-def}","${NOPE:-}","${${NESTED}}","${unclosed"]}}}`,
	`{"mcpServers":{"a":{"command":"x","env":{"K":"${keyring:svc/acct}"}}}}`,
	`{"mcpServers":{"a":{"command":1,"args":"no","env":[],"disabled":"yes"}}}`,
	`{"mcpServers":{"a":{"url":"https://x","oauth":{"clientId":"${E}","clientSecret":"${keyring:a/b}","scopes":[1]}}}}`,
	`{"mcpServers":{"a":{"command":"x","tools":{"allow":["*"],"deny":[null]}}}}`,
	"{\"mcpServers\":{\"é\":{\"command\":\"x\",\n\"args\":[\n1]}}}",
	`{"mcpServers":{"a":{"command":"x"}},"mcpServers":{"a":{"url":"u"}}}`,
	`{"mcpServers":{"a":{"command":"x"}}} trailing`, `{"mcpServers":{"a":`, "\xef\xbb\xbf{}",
	`{"servers":{"a":{"type":"stdio","command":"x"}}}`, `{"mcpServers":{"":{"command":"x"}}}`,
}

// FuzzLoad loads one file (secrets left as written, so no ${cmd:} runs):
// no panic; every problem names the file, at a line and column inside it;
// and loading the same file twice gives the same servers and problems.
func FuzzLoad(f *testing.F) {
	for _, s := range loadSeeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "servers.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(data, []byte("cmd:")) {
			t.Skip("never run commands") // LeaveSecrets already prevents it; belt and braces
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := Options{LookupEnv: fuzzEnv, LeaveSecrets: true}
		cfg := Load(dir, nil, opts)
		lines := bytes.Split(data, []byte("\n"))
		for _, p := range cfg.Problems {
			if p.Path != path {
				t.Fatalf("problem %+v names %q, want %q", p, p.Path, path)
			}
			if p.Message == "" {
				t.Fatalf("problem %+v has no message", p)
			}
			if p.Line < 0 || p.Line > len(lines) || (p.Line == 0) != (p.Column == 0) {
				t.Fatalf("problem %+v: line %d outside the file's %d lines", p, p.Line, len(lines))
			}
			if p.Line > 0 {
				if n := len([]rune(string(lines[p.Line-1]))); p.Column < 1 || p.Column > n+1 {
					t.Fatalf("problem %+v: column %d outside line %d of %d characters", p, p.Column, p.Line, n)
				}
			}
		}
		again := Load(dir, nil, opts)
		if !reflect.DeepEqual(cfg.Servers, again.Servers) || !reflect.DeepEqual(cfg.Problems, again.Problems) {
			t.Fatalf("two loads of %q differ:\n%+v\n%+v", data, cfg.Problems, again.Problems)
		}
		for _, s := range cfg.Servers {
			if len(s.Secrets) != 0 {
				t.Fatalf("server %q resolved secrets with LeaveSecrets set", s.Name)
			}
		}
	})
}

// FuzzExpandVars expands one string: no panic; a string without "${" is
// kept; with secrets left, every ${keyring:} reference is kept as written;
// an error names no value of the environment.
func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"", "plain", "${HOME}", "${env:HOME}/x", "${NOPE:-d}", "${NOPE:-${HOME}}", "${${HOME}}",
		"${", "${}", "${:-x}", "${keyring:a/b}", "a${TOKEN}b${EMPTY}c", "${NOPE}", "${env:}", "${A B}", "$${HOME}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "cmd:") {
			t.Skip("never run commands")
		}
		out, err := expandVars(s, fuzzEnv, nil, nil)
		if !strings.Contains(s, "${") && (err != nil || out != s) {
			t.Fatalf("expandVars(%q) = %q, %v; want it unchanged", s, out, err)
		}
		if err != nil {
			if strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), "/home/u") {
				t.Fatalf("expandVars(%q): the error %q holds an environment value", s, err)
			}
			return
		}
		for rest := s; ; {
			i := strings.Index(rest, "${keyring:")
			if i < 0 {
				break
			}
			end := strings.IndexByte(rest[i:], '}')
			if end < 0 {
				break
			}
			if ref := rest[i : i+end+1]; !strings.Contains(out, ref) {
				t.Fatalf("expandVars(%q) = %q lost the reference %q", s, out, ref)
			}
			rest = rest[i+end+1:]
		}
	})
}

var agentSeeds = []string{
	`{"mcpServers":{"a":{"command":"npx","args":["x"]}}}`,
	"{\n// comment\n\"mcpServers\": {/* c */ \"a\": {\"url\": \"https://x//y\", \"type\":\"http\",},},}",
	`{"servers":{"a":{"type":"sse","url":"http://h","headers":{"k":"v"},"oauth":{"clientId":"c"}}},"inputs":[{"id":"x"}]}`,
	`{"mcp":{"servers":{"a":{"command":"${input:x}"}}}}`, `{"projects":{"/p":{"mcpServers":{"b":{"command":"c"}}}}}`,
	`{"mcpServers":{"a":{"httpUrl":"https://h","trust":true}}}`, `{"mcpServers":{"a":{"serverUrl":"https://h"}}}`,
	`"/* not a comment */"`, `{"a":"\"//"}`, "{\"a\":1 /* unclosed", "// only a comment",
}

var codexSeeds = []string{
	"[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n",
	"[mcp_servers.\"a.b\"]\ncommand = 'c' # comment\nenv = { K = \"v\" }\n",
	"[mcp_servers.a.env]\nK = \"v\"\n[mcp_servers.a]\nurl = \"https://x\"\nbearer_token_env_var = \"T\"\n",
	"[mcp_servers.a]\nargs = [\n \"multi\",\n \"line\",\n]\n", "[mcp_servers.a\n", "x = \"unclosed\n", "[[mcp_servers]]\n",
	"[mcp_servers.a]\ncommand = \"\\u00e9\\\"\"\n",
}

// FuzzReadAgentFile reads another agent's config file, as JSON(C) and as
// Codex TOML: no panic; each server has a name and an entry; and for JSONC,
// removing the comments of valid JSON keeps its decoded value.
func FuzzReadAgentFile(f *testing.F) {
	for _, s := range agentSeeds {
		f.Add([]byte(s), false)
	}
	for _, s := range codexSeeds {
		f.Add([]byte(s), true)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, codex bool) {
		af := AgentFile{Agent: "cursor", Label: "Cursor", Path: filepath.Join(dir, "mcp.json")}
		if codex {
			af = AgentFile{Agent: "codex", Label: "Codex", Path: filepath.Join(dir, "config.toml")}
		} else if json.Valid(data) {
			var want, got any
			if json.Unmarshal(data, &want) == nil {
				if err := json.Unmarshal(stripJSONC(data), &got); err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("stripJSONC changed valid JSON %q: %q (%v)", data, stripJSONC(data), err)
				}
			}
		}
		if err := os.WriteFile(af.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		servers, err := ReadAgentFile(af, "/project")
		if err != nil {
			if servers != nil {
				t.Fatalf("servers %v with error %v", servers, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range servers {
			if s.Name == "" && !codex && !bytes.Contains(data, []byte(`""`)) {
				t.Fatalf("a server without a name from %q", data)
			}
			if s.Entry == nil || seen[s.Name] {
				t.Fatalf("server %q: nil entry or listed twice", s.Name)
			}
			seen[s.Name] = true
		}
	})
}
