package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
)

const configHelp = `Usage: codebridge config [--json | --k8s-warm-pool N]

Prints every setting, its value and where the value came from: default, the
settings file (its path), an MCP_BRIDGE_* environment variable (its name) or a
flag (--config-dir). Each of these layers wins over the ones before it. A
secret, such as http_token, shows only that it is set.

The settings file is ~/.config/codebridge/config.toml (the user config folder:
os.UserConfigDir), or the file MCP_BRIDGE_SETTINGS_FILE names; its keys are the
KEY column. docs/settings.md describes every setting.

Flags:
  --json            print a JSON object for programs: {"file", "file_found",
                    "settings": [{"key", "env", "value", "origin": {"layer", "name"}}]}
  --k8s-warm-pool N print instead, as a Kubernetes List to kubectl apply, the
                    agent-sandbox SandboxTemplate of the pod these settings give
                    a sandbox and a SandboxWarmPool of N of them, named
                    k8s_warm_pool (or codebridge): what MCP_BRIDGE_K8S_WARM_POOL
                    claims sandboxes from (docs/kubernetes.md)
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when every setting is valid; 2 when the command line or a
setting is wrong (the message names the file and key, or the variable).
`

// configCommand defines the flags of config and returns its run function.
func configCommand(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	pool := fs.Int("k8s-warm-pool", -1, "print an agent-sandbox template and warm pool of N")
	return func(_ context.Context, c *call) int {
		if *pool >= 0 {
			return c.exit(printWarmPool(c, *pool))
		}
		if *asJSON {
			return c.exit(printSettingsJSON(c))
		}
		return c.exit(printSettings(c))
	}
}

// printSettings prints the settings as an aligned table, after the settings
// file's path.
func printSettings(c *call) error {
	r := c.layers
	state := "read"
	if !r.FileFound {
		state = "not found; none is needed"
	}
	fmt.Fprintf(c.stdout, "settings file: %s (%s)\n\n", r.File, state)
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tVALUE\tFROM")
	for _, v := range r.Values {
		text := v.Text
		if text == "" {
			text = "(unset)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", v.Key, termtext.Line(text), termtext.Line(v.Origin.String()))
	}
	return w.Flush()
}

// printWarmPool prints the agent-sandbox template and warm pool of the
// settings' sandbox pod.
func printWarmPool(c *call, replicas int) error {
	list, err := bridge.KubeWarmPool(c.cfg, replicas)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}

// printSettingsJSON prints the settings as one JSON object.
func printSettingsJSON(c *call) error {
	r := c.layers
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		File      string           `json:"file"`
		FileFound bool             `json:"file_found"`
		Settings  []settings.Value `json:"settings"`
	}{r.File, r.FileFound, r.Values})
}
