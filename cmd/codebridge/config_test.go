package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// runInProcess runs codebridge's command line in this process, with the
// environment the test set.
func runInProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(t.Context(), args, os.Stdin, &o, &e)
	return o.String(), e.String(), code
}

// TestConfigCommand: codebridge config prints every setting with its value
// and origin, as a table or as JSON, and never a secret: here a default, the
// settings file, an environment variable and a flag, each for one setting.
func TestConfigCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, []byte("max_runs = 4\nmemory = \"1g\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Only the variables set here: the suite runs with some of its own
	// (MCP_BRIDGE_IMAGE for the minimal image).
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, settings.EnvPrefix) {
			t.Setenv(k, v) // restored when the test ends
			os.Unsetenv(k)
		}
	}
	t.Setenv(settings.FileEnv, file)
	t.Setenv("MCP_BRIDGE_MEMORY", "2g")
	t.Setenv("MCP_BRIDGE_HTTP_TOKEN", "s3cret-s3cret-s3cret")

	out, stderr, code := runInProcess(t, "config", "--config-dir", "/srv/mcps")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(out, "settings file: "+file+" (read)\n") {
		t.Errorf("the first line does not name the file:\n%s", out)
	}
	rows := map[string][]string{} // key -> value, origin
	for _, line := range strings.Split(out, "\n")[3:] {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f[1:]
		}
	}
	for key, want := range map[string]string{
		"pids":       "128 default",
		"max_runs":   "4 " + file,
		"memory":     "2g MCP_BRIDGE_MEMORY",
		"config_dir": "/srv/mcps --config-dir",
		"http_token": "(set, 20 characters) MCP_BRIDGE_HTTP_TOKEN",
		"image":      "(unset) default",
	} {
		if got := strings.Join(rows[key], " "); got != want {
			t.Errorf("%s: got %q, want %q", key, got, want)
		}
	}
	defaults, err := settings.Load(settings.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(defaults.Values) {
		t.Errorf("%d settings listed, want every one of the %d:\n%s", len(rows), len(defaults.Values), out)
	}

	out, stderr, code = runInProcess(t, "config", "--json", "--config-dir", "/srv/mcps")
	if code != 0 {
		t.Fatalf("--json: exit %d, stderr %q", code, stderr)
	}
	var got struct {
		File      string           `json:"file"`
		FileFound bool             `json:"file_found"`
		Settings  []settings.Value `json:"settings"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json: %v:\n%s", err, out)
	}
	if got.File != file || !got.FileFound || len(got.Settings) != len(rows) {
		t.Errorf("--json: file %q (found %v), %d settings", got.File, got.FileFound, len(got.Settings))
	}
	// Each of the four layers, by name.
	origins := map[string]settings.Origin{}
	for _, v := range got.Settings {
		origins[v.Key] = v.Origin
		if v.Key == "memory" && (v.Text != "2g" || v.Env != "MCP_BRIDGE_MEMORY") {
			t.Errorf("--json: memory = %+v", v)
		}
	}
	for key, want := range map[string]settings.Origin{
		"pids":       {Layer: settings.LayerDefault},
		"max_runs":   {Layer: settings.LayerFile, Name: file},
		"memory":     {Layer: settings.LayerEnv, Name: "MCP_BRIDGE_MEMORY"},
		"config_dir": {Layer: settings.LayerFlag, Name: "--config-dir"},
	} {
		if origins[key] != want {
			t.Errorf("--json: %s comes from %+v, want %+v", key, origins[key], want)
		}
	}
	for _, layer := range []string{"default", "file", "env", "flag"} {
		if !strings.Contains(out, `"layer": "`+layer+`"`) {
			t.Errorf("--json: no layer %q named:\n%s", layer, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("--json: want layer names and no secret:\n%s", out)
	}
}

// TestConfigCommandBadSetting: a bad value stops config, like every command,
// with a message naming its file and key.
func TestConfigCommandBadSetting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, []byte("max_runs = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(settings.FileEnv, file)
	_, stderr, code := runInProcess(t, "config")
	if code != 2 || !strings.Contains(stderr, file+": invalid max_runs") {
		t.Errorf("exit %d, stderr %q; want 2 and the file and key named", code, stderr)
	}
}

// TestConfigWarmPool: config --k8s-warm-pool prints the agent-sandbox
// template of the sandbox pod the settings give, with no wait limit in its
// environment (a pool's interpreter waits for its claim), and a pool of it.
func TestConfigWarmPool(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, settings.EnvPrefix) {
			t.Setenv(k, v) // restored when the test ends
			os.Unsetenv(k)
		}
	}
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(settings.FileEnv, file)
	t.Setenv("MCP_BRIDGE_K8S_WARM_POOL", "pool-a")
	t.Setenv("MCP_BRIDGE_IMAGE", "registry.example/sandbox:1")
	t.Setenv("MCP_BRIDGE_MEMORY", "256m")
	out, stderr, code := runInProcess(t, "config", "--k8s-warm-pool", "3")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Replicas           int `json:"replicas"`
				SandboxTemplateRef struct {
					Name string `json:"name"`
				} `json:"sandboxTemplateRef"`
				NetworkPolicy *struct{} `json:"networkPolicy"`
				PodTemplate   struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
							Env   []struct {
								Name string `json:"name"`
							} `json:"env"`
							Resources struct {
								Limits map[string]string `json:"limits"`
							} `json:"resources"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"podTemplate"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	tmpl, pool := list.Items[0], list.Items[1]
	if tmpl.Kind != "SandboxTemplate" || tmpl.Metadata.Name != "pool-a" || tmpl.Spec.NetworkPolicy == nil || len(tmpl.Spec.PodTemplate.Spec.Containers) != 1 {
		t.Fatalf("template: %s", out)
	}
	c := tmpl.Spec.PodTemplate.Spec.Containers[0]
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	if c.Image != "registry.example/sandbox:1" || c.Resources.Limits["memory"] != "268435456" ||
		!slices.Contains(env, python.ServeEnv) || slices.Contains(env, python.WaitLimitEnv) {
		t.Errorf("template's container: image %q, limits %v, env %v; want the settings' image and memory, served in the pod, no wait limit", c.Image, c.Resources.Limits, env)
	}
	if pool.Kind != "SandboxWarmPool" || pool.Metadata.Name != "pool-a" || pool.Spec.Replicas != 3 || pool.Spec.SandboxTemplateRef.Name != "pool-a" {
		t.Errorf("pool: %s", out)
	}
}
