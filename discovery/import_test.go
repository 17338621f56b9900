package discovery

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

var updateImport = flag.Bool("update", false, "rewrite testdata/agents/want")

// agentTree copies testdata/agents into a temporary directory, as a home
// (home, or mac for macOS paths), a project and a config folder, with the
// project's path written where Claude Code's ~/.claude.json keys it.
func agentTree(t testing.TB) (root string) {
	t.Helper()
	root = t.TempDir()
	src := filepath.Join("testdata", "agents")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == src {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "want" || strings.HasPrefix(rel, "want"+string(filepath.Separator)) {
			return nil
		}
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data = []byte(strings.ReplaceAll(string(data), "{{PROJECT}}", filepath.Join(root, "project")))
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// describePlan is a plan as text, paths relative to root, for comparing.
func describePlan(root string, p ImportPlan) string {
	var b strings.Builder
	rel := func(path string) string { r, _ := filepath.Rel(root, path); return r }
	for _, f := range p.Files {
		var names []string
		for _, s := range f.Servers {
			n := s.Name
			if s.Note != "" {
				n += " (" + s.Note + ")"
			}
			names = append(names, n)
		}
		fmt.Fprintf(&b, "write %s exists=%v from %s: %s\n", rel(f.Path), f.Exists, f.Label, strings.Join(names, ", "))
	}
	for _, s := range p.Skipped {
		fmt.Fprintf(&b, "skip %s from %s: %s\n", s.Name, rel(s.File.Path), strings.ReplaceAll(s.Reason, root+"/", ""))
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(&b, "problem %s: %s\n", rel(pr.Path), pr.Message)
	}
	return b.String()
}

func TestPlanImport(t *testing.T) {
	root := agentTree(t)
	places := AgentPlaces{Home: filepath.Join(root, "home"), Cwd: filepath.Join(root, "project"), GOOS: "linux"}
	plan := PlanImport(places, filepath.Join(root, "mcps"), Options{}, false)
	got := describePlan(root, plan)
	want := `write mcps/claude-desktop.json exists=false from Claude Desktop: filesystem, memory
write mcps/claude-code.json exists=false from Claude Code: github, sqlite, brave, events
write mcps/cursor.json exists=false from Cursor: linear (a remote server without headers signs in with OAuth, if at all: run codebridge login linear once it is imported)
write mcps/vscode.json exists=false from VS Code: gh (uses ${input:...}, a value VS Code asks for: put the value or an ${ENV_VAR} in its place, then remove "disabled"), playwright ("envFile" is not supported: copy its variables into "env")
write mcps/windsurf.json exists=false from Windsurf: remote-docs (a remote server without headers signs in with OAuth, if at all: run codebridge login remote-docs once it is imported)
write mcps/gemini.json exists=false from Gemini CLI: api, everything, hosted (a remote server without headers signs in with OAuth, if at all: run codebridge login hosted once it is imported), stream
write mcps/codex.json exists=false from Codex: docs, figma, multi, off
skip codebridge from home/.config/Claude/claude_desktop_config.json: codebridge itself
skip mem2 from home/.cursor/mcp.json: the same server as "memory" in home/.config/Claude/claude_desktop_config.json
skip memory from home/.cursor/mcp.json: a server of that name is already in ` + "home/.config/Claude/claude_desktop_config.json (Claude Desktop)" + `
skip time from home/.config/Code/User/mcp.json: the same server as "clock" in mcps/existing.json
skip fetch from home/.config/Code/User/settings.json: a server of that name is already in mcps/existing.json
skip broken from project/.cursor/mcp.json: "command" must be a string, found number 7
skip myself from project/.vscode/mcp.json: codebridge itself
problem project/.gemini/settings.json: Gemini CLI: invalid JSON at line 1, column 41: unexpected end of JSON input; skipped
`
	if got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}

	// The files, compared with testdata/agents/want, and loadable.
	out := t.TempDir()
	for _, f := range plan.Files {
		golden := filepath.Join("testdata", "agents", "want", f.Agent+".json")
		if *updateImport {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			os.WriteFile(golden, f.Content(), 0o644)
		}
		wantFile, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./discovery -run TestPlanImport -update writes it)", err)
		}
		if string(f.Content()) != string(wantFile) {
			t.Errorf("%s:\n%s\nwant:\n%s", f.Agent, f.Content(), wantFile)
		}
		os.WriteFile(filepath.Join(out, f.Agent+".json"), f.Content(), 0o644)
	}
	cfg := Load(out, nil, Options{LookupEnv: func(string) (string, bool) { return "x", true }})
	for _, p := range cfg.Problems {
		if !p.Warning {
			t.Errorf("an imported file does not load: %s", p)
		}
	}
	if names := cfg.Names(); len(names) != 18 {
		sort.Strings(names)
		t.Errorf("imported servers load as %v; want the 18 planned", names)
	}
}

func TestPlanImportMacOS(t *testing.T) {
	root := agentTree(t)
	plan := PlanImport(AgentPlaces{Home: filepath.Join(root, "mac"), GOOS: "darwin"}, filepath.Join(root, "empty"), Options{}, false)
	if got := describePlan(root, plan); got != "write empty/claude-desktop.json exists=false from Claude Desktop: puppeteer\n" {
		t.Errorf("plan with macOS paths:\n%s", got)
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{"a": "x // not a comment", /* c */ "b": [1, 2,], // end
"c": "\"/*\"",}`
	got := string(stripJSONC([]byte(in)))
	if len(got) != len(in) {
		t.Fatalf("length changed: %d -> %d", len(in), len(got))
	}
	for _, want := range []string{`"x // not a comment"`, `[1, 2 ]`, `"\"/*\""`} {
		if !strings.Contains(got, want) {
			t.Errorf("stripJSONC lost %s:\n%s", want, got)
		}
	}
}

// TestReferences: every ${...} of an entry, in any field, once each.
func TestReferences(t *testing.T) {
	entry := map[string]any{
		"url":     "https://h/${env:USER}/mcp",
		"headers": map[string]any{"A": "Bearer ${cmd:pass x}", "B": "${env:USER}"},
		"args":    []any{"--k", "${keyring:s/a}${env:X:-d}", 3},
		"env":     map[string]any{"Z": "${unclosed"},
	}
	got := References(entry)
	want := []string{"${keyring:s/a}", "${env:X:-d}", "${unclosed", "${cmd:pass x}", "${env:USER}"}
	if !slices.Equal(got, want) {
		t.Errorf("References = %q, want %q", got, want)
	}
}
