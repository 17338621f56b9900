package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// hostile is text that sandboxed code or a downstream server chose, meant
// to forge a table row, clear the screen, write the clipboard (OSC 52) and
// reorder what follows (a bidirectional override).
const hostile = "x\n2026-01-01 00:00:00.000  s9  1  github  delete_repo  1.0  ok\r\x1b[2J\x1b]52;c;ZXZpbA==\x07\u009b31m\u202e\t\x7f"

// runHere runs the codebridge command line args in this process with env's
// codebridge settings, returning its output and exit status.
func runHere(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MCP_BRIDGE_") || k == settings.FileEnv || strings.HasPrefix(k, "CODEBRIDGE_TEST_") {
			t.Setenv(k, v)
		}
	}
	var o, e strings.Builder
	code = run(t.Context(), args, nil, &o, &e)
	return o.String(), e.String(), code
}

// printsSafely fails t when out holds a character that does not print,
// other than the newlines that end its lines, or holds fewer lines than
// lines (a row split in two) or more (a row forged).
func printsSafely(t *testing.T, what, out string, lines int) {
	t.Helper()
	for i, r := range out {
		if r != '\n' && r != ' ' && !unicode.IsGraphic(r) {
			t.Errorf("%s prints %U at byte %d:\n%q", what, r, i, out)
			break
		}
	}
	if lines >= 0 {
		if n := strings.Count(out, "\n"); n != lines {
			t.Errorf("%s prints %d lines, want %d:\n%s", what, n, lines, out)
		}
	}
}

// TestHostileTextInTables: names, descriptions, sources and errors that
// sandboxed code and downstream servers wrote reach the person's terminal
// with their control characters escaped, in every table the CLI prints.
func TestHostileTextInTables(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	env := append(bridgeEnv(t, dir), "MCP_BRIDGE_STATE_DIR="+state)

	l := audit.New(audit.Dir(state), audit.Options{})
	if err := l.Write(audit.Record{Time: time.Now(), Session: "s1", Run: 1, Server: hostile, Tool: hostile, Outcome: "unknown_server", Error: hostile}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runHere(t, env, "audit")
	if code != 0 {
		t.Fatalf("audit: exit %d: %s", code, errOut)
	}
	printsSafely(t, "audit", out, 2)
	if !strings.Contains(out, `x\n2026-01-01`) || !strings.Contains(out, `\x1b]52;c;`) {
		t.Errorf("audit does not show the escapes:\n%s", out)
	}

	st := memory.New(state)
	if err := st.Save("plan", json.RawMessage(`1`), json.RawMessage("{\"by\":\"\u009b31m\u202e\x7f\"}")); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveTool(memory.Tool{Name: "clean", Signature: "clean(rows)", Source: "def clean(rows):\n    return rows # \x1b[2J\x1b]52;c;ZXZpbA==\x07\u009b31m\u202e\x7f\n", Description: "Drops rows\r\x1b[2J\u202e\t\x7f\n" + hostile}); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runHere(t, env, "memory", "list")
	printsSafely(t, "memory list", out, 2)
	out, _, _ = runHere(t, env, "memory", "tools")
	printsSafely(t, "memory tools", out, 2)
	out, _, _ = runHere(t, env, "memory", "show-tool", "clean")
	printsSafely(t, "memory show-tool", out, 2)
	if !strings.Contains(out, `def clean(rows):`+"\n"+`    return rows # \x1b[2J\x1b]52;c;ZXZpbA==\x07\u009b31m\u202e\x7f`) {
		t.Errorf("memory show-tool does not keep the source's lines:\n%s", out)
	}

	// A server of a hostile name, from a hostile file name, that fails
	// saying hostile things; and one whose tool has a hostile name and
	// description.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	descFile := filepath.Join(t.TempDir(), "description")
	if err := os.WriteFile(descFile, []byte("Adds a note.\x1b[2J\u202e\r\nsecond line\x1b]52;c;ZXZpbA==\x07"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeServers(t, dir, "evil\x1b[2J.json", map[string]any{
		hostile: map[string]any{"command": "/bin/sh", "args": []string{"-c", `printf 'fail\033]52;c;ZXZpbA==\007\r\n' >&2; exit 3`}},
		"notes": map[string]any{"command": exe, "args": []string{"-test.run=^$"},
			"env": map[string]string{pinServerEnv: "1", pinServerDescEnv: descFile, pinServerNameEnv: "note\x1b[2J\u202e"}},
	})
	out, _, _ = runHere(t, env, "servers")
	printsSafely(t, "servers", out, -1)
	if !strings.Contains(out, `\x1b[2J.json`) {
		t.Errorf("servers does not show the file's name escaped:\n%s", out)
	}
	out, _, _ = runHere(t, env, "servers", "--tools")
	printsSafely(t, "servers --tools", out, -1)
	for _, w := range []string{`fail\x1b]52;c;`, `note\x1b[2J\u202e`, `Adds a note.\x1b[2J\u202e`} {
		if !strings.Contains(out, w) {
			t.Errorf("servers --tools does not show %q:\n%s", w, out)
		}
	}
	// The tool-poisoning scanner held the tool at first sight (its name
	// and description hold terminal escapes); review shows it, and what
	// the scanner found, escaped, after a change as before.
	if err := os.WriteFile(descFile, []byte("Adds a note, changed.\x1b[2J\u202e\r\nsecond line\x1b]52;c;ZXZpbA==\x07"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runHere(t, env, "tools", "review", "notes")
	printsSafely(t, "tools review", out, -1)
	for _, w := range []string{`notes.note\x1b[2J\u202e: new, and held by the tool-poisoning scanner`, `control-character in name`,
		"Adds a note, changed.\\x1b[2J\\u202e\n", `second line\x1b]52;c;`} {
		if !strings.Contains(out, w) {
			t.Errorf("tools review does not show %q:\n%s", w, out)
		}
	}
}
