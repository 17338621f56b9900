package settings

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/settings.md from the settings table")

// updateCommand rewrites docs/settings.md; TestSettingsDoc names it.
const updateCommand = "go test ./bridge/settings -run TestSettingsDoc -update"

// exampleFile is the settings file docs/settings.md shows; TestSettingsDoc
// loads it, so the example stays valid.
const exampleFile = `# Limits and policy for every agent on this machine.
max_runs = 4
max_sessions = 8
memory = "1g"
timeout = 60
max_timeout = "5m"
tools_deny = ["*delete*", "*drop*"]
read_only = true
audit_keep = 10
`

// settingsDoc is docs/settings.md, made from the settings table.
func settingsDoc() string {
	var b strings.Builder
	b.WriteString(`# Settings

<!-- Generated from the settings table in bridge/settings/config.go by
     ` + updateCommand + `
     Edit the table or the generator (bridge/settings/settingsdoc_test.go), not this page. -->

codebridge reads its settings in three layers, each winning over the ones before it:

1. **Defaults**: the table below.
2. **The settings file**, ` + "`config.toml`" + ` in the folder ` + "`codebridge`" + ` of the user's config folder:
   ` + "`~/.config/codebridge/config.toml`" + ` on Linux (` + "`$XDG_CONFIG_HOME/codebridge/config.toml`" + ` when that is
   set), ` + "`~/Library/Application Support/codebridge/config.toml`" + ` on macOS,
   ` + "`%AppData%\\codebridge\\config.toml`" + ` on Windows. ` + "`" + FileEnv + "`" + ` names another file instead.
   It is the place for a machine's policy and limits (tools allowed and denied, runs, memory,
   time limits), which every agent that starts codebridge then shares.
3. **Environment variables** ` + "`" + EnvPrefix + "*`" + `, named as in the reference Python bridge so existing
   configs keep working; an agent's MCP entry can set them for that agent alone. A variable
   that is set wins even when it is empty (` + "`MCP_BRIDGE_PRELOAD=`" + ` preloads nothing).

Some settings also have a command-line flag, which wins over all three: ` + flagList() + `.
` + "`codebridge config`" + ` prints every setting, its value and where it came from
(` + "`default`" + `, the file's path, the variable or the flag); add ` + "`--json`" + ` for programs.

An invalid value stops codebridge at start-up with a message naming where it was set: the file
and key (` + "`config.toml: invalid memory = \"lots\": ...`" + `) or the variable
(` + "`invalid MCP_BRIDGE_MEMORY=\"lots\": ...`" + `). A missing settings file is fine, unless
` + "`" + FileEnv + "`" + ` names it; a malformed one, or one with a key that is no setting, is an error
naming the file, and the line for a syntax error.

## The settings file

The file is [TOML](https://toml.io). Its keys are the settings' names in the first column below;
a value is a string, a number or a boolean, and a list of strings stands for a comma-separated
value (` + "`tools_deny = [\"a\", \"b\"]`" + ` is ` + "`MCP_BRIDGE_TOOLS_DENY=a,b`" + `). Sizes are bytes or
take k, m or g (` + "`\"512m\"`" + `); times are whole seconds (` + "`30`" + `) or a Go duration (` + "`\"45s\"`" + `).
For example:

` + "```toml\n" + exampleFile + "```" + `

## Every setting

| key | variable | default | meaning |
| --- | --- | --- | --- |
`)
	for _, s := range settings {
		def := "(unset)"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", s.key, envName(s.key), def, strings.ReplaceAll(s.help, "|", `\|`))
	}
	b.WriteString(`
## Other variables

` + "`MCP_BRIDGE_RUNTIME`, `MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT` and `MCP_BRIDGE_OUTPUT_MODE`" + ` of the reference
bridge are accepted and ignored; any other unknown ` + "`" + EnvPrefix + "*`" + ` variable is logged as a warning.
` + "`CONTAINER_HOST`, `CONTAINER_SSHKEY` and `CONTAINER_CONNECTION`" + ` select a Podman other than the local
one, as they do for the ` + "`podman`" + ` command (see [Podman elsewhere](remote-podman.md)).
`)
	return b.String()
}

// flagList names the settings' flags, from the table.
func flagList() string {
	var flags []string
	for _, s := range settings {
		if s.flag != "" {
			flags = append(flags, fmt.Sprintf("`--%s` (`%s`)", s.flag, s.key))
		}
	}
	return strings.Join(flags, ", ")
}

// TestSettingsDoc keeps docs/settings.md what the settings table makes of it;
// with -update it writes the page.
func TestSettingsDoc(t *testing.T) {
	path := filepath.Join(repoRoot(t), "docs", "settings.md")
	want := settingsDoc()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("docs/settings.md differs from the settings table: run '%s'", updateCommand)
	}
}

// TestSettingsDocExample loads the page's example settings file.
func TestSettingsDocExample(t *testing.T) {
	r, err := Load(Sources{Environ: []string{FileEnv + "=" + writeFile(t, exampleFile)}})
	if err != nil {
		t.Fatalf("the example settings file of docs/settings.md: %v", err)
	}
	if r.Config.MaxRuns != 4 || len(r.Config.Tools.Deny) != 2 {
		t.Errorf("the example was not applied: %+v", r.Config)
	}
}
