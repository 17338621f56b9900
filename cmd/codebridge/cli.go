package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// A command is one entry of the table in [commands]: what codebridge's help
// says of it, and how it parses its flags and runs.
type command struct {
	name     string
	synopsis string // its flags and operands in the command list, e.g. "[--tools]"
	summary  string // what it does, in the command list; a second line continues it
	help     string // printed by codebridge NAME --help and codebridge help NAME
	operands bool   // it takes operands after its flags; otherwise one is a usage error
	bare     bool   // it runs without reading the settings (the call has none)

	// flags defines the command's own flags on fs, beside those every command
	// takes, and returns the function that runs it once they are parsed.
	flags func(fs *flag.FlagSet) runFunc
	// check, when set, checks the parsed flags before the settings are read;
	// its error is a usage error.
	check func(fs *flag.FlagSet) error
}

// A runFunc runs a command and returns its exit status.
type runFunc func(ctx context.Context, c *call) int

// noFlags is the flags of a command that has none of its own.
func noFlags(run runFunc) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc { return run }
}

// A call is one run of a command: its operands, the settings, and where it
// reads and writes.
type call struct {
	name   string
	args   []string           // the operands after the flags
	pin    string             // the version to show in install lines
	cfg    settings.Config    // zero for a bare command
	layers *settings.Resolved // where cfg's values came from; nil for a bare command
	logger *slog.Logger       // nil for a bare command
	stdin  *os.File
	stdout io.Writer
	stderr io.Writer
}

// exit reports err, unless the command was stopped, and returns the exit
// status for it.
func (c *call) exit(err error) int {
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "codebridge %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// lookup is the command of that name, or nil.
func lookup(name string) *command {
	for _, cmd := range commands() {
		if cmd.name == name {
			return &cmd
		}
	}
	return nil
}

// run runs codebridge with args, the command line after the program's name,
// and returns its exit status.
func run(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) int {
	inv, code, done := parse(args, stdout, stderr)
	if done {
		return code
	}
	return inv.start(ctx, stdin, stdout, stderr)
}

// An invocation is a parsed command line.
type invocation struct {
	cmd       *command
	run       runFunc
	args      []string
	configDir string
	flags     *flag.FlagSet // the command's, for those that set a setting
	pin       string
}

// parse parses the command line: the flags every command takes, the command,
// then its flags. done reports that there is nothing left to run, with code
// its exit status: help or the version was printed (0), or the command line
// is wrong (2). Nothing reads the settings before, so --help and --version
// work whatever the environment holds.
func parse(args []string, stdout, stderr io.Writer) (inv invocation, code int, done bool) {
	inv.pin = version()
	if !strings.HasPrefix(inv.pin, "v") {
		inv.pin = "VERSION" // a development build: no release to point at
	}
	global := newFlags("codebridge", &inv.configDir)
	if code, done := parseFlags(global, args, usage(inv.pin), stdout, stderr); done {
		return inv, code, true
	}
	args = global.Args()
	name := "serve"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if name == "help" { // not in the table, which it reads
		help := usage(inv.pin)
		if cmd := lookup(strings.Join(args, " ")); cmd != nil {
			help = cmd.help
		}
		fmt.Fprint(stdout, help)
		return inv, 0, true
	}
	inv.cmd = lookup(name)
	if inv.cmd == nil {
		fmt.Fprintf(stderr, "codebridge: unknown command %q: want one of %s, or help; run 'codebridge --help' for what each does\n",
			name, strings.Join(commandNames(), ", "))
		return inv, 2, true
	}
	fs := newFlags(name, &inv.configDir)
	inv.flags = fs
	inv.run = inv.cmd.flags(fs)
	if code, done := parseFlags(fs, args, inv.cmd.help, stdout, stderr); done {
		return inv, code, true
	}
	inv.args = fs.Args()
	if inv.cmd.check != nil {
		if err := inv.cmd.check(fs); err != nil {
			fmt.Fprintf(stderr, "codebridge %s: %v\n", name, err)
			return inv, 2, true
		}
	}
	if !inv.cmd.operands && len(inv.args) > 0 {
		fmt.Fprintf(stderr, "codebridge %s: unexpected argument %q: see 'codebridge %s --help'\n", name, inv.args[0], name)
		return inv, 2, true
	}
	return inv, 0, false
}

// start reads the settings, unless the command is bare, and runs the command.
func (inv invocation) start(ctx context.Context, stdin *os.File, stdout, stderr io.Writer) int {
	c := &call{name: inv.cmd.name, args: inv.args, pin: inv.pin, stdin: stdin, stdout: stdout, stderr: stderr}
	if !inv.cmd.bare {
		// The flags that were set are the top layer of the settings.
		flags := map[string]string{}
		inv.flags.Visit(func(f *flag.Flag) { flags[f.Name] = f.Value.String() })
		if inv.configDir != "" { // given before or after the command
			flags["config-dir"] = inv.configDir
		}
		r, err := settings.Load(settings.Sources{Environ: os.Environ(), Flags: flags, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
		if err != nil {
			fmt.Fprintf(stderr, "codebridge: %v\n", err)
			return 2
		}
		c.cfg, c.layers = r.Config, r
		c.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(c.name, r)}))
	}
	return inv.run(ctx, c)
}

// newFlags returns a command's flag set with the flags every command takes.
// Its messages are printed by [parseFlags].
func newFlags(name string, configDir *string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(configDir, "config-dir", *configDir, "folder of MCP server configs")
	fs.Bool("version", false, "print the version and exit")
	return fs
}

// parseFlags parses a command's flags. done reports that the command must not
// run, with code its exit status: help or the version was printed (0), or the
// command line is wrong (2).
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, help)
		return 0, true
	case err != nil:
		name := fs.Name()
		if name != "codebridge" {
			name = "codebridge " + name
		}
		fmt.Fprintf(stderr, "%s: %v: see '%s --help'\n", name, err, name)
		return 2, true
	case fs.Lookup("version").Value.String() == "true":
		fmt.Fprintln(stdout, "codebridge", version())
		return 0, true
	}
	return 0, false
}

// logLevel is the stderr log level of cmd: the setting when given (in the
// settings file or the environment); otherwise
// info for serve, whose stderr an agent keeps as a log, and warn for the
// commands a person runs, who wants the output and problems only.
func logLevel(cmd string, r *settings.Resolved) slog.Level {
	if cmd != "serve" && r.Origin("log_level").Layer == settings.LayerDefault {
		return slog.LevelWarn
	}
	return r.Config.LogLevel
}

// commandNames are the names of the commands, in the table's order.
func commandNames() []string {
	var names []string
	for _, cmd := range commands() {
		names = append(names, cmd.name)
	}
	return names
}

// usage is the help of codebridge itself, its command list made from the
// table; pin is the version to show in install lines.
func usage(pin string) string {
	var b strings.Builder
	b.WriteString(`codebridge: one MCP tool, run_python, in front of all your MCP servers.

An agent sees a single tool instead of every server's schemas. Its Python code runs
in a locked-down Podman or Docker container and finds, inspects and calls the tools of the
servers configured in ~/MCPs/*.json, which codebridge starts on demand.

Usage:
`)
	listLine(&b, "codebridge [--config-dir DIR]", "serve MCP on stdin/stdout (agents run this)")
	for _, cmd := range commands() {
		listLine(&b, strings.TrimSpace("codebridge "+cmd.name+" "+cmd.synopsis), cmd.summary)
	}
	b.WriteString(`
Every command takes --help, --version and --config-dir DIR (default ~/MCPs, or
MCP_BRIDGE_CONFIG_DIR); e.g. codebridge exec --help.

Add it to an agent (Claude Code): install once, then start the binary, which is
ready at once (go run compiles on a first start, for up to a minute):
  go install ` + module + `@` + pin + `
  ~/go/bin/codebridge setup       # once: Podman and the sandbox image
  claude mcp add codebridge -- ~/go/bin/codebridge

Configure servers by dropping files into ~/MCPs (picked up while running), e.g.
  {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}

Settings come from defaults, then ~/.config/codebridge/config.toml, then
MCP_BRIDGE_* environment variables; codebridge config shows each and where it
came from, and docs/settings.md lists them.
`)
	return b.String()
}

// listLine adds a line of a command list to b: how to run a command, then
// what it does, each further line of summary aligned under the first.
func listLine(b *strings.Builder, synopsis, summary string) {
	for line := range strings.Lines(summary) {
		fmt.Fprintf(b, "  %-38s %s", synopsis, line)
		synopsis = ""
	}
	b.WriteString("\n")
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
