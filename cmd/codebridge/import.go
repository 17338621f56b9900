package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/codebridge-mcp/codebridge/bridge/atomicfile"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/bridge/termtext"
	"github.com/codebridge-mcp/codebridge/discovery"
)

const importHelp = `Usage: codebridge import [--write [--force]] [--allow-commands]

Finds the MCP servers configured in the agents you already use and moves them
into ~/MCPs, one file per agent (~/MCPs/claude-desktop.json, ...), so that
your agents can keep codebridge alone. It reads, on Linux and macOS:

  Claude Desktop  claude_desktop_config.json (~/.config/Claude, ~/Library/Application Support/Claude)
  Claude Code     ~/.claude.json (your servers, and this project's), ./.mcp.json
  Cursor          ~/.cursor/mcp.json, ./.cursor/mcp.json
  VS Code         Code/User/mcp.json and settings.json, ./.vscode/mcp.json
  Windsurf        ~/.codeium/windsurf/mcp_config.json
  Gemini CLI      ~/.gemini/settings.json, ./.gemini/settings.json
  Codex           ~/.codex/config.toml ([mcp_servers.NAME])

It leaves out codebridge itself, servers ~/MCPs already has (by name, or the
same command or URL), a server an earlier file already gave, and definitions
codebridge cannot use, saying why for each. A file it cannot read is reported
and skipped. Without --write it only shows what it would do.

Each entry is listed with every ${...} reference it holds (in its url,
command, args, env or headers): what codebridge reads (${env:NAME},
${keyring:...}) or runs (${cmd:...}) each time it loads the file. A project's
own files (./.mcp.json, ./.cursor/mcp.json, ./.vscode/mcp.json,
./.gemini/settings.json) were written by whoever wrote the project, so their
entries with a ${cmd:...} are left out unless --allow-commands is given; the
files in your home (including ~/.claude.json's servers for this project) are
yours, and are imported as they are.

Flags:
  --write           write the files
  --force           with --write, replace files of the same name in ~/MCPs
  --allow-commands  import the entries of the project's own files that run
                    a command (${cmd:...}); read them first
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when all went well; 1 when an agent's file could not be read or
a file in ~/MCPs was not replaced; 2 when the command line is wrong.
`

type importFlags struct{ write, force, allowCommands bool }

// importCommand defines the flags of import and returns its run function.
func importCommand(fs *flag.FlagSet) runFunc {
	f := &importFlags{}
	fs.BoolVar(&f.write, "write", false, "write the files")
	fs.BoolVar(&f.force, "force", false, "replace existing files")
	fs.BoolVar(&f.allowCommands, "allow-commands", false, "import ${cmd:} references from the project's files")
	return func(_ context.Context, c *call) int { return importCmd(c.cfg, f, c.pin, c.stdout, c.stderr) }
}

func importCmd(cfg settings.Config, f *importFlags, pin string, stdout, stderr io.Writer) int {
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(stderr, "codebridge import: %v\n", err)
		return 1
	}
	cwd, _ := os.Getwd()
	plan := discovery.PlanImport(discovery.AgentPlaces{Home: home, Cwd: cwd, GOOS: goruntime.GOOS}, cfg.ConfigDir,
		discovery.Options{AllowSelf: cfg.AllowSelf}, f.allowCommands)
	short := func(p string) string {
		if rel, ok := strings.CutPrefix(p, home+string(os.PathSeparator)); ok {
			return "~/" + rel
		}
		return termtext.Line(p)
	}
	failed := false
	if len(plan.Files) == 0 {
		fmt.Fprintln(stdout, "No MCP server to import: none found in the agents' files, or all are in "+short(cfg.ConfigDir)+" already.")
	} else {
		verb := "Would write"
		if f.write {
			verb = "Writing"
		}
		fmt.Fprintf(stdout, "%s:\n", verb)
		for _, file := range plan.Files {
			fmt.Fprintf(stdout, "  %s  (from %s)\n", short(file.Path), file.Label)
			for _, s := range file.Servers {
				fmt.Fprintf(stdout, "    %-20s %s\n", termtext.Line(s.Name), termtext.Line(what(s.Entry)))
				if refs := discovery.References(s.Entry); len(refs) > 0 {
					fmt.Fprintf(stdout, "    %-20s reads or runs: %s\n", "", termtext.Line(strings.Join(refs, " ")))
				}
				if s.Note != "" {
					fmt.Fprintf(stdout, "    %-20s note: %s\n", "", termtext.Line(s.Note))
				}
			}
		}
	}
	if len(plan.Skipped) > 0 {
		fmt.Fprintln(stdout, "Left out:")
		for _, s := range plan.Skipped {
			fmt.Fprintf(stdout, "  %-20s from %s: %s\n", termtext.Line(s.Name), short(s.File.Path), termtext.Line(s.Reason))
			if refs := discovery.References(s.Entry); len(refs) > 0 {
				fmt.Fprintf(stdout, "  %-20s reads or runs: %s\n", "", termtext.Line(strings.Join(refs, " ")))
			}
		}
	}
	if len(plan.Problems) > 0 {
		failed = true
		fmt.Fprintln(stdout, "Could not read:")
		for _, p := range plan.Problems {
			fmt.Fprintf(stdout, "  %s: %s\n", short(p.Path), termtext.Line(settings.ExplainProblem(p).Message))
		}
	}
	if !f.write {
		if len(plan.Files) > 0 {
			fmt.Fprintln(stdout, "\nNothing was written: run codebridge import --write to write these files.")
		}
		return exitIf(failed)
	}

	written := 0
	for _, file := range plan.Files {
		if file.Exists && !f.force {
			fmt.Fprintf(stderr, "codebridge import: %s exists: not replaced (--force replaces it; or move it away)\n", short(file.Path))
			failed = true
			continue
		}
		if err := os.MkdirAll(cfg.ConfigDir, 0o755); err != nil {
			fmt.Fprintf(stderr, "codebridge import: %v\n", err)
			return 1
		}
		// Whole or not at all: a running codebridge watches the folder.
		if err := atomicfile.Replace(file.Path, file.Content(), 0o600); err != nil {
			fmt.Fprintf(stderr, "codebridge import: %v\n", err)
			failed = true
			continue
		}
		written++
	}
	if written > 0 {
		fmt.Fprintf(stdout, "\nWrote %d file(s) to %s; a running codebridge picks them up at once.\n", written, short(cfg.ConfigDir))
		fmt.Fprintf(stdout, "Now give your agents codebridge alone: remove those servers from their configs and add one entry\n(see the README's \"Add it to your agent\"), e.g. in claude_desktop_config.json or .cursor/mcp.json:\n\n%s\n",
			agentEntry(pin))
	}
	return exitIf(failed)
}

// what is how a server is reached, for the listing.
func what(entry map[string]any) string {
	if u, ok := entry["url"].(string); ok {
		return u
	}
	parts := []string{fmt.Sprint(entry["command"])}
	if args, ok := entry["args"].([]any); ok {
		for _, a := range args {
			parts = append(parts, fmt.Sprint(a))
		}
	}
	return strings.Join(parts, " ")
}

// agentEntry is the mcpServers entry that starts this codebridge: its
// installed binary, or go run for a binary go run built.
func agentEntry(pin string) string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, "go-build") {
		return fmt.Sprintf(`{"mcpServers": {"codebridge": {"command": "go", "args": ["run", "%s@%s"]}}}`, module, pin)
	}
	return fmt.Sprintf(`{"mcpServers": {"codebridge": {"command": %q}}}`, exe)
}

func exitIf(failed bool) int {
	if failed {
		return 1
	}
	return 0
}
