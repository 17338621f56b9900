package settings

import (
	"encoding/json"
	"fmt"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeFile writes a settings file in a fresh folder and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadLayers checks that each layer wins over the ones before it
// (default < file < env < flag) and that every value names its origin.
func TestLoadLayers(t *testing.T) {
	file := writeFile(t, `
# limits for every agent on this machine
max_runs = 4
memory = "1g"
timeout = 45
read_only = true
tools_deny = ["*delete*", "drop_*"]
http = "127.0.0.1:9000"
`)
	tests := []struct {
		name    string
		environ []string
		flags   map[string]string
		key     string
		want    string
		origin  Origin
	}{
		{name: "default", key: "pids", want: "128", origin: Origin{LayerDefault, ""}},
		{name: "file over default", key: "max_runs", want: "4", origin: Origin{LayerFile, file}},
		{name: "file list", key: "tools_deny", want: "*delete*,drop_*", origin: Origin{LayerFile, file}},
		{name: "file boolean", key: "read_only", want: "true", origin: Origin{LayerFile, file}},
		{name: "env over file", environ: []string{"MCP_BRIDGE_MEMORY=2g"}, key: "memory", want: "2g", origin: Origin{LayerEnv, "MCP_BRIDGE_MEMORY"}},
		{name: "env over default", environ: []string{"MCP_BRIDGE_PIDS=64"}, key: "pids", want: "64", origin: Origin{LayerEnv, "MCP_BRIDGE_PIDS"}},
		{name: "empty env over file", environ: []string{"MCP_BRIDGE_TOOLS_DENY="}, key: "tools_deny", want: "", origin: Origin{LayerEnv, "MCP_BRIDGE_TOOLS_DENY"}},
		{name: "flag over env", environ: []string{"MCP_BRIDGE_HTTP=127.0.0.1:9001"}, flags: map[string]string{"http": "127.0.0.1:9002"},
			key: "http", want: "127.0.0.1:9002", origin: Origin{LayerFlag, "--http"}},
		{name: "flag that is no setting", flags: map[string]string{"timeout": "5"}, key: "timeout", want: "45", origin: Origin{LayerFile, file}},
		{name: "secret redacted", environ: []string{"MCP_BRIDGE_HTTP_TOKEN=0123456789abcdef"}, key: "http_token",
			want: "(set, 16 characters)", origin: Origin{LayerEnv, "MCP_BRIDGE_HTTP_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Load(Sources{Environ: append([]string{FileEnv + "=" + file}, tt.environ...), Flags: tt.flags})
			if err != nil {
				t.Fatal(err)
			}
			if !r.FileFound || r.File != file {
				t.Errorf("file = %q, found %v; want %q", r.File, r.FileFound, file)
			}
			for _, v := range r.Values {
				if v.Key != tt.key {
					continue
				}
				if v.Text != tt.want || v.Origin != tt.origin || v.Env != "MCP_BRIDGE_"+strings.ToUpper(tt.key) {
					t.Errorf("%s = %q from %v; want %q from %v", tt.key, v.Text, v.Origin, tt.want, tt.origin)
				}
			}
		})
	}

	r, err := Load(Sources{Environ: []string{FileEnv + "=" + file}})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config
	if c.MaxRuns != 4 || c.Memory != 1<<30 || c.Timeout != 45*time.Second || c.HTTP != "127.0.0.1:9000" ||
		c.Tools.ReadOnly == nil || !*c.Tools.ReadOnly || strings.Join(c.Tools.Deny, " ") != "*delete* drop_*" {
		t.Errorf("config from the file: %+v", c)
	}
}

// TestLoadFileLocation checks where the settings file is looked for: the
// user's config folder, or the file MCP_BRIDGE_SETTINGS_FILE names.
func TestLoadFileLocation(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("XDG_CONFIG_HOME is the user config folder on Linux only")
	}
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	r, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "codebridge", "config.toml")
	if r.File != want || r.FileFound {
		t.Fatalf("missing default file: got %q, found %v; want %q, not found", r.File, r.FileFound, want)
	}
	if err := os.MkdirAll(filepath.Dir(want), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("max_sessions = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Load(Sources{})
	if err != nil || !r.FileFound || r.Config.MaxSessions != 3 || r.Origin("max_sessions") != (Origin{LayerFile, want}) {
		t.Fatalf("default file: got %+v, %v", r, err)
	}
}

// TestLoadErrors checks that a bad value or file names its layer, the key and
// what to do.
func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.toml")
	tests := []struct {
		name    string
		file    string // settings file text; "" for none
		environ []string
		flags   map[string]string
		want    []string
	}{
		{name: "file value", file: "memory = \"lots\"\n", want: []string{"config.toml: invalid memory = \"lots\": invalid size"}},
		{name: "file number", file: "max_runs = 0\n", want: []string{"config.toml: invalid max_runs = \"0\": want a whole number from 1 to 65536"}},
		{name: "file syntax", file: "max_runs = 4\nmemory = \n", want: []string{"config.toml: line 2:", "fix the file"}},
		{name: "file unknown key", file: "max_run = 4\n", want: []string{`config.toml: unknown key "max_run"`, "docs/settings.md"}},
		{name: "file table", file: "[http]\ntoken = \"x\"\n", want: []string{`unknown key "http.token"`}},
		{name: "file date", file: "timeout = 2024-01-01\n", want: []string{"config.toml: timeout: want a string, number, boolean or list"}},
		{name: "file nested list", file: "tools_deny = [[\"a\"]]\n", want: []string{"config.toml: tools_deny: want a list of strings"}},
		{name: "env value", environ: []string{"MCP_BRIDGE_MEMORY=lots"}, want: []string{`invalid MCP_BRIDGE_MEMORY="lots": invalid size`}},
		{name: "env over good file", file: "pids = 10\n", environ: []string{"MCP_BRIDGE_PIDS=-1"}, want: []string{`invalid MCP_BRIDGE_PIDS="-1"`}},
		{name: "flag value", flags: map[string]string{"http": "8080"}, want: []string{`invalid --http "8080": want HOST:PORT`}},
		{name: "secret not shown", file: "http_token = \"s3cret-s3cret\"\nhttp = \"x\"\n", want: []string{`invalid http = "x"`}},
		{name: "timeouts across layers", file: "max_timeout = 10\n", environ: []string{"MCP_BRIDGE_TIMEOUT=20"},
			want: []string{"timeout 20s (MCP_BRIDGE_TIMEOUT) is larger than max_timeout 10s (", "config.toml)"}},
		{name: "named file missing", environ: []string{FileEnv + "=" + missing}, want: []string{missing, "does not exist", "unset " + FileEnv}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			environ := tt.environ
			if tt.file != "" {
				environ = append([]string{FileEnv + "=" + writeFile(t, tt.file)}, environ...)
			}
			_, err := Load(Sources{Environ: environ, Flags: tt.flags})
			if err == nil {
				t.Fatalf("no error; want one containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	dir := t.TempDir() // a folder where a file is wanted
	_, err := Load(Sources{Environ: []string{FileEnv + "=" + dir}})
	if err == nil || !strings.Contains(err.Error(), "reading settings file "+dir) {
		t.Fatalf("err = %v; want it to name the file", err)
	}
}

// TestSecretToken: the HTTP token is a secret.Value: it prints as a
// placeholder whatever prints the Config.
func TestSecretToken(t *testing.T) {
	c := Config{HTTPToken: secret.New("s3cret-s3cret")}
	var log strings.Builder
	slog.New(slog.NewTextHandler(&log, nil)).Info("x", "config", c)
	b, _ := json.Marshal(c)
	for _, shown := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v", c, c, c), log.String(), string(b)} {
		if strings.Contains(shown, "s3cret") {
			t.Errorf("shown as %q", shown)
		}
	}
	if c.HTTPToken.Reveal() != "s3cret-s3cret" || (Config{}).HTTPToken.Reveal() != "" {
		t.Errorf("Reveal = %q", c.HTTPToken.Reveal())
	}
}
