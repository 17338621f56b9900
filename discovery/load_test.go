package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// writeFiles writes name→content into dir; an empty content deletes the file.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if content == "" {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var testEnv = Options{LookupEnv: env(map[string]string{"TOKEN": "s3cret", "HOME": "/home/u", "EMPTY": ""})}

func TestLoadFormats(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"claude.json": `{
  "description": "from Claude Desktop",
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "elicitation": true},
    "memory": {
      "command": "${HOME}/bin/mcp-server-memory",
      "env": {"MEMORY_FILE": "${env:HOME}/memory.json", "T": "${TOKEN}", "D": "${NOPE:-fallback}", "E": "${EMPTY}"},
      "cwd": "/tmp",
      "description": "a knowledge graph"
    },
    "off": {"command": "x", "disabled": true, "env": {"K": "${UNSET}"}}
  }
}`,
		"vscode.json": `{
  "servers": {
    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    "bare": {"url": "https://example.com/bare"},
    "legacy": {"type": "sse", "url": "https://example.com/sse", "trust": "scan", "maxConcurrency": 2},
    "explicit": {"type": "stdio", "command": "node", "args": ["server.js", "--token=${TOKEN}"], "trust": "trusted"},
    "camel": {"type": "streamableHttp", "url": "https://example.com/c", "elicitation": false, "sampling": false}
  }
}`,
		"notes.txt":    `not json`,
		".hidden.json": `{`,
	})
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
		t.Fatal(err)
	}

	cfg := Load(dir, nil, testEnv)
	claude, vscode := filepath.Join(dir, "claude.json"), filepath.Join(dir, "vscode.json")
	want := []*Server{
		{Name: "bare", Source: vscode, Transport: Streamable, URL: "https://example.com/bare"},
		{Name: "camel", Source: vscode, Transport: Streamable, URL: "https://example.com/c", NoElicitation: true, NoSampling: true},
		{Name: "everything", Source: claude, Description: "from Claude Desktop", Transport: Stdio, Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-everything"}},
		{Name: "explicit", Source: vscode, Transport: Stdio, Command: "node", Args: []string{"server.js", "--token=s3cret"}, Trusted: true},
		{Name: "legacy", Source: vscode, Transport: SSE, URL: "https://example.com/sse", MaxConcurrency: 2},
		{Name: "memory", Source: claude, Description: "a knowledge graph", Transport: Stdio,
			Command: "/home/u/bin/mcp-server-memory", Cwd: "/tmp",
			Env: map[string]string{"MEMORY_FILE": "/home/u/memory.json", "T": "s3cret", "D": "fallback", "E": ""}},
		{Name: "off", Source: claude, Description: "from Claude Desktop", Disabled: true, Transport: Stdio, Command: "x",
			Env: map[string]string{"K": "${UNSET}"}},
		{Name: "remote", Source: vscode, Transport: Streamable, URL: "https://example.com/mcp",
			Headers: map[string]string{"Authorization": "Bearer s3cret"}},
	}
	if diff := cmp.Diff(want, cfg.Servers); diff != "" {
		t.Errorf("Servers mismatch (-want +got):\n%s", diff)
	}
	if len(cfg.Problems) != 0 {
		t.Errorf("unexpected problems: %v", cfg.Problems)
	}
	if got := cfg.Server("memory"); got == nil || got.Cwd != "/tmp" {
		t.Errorf("Server(memory) = %+v", got)
	}
	if got := cfg.Server("nope"); got != nil {
		t.Errorf("Server(nope) = %+v, want nil", got)
	}
	if diff := cmp.Diff([]string{"bare", "camel", "everything", "explicit", "legacy", "memory", "off", "remote"}, cfg.Names()); diff != "" {
		t.Errorf("Names mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "MCPs")
	cfg := Load(dir, nil, Options{})
	if cfg.Dir != dir || len(cfg.Servers) != 0 || len(cfg.Problems) != 0 {
		t.Errorf("Load(missing) = %+v, want an empty config", cfg)
	}
}

func TestLoadProblems(t *testing.T) {
	tests := []struct {
		name    string
		content string
		servers []string  // names loaded from the file
		want    []Problem // Path is filled in; Message is a substring
	}{
		{
			name:    "syntax error",
			content: "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}",
			want:    []Problem{{Line: 3, Column: 26, Message: "invalid JSON: invalid character '}'"}},
		},
		{
			name:    "empty file",
			content: "  \n",
			want:    []Problem{{Message: "the file is empty"}},
		},
		{
			name:    "array",
			content: "\n [1]",
			want:    []Problem{{Line: 2, Column: 2, Message: "must hold a JSON object like {\"mcpServers\": {...}}, found an array"}},
		},
		{
			name:    "null",
			content: "null",
			want:    []Problem{{Line: 1, Column: 1, Message: "found null"}},
		},
		{
			name:    "no section",
			content: `{"other": 1}`,
			want:    []Problem{{Message: `no "mcpServers" object`, Warning: true}},
		},
		{
			name:    "section not an object",
			content: `{"mcpServers": []}`,
			want:    []Problem{{Line: 1, Column: 2, Message: `"mcpServers" must be an object mapping server names to definitions, found an array`}},
		},
		{
			name: "bad servers, good one loads",
			content: `{"mcpServers": {
  "good": {"command": "x"},
  "notobj": "x",
  "neither": {"args": []},
  "both": {"command": "x", "url": "http://h"},
  "badargs": {"command": "x", "args": ["ok", 8080]},
  "argsobj": {"command": "x", "args": {}},
  "badenv": {"command": "x", "env": {"PORT": 1}},
  "badcmd": {"command": ["x"]},
  "badtype": {"type": "websocket", "url": "ws://h"},
  "stdiourl": {"type": "stdio", "url": "http://h"},
  "ssecmd": {"type": "sse", "command": "x"},
  "undef": {"command": "x", "env": {"K": "${MISSING}"}},
  "input": {"url": "http://h", "headers": {"K": "${input:key}"}},
  "unclosed": {"command": "x", "args": ["${TOKEN"]},
  "disabled": {"command": "x", "disabled": "yes"},
  "desc": {"command": "x", "description": 3},
  "sampling": {"command": "x", "sampling": "no"},
  "trust": {"command": "x", "trust": "yes"},
  "conc0": {"command": "x", "maxConcurrency": 0},
  "conchalf": {"command": "x", "maxConcurrency": 1.5},
  "concstr": {"command": "x", "maxConcurrency": "2"},
  "concsnake": {"command": "x", "max_concurrency": 2}
}}`,
			servers: []string{"good"},
			want: []Problem{
				{Server: "notobj", Line: 3, Column: 3, Message: "the definition must be an object"},
				{Server: "neither", Line: 4, Column: 3, Message: `needs "command"`},
				{Server: "both", Line: 5, Column: 3, Message: `has both "command" and "url"`},
				{Server: "badargs", Line: 6, Column: 46, Message: "args[1] must be a string, found number 8080: quote it"},
				{Server: "argsobj", Line: 7, Column: 31, Message: `"args" must be an array of strings`},
				{Server: "badenv", Line: 8, Column: 38, Message: "env.PORT must be a string, found number 1"},
				{Server: "badcmd", Line: 9, Column: 14, Message: `"command" must be a string, found an array`},
				{Server: "badtype", Line: 10, Column: 15, Message: `unknown "type" "websocket"`},
				{Server: "stdiourl", Line: 11, Column: 16, Message: `"type": "stdio" needs "command"`},
				{Server: "ssecmd", Line: 12, Column: 14, Message: `"type": "sse" needs "url"`},
				{Server: "undef", Line: 13, Column: 37, Message: "env.K: undefined variable ${MISSING}: set MISSING in codebridge's environment"},
				{Server: "input", Line: 14, Column: 44, Message: "unsupported reference ${input:key}"},
				{Server: "unclosed", Line: 15, Column: 41, Message: "unclosed"},
				{Server: "disabled", Line: 16, Column: 32, Message: `"disabled" must be true or false`},
				{Server: "desc", Line: 17, Column: 28, Message: `"description" must be a string`},
				{Server: "sampling", Line: 18, Column: 32, Message: `"sampling" must be true or false`},
				{Server: "trust", Line: 19, Column: 29, Message: `"trust" must be "scan" (the default: each new or changed tool definition is scanned for tool poisoning before it is pinned) or "trusted" (not scanned), found string "yes"`},
				{Server: "conc0", Line: 20, Column: 29, Message: `"maxConcurrency" must be a whole number from 1 to 65536, the tool calls the server is given at once, found number 0`},
				{Server: "conchalf", Line: 21, Column: 32, Message: `found number 1.5`},
				{Server: "concstr", Line: 22, Column: 31, Message: `found string "2"`},
				{Server: "concsnake", Line: 23, Column: 33, Message: `unknown key "max_concurrency": write "maxConcurrency" (this spelling)`},
			},
		},
		{
			name: "self is skipped",
			content: `{"mcpServers": {
  "bin": {"command": "/usr/local/bin/codebridge"},
  "gorun": {"command": "go", "args": ["run", "github.com/codebridge-mcp/codebridge/cmd/codebridge@latest"]},
  "other": {"command": "codebridge-helper"}
}}`,
			servers: []string{"other"},
			want: []Problem{
				{Server: "bin", Line: 2, Column: 3, Message: "would start codebridge inside codebridge", Warning: true, Err: ErrSelfServer},
				{Server: "gorun", Line: 3, Column: 3, Message: "nest bridges on purpose", Warning: true, Err: ErrSelfServer},
			},
		},
		{
			name:    "both sections, same name",
			content: `{"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "y"}, "b": {"url": "http://h"}}}`,
			servers: []string{"a", "b"},
			want:    []Problem{{Server: "a", Line: 1, Column: 53, Message: `also defined under "mcpServers"`, Warning: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			writeFiles(t, dir, map[string]string{"f.json": tt.content})
			cfg := Load(dir, nil, testEnv)
			if diff := cmp.Diff(tt.servers, cfg.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("servers mismatch (-want +got):\n%s", diff)
			}
			checkProblems(t, cfg.Problems, path, tt.want)
		})
	}
}

// checkProblems compares problems, where want's Message is a substring.
func checkProblems(t *testing.T, got []Problem, path string, want []Problem) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), formatProblems(got))
		return
	}
	for i, w := range want {
		g := got[i]
		if !strings.Contains(g.Message, w.Message) {
			t.Errorf("problem %d message %q does not contain %q", i, g.Message, w.Message)
		}
		w.Message = g.Message
		if w.Path == "" {
			w.Path = path
		}
		if diff := cmp.Diff(w, g, cmpopts.EquateErrors()); diff != "" {
			t.Errorf("problem %d mismatch (-want +got):\n%s", i, diff)
		}
	}
}

func formatProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

func TestLoadAllowSelf(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers": {"nested": {"command": "codebridge"}}}`})
	cfg := Load(dir, nil, Options{AllowSelf: true})
	if cfg.Server("nested") == nil || len(cfg.Problems) != 0 {
		t.Errorf("AllowSelf: servers %v, problems %v", cfg.Names(), cfg.Problems)
	}
}

func TestLoadDuplicateAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.json": `{"mcpServers": {"dup": {"command": "from-a"}}}`,
		"b.json": `{"mcpServers": {"x": {"command": "x"},
 "dup": {"command": "from-b"}}}`,
	})
	cfg := Load(dir, nil, Options{})
	if got := cfg.Server("dup"); got == nil || got.Command != "from-a" {
		t.Fatalf("dup = %+v, want the definition from a.json", got)
	}
	checkProblems(t, cfg.Problems, filepath.Join(dir, "b.json"), []Problem{
		{Server: "dup", Line: 2, Column: 2, Message: "also defined in " + filepath.Join(dir, "a.json") + ", whose definition is used", Warning: true},
	})

	// When a.json goes away, b.json's definition takes over.
	writeFiles(t, dir, map[string]string{"a.json": ""})
	cfg = Load(dir, cfg, Options{})
	if got := cfg.Server("dup"); got == nil || got.Command != "from-b" {
		t.Fatalf("after deleting a.json, dup = %+v, want the definition from b.json", got)
	}
	if len(cfg.Problems) != 0 {
		t.Errorf("unexpected problems: %v", cfg.Problems)
	}
}

func TestLoadKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	writeFiles(t, dir, map[string]string{
		"a.json": `{"mcpServers": {"a1": {"command": "a1"}, "a2": {"command": "a2", "env": {"T": "${TOKEN}"}}}}`,
		"b.json": `{"mcpServers": {"b1": {"command": "b1"}}}`,
	})
	cfg1 := Load(dir, nil, testEnv)
	if diff := cmp.Diff([]string{"a1", "a2", "b1"}, cfg1.Names()); diff != "" {
		t.Fatalf("first load (-want +got):\n%s", diff)
	}

	// a.json is broken (half-saved) and b.json changes: a's servers stay.
	writeFiles(t, dir, map[string]string{
		"a.json": `{"mcpServers": {"a1": {"command": "a1-new"`,
		"b.json": `{"mcpServers": {"b1": {"command": "b1-new"}}}`,
	})
	cfg2 := Load(dir, cfg1, testEnv)
	if diff := cmp.Diff([]string{"a1", "a2", "b1"}, cfg2.Names()); diff != "" {
		t.Fatalf("broken a.json (-want +got):\n%s", diff)
	}
	if cfg2.Server("a1") != cfg1.Server("a1") || cfg2.Server("b1").Command != "b1-new" {
		t.Errorf("a1 = %+v (want the previous one), b1 = %+v (want b1-new)", cfg2.Server("a1"), cfg2.Server("b1"))
	}
	checkProblems(t, cfg2.Problems, a, []Problem{
		{Line: 1, Column: 42, Message: "unexpected end of JSON input: fix the file (no comments or trailing commas allowed); keeping the servers it defined before (a1, a2)"},
	})

	// Structurally broken (the section is not an object): also kept.
	writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers": []}`})
	if got := Load(dir, cfg2, testEnv); got.Server("a1") != cfg1.Server("a1") || !strings.Contains(got.Problems[0].Message, "keeping the servers it defined before (a1, a2)") {
		t.Errorf("section not an object: servers %v, problems %v", got.Names(), got.Problems)
	}
	writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers": {"a1": {"command": "a1-new"`})

	// Still broken on the next reload: still kept (prev carries them on).
	cfg3 := Load(dir, cfg2, testEnv)
	if diff := cmp.Diff([]string{"a1", "a2", "b1"}, cfg3.Names()); diff != "" {
		t.Fatalf("still broken (-want +got):\n%s", diff)
	}

	// Fixed, but a2 now refers to an undefined variable: a2 keeps its
	// previous definition, a1 takes the new one.
	writeFiles(t, dir, map[string]string{
		"a.json": `{"mcpServers": {"a1": {"command": "a1-new"}, "a2": {"command": "a2", "env": {"T": "${TOKEN}", "U": "${UNDEFINED}"}}}}`,
	})
	cfg4 := Load(dir, cfg3, testEnv)
	if cfg4.Server("a1").Command != "a1-new" || cfg4.Server("a2") != cfg1.Server("a2") {
		t.Errorf("a1 = %+v (want a1-new), a2 = %+v (want the previous one)", cfg4.Server("a1"), cfg4.Server("a2"))
	}
	checkProblems(t, cfg4.Problems, a, []Problem{
		{Server: "a2", Line: 1, Column: 95, Message: "env.U: undefined variable ${UNDEFINED}: set UNDEFINED in codebridge's environment, or give a default with ${UNDEFINED:-value}; keeping its previous definition until this is fixed"},
	})

	// A server removed from the file is gone; a deleted file's servers are gone.
	writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers": {"a1": {"command": "a1-new"}}}`, "b.json": ""})
	cfg5 := Load(dir, cfg4, testEnv)
	if diff := cmp.Diff([]string{"a1"}, cfg5.Names()); diff != "" {
		t.Fatalf("after removals (-want +got):\n%s", diff)
	}
	if len(cfg5.Problems) != 0 {
		t.Errorf("unexpected problems: %v", cfg5.Problems)
	}

	// A file broken since before it ever loaded keeps nothing.
	writeFiles(t, dir, map[string]string{"b.json": `{`})
	cfg6 := Load(dir, cfg5, testEnv)
	if diff := cmp.Diff([]string{"a1"}, cfg6.Names()); diff != "" {
		t.Fatalf("new broken file (-want +got):\n%s", diff)
	}
	checkProblems(t, cfg6.Problems, b, []Problem{{Line: 1, Column: 1, Message: "unexpected end of JSON input"}})
	if strings.Contains(cfg6.Problems[0].Message, "keeping") {
		t.Errorf("message claims to keep servers: %q", cfg6.Problems[0].Message)
	}
}

func TestLoadUnreadableFolderKeepsAll(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can read any folder")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.json": `{"mcpServers": {"a": {"command": "a"}}}`})
	cfg := Load(dir, nil, Options{})
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	cfg = Load(dir, cfg, Options{})
	if cfg.Server("a") == nil || len(cfg.Problems) != 1 {
		t.Errorf("servers %v, problems %v", cfg.Names(), cfg.Problems)
	}
}

func TestDiffAndEqual(t *testing.T) {
	mk := func(servers ...*Server) *Config { return &Config{Servers: servers} }
	a := &Server{Name: "a", Command: "a", Source: "1.json"}
	aMoved := &Server{Name: "a", Command: "a", Source: "2.json", Args: []string{}}
	b := &Server{Name: "b", Command: "b"}
	b2 := &Server{Name: "b", Command: "b", Env: map[string]string{"K": "v"}}
	c := &Server{Name: "c", URL: "http://c", Transport: Streamable}
	d := &Server{Name: "d", Command: "d"}

	if !a.Equal(aMoved) {
		t.Error("a moved to another file with empty args should be Equal")
	}
	if b.Equal(b2) || b.Equal(nil) || !(*Server)(nil).Equal(nil) {
		t.Error("Equal on env change or nil is wrong")
	}
	added, removed, changed := Diff(mk(a, b, c), mk(aMoved, b2, d))
	if diff := cmp.Diff([][]string{{"d"}, {"c"}, {"b"}}, [][]string{added, removed, changed}); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	added, removed, changed = Diff(nil, mk(a))
	if diff := cmp.Diff([][]string{{"a"}, nil, nil}, [][]string{added, removed, changed}); diff != "" {
		t.Errorf("Diff from nil (-want +got):\n%s", diff)
	}
	if mk(a).Equal(mk(aMoved)) {
		t.Error("Config.Equal should notice a changed Source")
	}
	if !(*Config)(nil).Equal(&Config{Dir: "x"}) {
		t.Error("nil Config should equal an empty one")
	}
	if mk(a).Equal(&Config{Servers: []*Server{a}, Problems: []Problem{{Path: "p"}}}) {
		t.Error("Config.Equal should compare problems")
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{Path: "/m/a.json", Server: "x", Line: 3, Column: 7, Message: "bad", Warning: true}
	if got, want := p.String(), `/m/a.json:3:7: warning: server "x": bad`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	p = Problem{Path: "/m/a.json", Message: "bad"}
	if got, want := p.String(), `/m/a.json: bad`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
