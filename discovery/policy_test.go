package discovery

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolPolicyLoads(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.json": `{"mcpServers": {
  "fs": {"command": "x", "tools": {"allow": ["read_*", "list"], "deny": ["*secret*"]}, "readOnly": true},
  "rw": {"command": "x", "readOnly": false, "tools": {"allow": [], "deny": []}},
  "plain": {"command": "x"}
}}`})
	cfg := Load(dir, nil, testEnv)
	checkProblems(t, cfg.Problems, "", nil)
	yes, no := true, false
	want := map[string]ToolPolicy{
		"fs":    {Allow: []string{"read_*", "list"}, Deny: []string{"*secret*"}, ReadOnly: &yes},
		"rw":    {ReadOnly: &no}, // empty lists mean none, as missing ones do
		"plain": {},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, cfg.Server(name).Tools); diff != "" {
			t.Errorf("%s policy (-want +got):\n%s", name, diff)
		}
	}
}

// TestToolPolicyInvalid: a policy codebridge cannot read makes the entry
// invalid, at the right place, rather than admitting every tool.
func TestToolPolicyInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	writeFiles(t, dir, map[string]string{"f.json": `{"mcpServers": {
  "glob": {"command": "x", "tools": {"deny": ["ok", "[unclosed"]}},
  "notobj": {"command": "x", "tools": ["a"]},
  "notarr": {"command": "x", "tools": {"allow": "read_*"}},
  "notstr": {"command": "x", "tools": {"deny": [1]}},
  "typo": {"command": "x", "tools": {"denied": ["a"]}},
  "empty": {"command": "x", "tools": {"allow": [""]}},
  "ro": {"command": "x", "readOnly": "yes"},
  "spelling": {"command": "x", "read_only": true},
  "good": {"command": "x", "tools": {"deny": ["a\\*b"]}}
}}`})
	cfg := Load(dir, nil, testEnv)
	if diff := cmp.Diff([]string{"good"}, cfg.Names()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	checkProblems(t, cfg.Problems, path, []Problem{
		{Server: "glob", Line: 2, Column: 53, Message: `tools.deny[1]: "[unclosed" is not a valid glob`},
		{Server: "notobj", Line: 3, Column: 30, Message: `"tools" must be an object`},
		{Server: "notarr", Line: 4, Column: 40, Message: `"tools.allow" must be an array`},
		{Server: "notstr", Line: 5, Column: 49, Message: "tools.deny[0] must be a string, found number 1"},
		{Server: "typo", Line: 6, Column: 38, Message: `unknown key "denied" in "tools": use "allow" and "deny"`},
		{Server: "empty", Line: 7, Column: 49, Message: "tools.allow[0]: an empty pattern"},
		{Server: "ro", Line: 8, Column: 26, Message: `"readOnly" must be true or false, found string "yes"`},
		{Server: "spelling", Line: 9, Column: 32, Message: `unknown key "read_only": write "readOnly"`},
	})
}

// TestToolPolicyEdit: a change to the policy alone is a change of the
// server (so a watcher publishes it) but not of its endpoint (so a pool
// keeps the process).
func TestToolPolicyEdit(t *testing.T) {
	yes := true
	a := &Server{Name: "s", Transport: Stdio, Command: "x"}
	for _, p := range []ToolPolicy{{Deny: []string{"a"}}, {Allow: []string{"a"}}, {ReadOnly: &yes}} {
		b := *a
		b.Tools = p
		if a.Equal(&b) {
			t.Errorf("policy %+v: Equal = true, want false", p)
		}
		if !a.SameEndpoint(&b) {
			t.Errorf("policy %+v: SameEndpoint = false, want true", p)
		}
		if _, _, changed := Diff(&Config{Servers: []*Server{a}}, &Config{Servers: []*Server{&b}}); len(changed) != 1 {
			t.Errorf("policy %+v: Diff changed = %v, want [s]", p, changed)
		}
	}
}

func TestMatchTool(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"echo", "echo", true},
		{"echo", "echo2", false},
		{"get-*", "get-sum", true},
		{"*delete*", "delete_entities", true},
		{"read_?", "read_a", true},
		{"a\\*b", "a*b", true},
		{"a\\*b", "axb", false},
	} {
		if got := MatchTool(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchTool(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}
