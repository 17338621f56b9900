package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportCLI runs codebridge import against sample config files of every
// agent format (discovery/testdata/agents) in a temporary home and project:
// the dry run writes nothing, --write writes the files TestPlanImport checks,
// an existing file is replaced only with --force.
func TestImportCLI(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "..", "discovery", "testdata", "agents"))); err != nil {
		t.Fatal(err)
	}
	home, project, mcps := filepath.Join(root, "home"), filepath.Join(root, "project"), filepath.Join(root, "mcps")
	claude := filepath.Join(home, ".claude.json")
	data, _ := os.ReadFile(claude)
	os.WriteFile(claude, bytes.ReplaceAll(data, []byte("{{PROJECT}}"), []byte(project)), 0o644)
	mine := []byte(`{"mcpServers": {"mine": {"command": "my-server"}}}` + "\n")
	if err := os.WriteFile(filepath.Join(mcps, "cursor.json"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(bridgeEnv(t, mcps), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	importCLI := func(args ...string) (string, string, int) {
		cmd := exec.Command(binary(t), append([]string{"import"}, args...)...)
		cmd.Env, cmd.Dir = env, project
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	listing := func() []string {
		entries, _ := os.ReadDir(mcps)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	before := listing()
	out, _, code := importCLI()
	for _, want := range []string{"Would write:", "claude-desktop.json  (from Claude Desktop)", "memory", "npx -y @modelcontextprotocol/server-memory",
		"codebridge           from ~/.config/Claude/claude_desktop_config.json: codebridge itself",
		"Could not read:", "invalid JSON", "Nothing was written"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("dry run with an unreadable agent file: exit %d; want 1", code)
	}
	if after := listing(); !slices.Equal(before, after) {
		t.Errorf("the dry run wrote: %v -> %v", before, after)
	}

	out, stderr, code := importCLI("--write")
	if code != 1 || !strings.Contains(stderr, "cursor.json exists: not replaced (--force replaces it") {
		t.Errorf("--write over an existing cursor.json: exit %d\n%s", code, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(mcps, "cursor.json")); !bytes.Equal(got, mine) {
		t.Errorf("cursor.json was replaced without --force:\n%s", got)
	}
	if !strings.Contains(out, `{"mcpServers": {"codebridge": {"command": `) {
		t.Errorf("--write does not print the entry to use instead:\n%s", out)
	}
	for _, agent := range []string{"claude-desktop", "claude-code", "vscode", "windsurf", "gemini", "codex"} {
		got, err := os.ReadFile(filepath.Join(mcps, agent+".json"))
		want, _ := os.ReadFile(filepath.Join("..", "..", "discovery", "testdata", "agents", "want", agent+".json"))
		if err != nil || !bytes.Equal(got, bytes.ReplaceAll(want, []byte("{{PROJECT}}"), []byte(project))) {
			t.Errorf("%s.json: %v\n%s\nwant:\n%s", agent, err, got, want)
		}
	}

	// Everything is there now but cursor's: --force writes it alone.
	out, _, _ = importCLI("--write", "--force")
	got, _ := os.ReadFile(filepath.Join(mcps, "cursor.json"))
	if !strings.Contains(string(got), `"linear"`) || !strings.Contains(out, "Wrote 1 file(s)") {
		t.Errorf("--write --force: cursor.json is\n%s\noutput:\n%s", got, out)
	}
}
