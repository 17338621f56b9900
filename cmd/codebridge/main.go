// Command codebridge is an MCP server that gives an agent one tool, run_python,
// through which its code reaches every MCP server configured in ~/MCPs.
//
// Usage:
//
//	codebridge [--config-dir DIR]            serve MCP over stdio (what agents run)
//	codebridge serve --http ADDR             serve MCP over streamable HTTP at ADDR/mcp
//	codebridge exec [--timeout T] FILE|-     run a Python file in the sandbox, print its output
//	codebridge servers [--tools]             list configured servers and their state
//	codebridge audit [-n N] [--json]         show the tool calls code made
//	codebridge setup [--yes]                 install Podman and build the sandbox image
//	codebridge doctor                        check everything codebridge needs, with fixes
//	codebridge import [--write]              move the servers of other agents' configs into ~/MCPs
//	codebridge version                       print the version
//
// Every command takes --help, --version and --config-dir.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const module = "github.com/codebridge-mcp/codebridge/cmd/codebridge"

// usage is the help of codebridge itself; pin is the version to show in
// install lines.
func usage(pin string) string {
	return `codebridge: one MCP tool, run_python, in front of all your MCP servers.

An agent sees a single tool instead of every server's schemas. Its Python code runs
in a locked-down Podman container and finds, inspects and calls the tools of the
servers configured in ~/MCPs/*.json, which codebridge starts on demand.

Usage:
  codebridge [--config-dir DIR]          serve MCP on stdin/stdout (agents run this)
  codebridge serve --http ADDR           serve MCP over streamable HTTP at http://ADDR/mcp
                                         (token auth; see the README's "Serve over HTTP")
  codebridge exec [--timeout T] FILE|-   run a Python file in the sandbox and print its output
  codebridge servers [--tools]           list the configured servers and their state
  codebridge memory [VERB]               see and remove what agents stored (memory --help)
  codebridge audit [-n N] [--server S]   the tool calls code made, most recent last (audit --help)
  codebridge setup [--yes]               install Podman and build the sandbox image (setup --help)
  codebridge doctor                      check everything codebridge needs and say how to fix it
  codebridge import [--write]            bring the MCP servers of your agents' configs into ~/MCPs
  codebridge version                     print the version

Every command takes --help, --version and --config-dir DIR (default ~/MCPs, or
MCP_BRIDGE_CONFIG_DIR); e.g. codebridge exec --help.

Add it to an agent (Claude Code): install once, then start the binary, which is
ready at once (go run compiles on a first start, for up to a minute):
  go install ` + module + `@` + pin + `
  ~/go/bin/codebridge setup       # once: Podman and the sandbox image
  claude mcp add codebridge -- ~/go/bin/codebridge

Configure servers by dropping files into ~/MCPs (picked up while running), e.g.
  {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}

Settings are MCP_BRIDGE_* environment variables; see the README.
`
}

const execHelp = `Usage: codebridge exec [--timeout T] FILE
       codebridge exec [--timeout T] -

Runs a Python file, or with - the code read from stdin, once in the sandbox,
exactly as the run_python tool runs it: the same container and limits, the same
helpers, and every server configured in ~/MCPs reachable from the code. What the
code prints goes to stdout and stderr as it wrote it.

Flags:
  --timeout T       time limit: whole seconds (30) or a Go duration (45s, 2m).
                    Default MCP_BRIDGE_TIMEOUT (30 s); at most MCP_BRIDGE_MAX_TIMEOUT (120 s).
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: the code's own (0 when it ends normally, N for sys.exit(N)); 1 when
it raised an exception, hit the time limit, or the sandbox could not run it (the
message on stderr says what to install or start); 2 when the command line is
wrong or FILE cannot be read.

Example:
  echo 'print(discovered_servers())' | codebridge exec -
`

const serversHelp = `Usage: codebridge servers [--tools]

Lists the MCP servers configured in ~/MCPs/*.json: name, transport, state and
the file that defines each, then any problems found in those files. Nothing is
started unless --tools is given.

Flags:
  --tools           start every server (in parallel), list its tools and save
                    them, so search and docs answer without starting it later;
                    remove the saved lists of servers no longer configured
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when every file and server is fine; 1 when it listed a problem
(a file it could not use, a server that failed to start); 2 when the command
line is wrong.
`

const doctorHelp = `Usage: codebridge doctor

Checks what codebridge needs, in the order a run needs it, and prints one line
per check, with how to fix each problem:

  podman       the Podman API answers (and at which socket or URI)
  image        the sandbox image is there (MCP_BRIDGE_IMAGE, else
               localhost/codebridge-sandbox:latest)
  sandbox      a container with codebridge's limits and seccomp profile runs
               Python, the way run_python does (a failing runtime or rlimit
               default shows here)
  config       the config folder is readable, and every server file in it valid
  server NAME  each enabled server starts and lists its tools, with the time
               it took (all are started at once, then stopped)
  state        the state directory can be written

Flags:
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when nothing failed (warnings allowed); 1 when a check failed;
2 when the command line is wrong.
`

const versionHelp = `Usage: codebridge version

Prints codebridge's version: the module version it was built from (go install
or go run ...@VERSION), else the source revision.
`

func run(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	pin := version()
	if !strings.HasPrefix(pin, "v") {
		pin = "VERSION" // a development build: no release to point at
	}
	var configDir string
	global := newFlags("codebridge", &configDir)
	if code, done := parseFlags(global, args, usage(pin), stdout, stderr); done {
		return code
	}
	args = global.Args()
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}

	// Parse the command's flags before reading the settings, so --help and
	// --version work whatever the environment holds.
	var fs *flag.FlagSet
	var tools *bool
	var timeout time.Duration
	var httpAddr string
	var auditF *auditFilter
	var setupF *setupFlags
	var importF *importFlags
	switch cmd {
	case "serve":
		fs = newFlags(cmd, &configDir)
		fs.StringVar(&httpAddr, "http", "", "serve MCP over streamable HTTP on HOST:PORT")
		if code, done := parseFlags(fs, args, usage(pin), stdout, stderr); done {
			return code
		}
		if _, _, err := net.SplitHostPort(httpAddr); httpAddr != "" && err != nil {
			fmt.Fprintf(stderr, "codebridge serve: --http %q: want HOST:PORT such as 127.0.0.1:8080 (or :8080 for every interface)\n", httpAddr)
			return 2
		}
	case "exec":
		fs = newFlags(cmd, &configDir)
		fs.Func("timeout", "time limit: whole seconds or a Go duration", func(s string) (err error) {
			timeout, err = settings.ParseSeconds(s)
			return err
		})
		if code, done := parseFlags(fs, args, execHelp, stdout, stderr); done {
			return code
		}
	case "servers":
		fs = newFlags(cmd, &configDir)
		tools = fs.Bool("tools", false, "start each server and list its tools")
		if code, done := parseFlags(fs, args, serversHelp, stdout, stderr); done {
			return code
		}
	case "memory":
		fs = newFlags(cmd, &configDir)
		if code, done := parseFlags(fs, args, memoryHelp, stdout, stderr); done {
			return code
		}
	case "import":
		fs = newFlags(cmd, &configDir)
		importF = newImportFlags(fs)
		if code, done := parseFlags(fs, args, importHelp, stdout, stderr); done {
			return code
		}
	case "doctor":
		fs = newFlags(cmd, &configDir)
		if code, done := parseFlags(fs, args, doctorHelp, stdout, stderr); done {
			return code
		}
	case "setup":
		fs = newFlags(cmd, &configDir)
		setupF = newSetupFlags(fs)
		if code, done := parseFlags(fs, args, setupHelp, stdout, stderr); done {
			return code
		}
	case "audit":
		fs = newFlags(cmd, &configDir)
		auditF = auditFlags(fs)
		if code, done := parseFlags(fs, args, auditHelp, stdout, stderr); done {
			return code
		}
	case "version":
		fs = newFlags(cmd, &configDir)
		if code, done := parseFlags(fs, args, versionHelp, stdout, stderr); done {
			return code
		}
		fmt.Fprintln(stdout, "codebridge", version())
		return 0
	case "help":
		help := map[string]string{"exec": execHelp, "servers": serversHelp, "memory": memoryHelp, "audit": auditHelp, "setup": setupHelp, "doctor": doctorHelp, "import": importHelp, "version": versionHelp}[strings.Join(args, " ")]
		fmt.Fprint(stdout, cmp.Or(help, usage(pin)))
		return 0
	default:
		fmt.Fprintf(stderr, "codebridge: unknown command %q: run 'codebridge --help' for the commands\n", cmd)
		return 2
	}
	if cmd != "exec" && cmd != "memory" && fs.NArg() > 0 {
		fmt.Fprintf(stderr, "codebridge %s: unexpected argument %q: see 'codebridge %s --help'\n", cmd, fs.Arg(0), cmd)
		return 2
	}

	bootLogger := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := settings.LoadConfig(os.Environ(), bootLogger)
	if err != nil {
		fmt.Fprintf(stderr, "codebridge: %v\n", err)
		return 2
	}
	if configDir != "" {
		cfg.ConfigDir = configDir
	}
	if httpAddr != "" {
		cfg.HTTP = httpAddr
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(cmd, cfg)}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch {
	case cmd == "serve" && cfg.HTTP != "":
		err = bridge.ListenAndServe(ctx, cfg, bridge.HTTPOptions{Logger: logger, Version: version(), Notice: stderr})
	case cmd == "serve":
		if isTerminal(stdin) {
			fmt.Fprint(stderr, usage(pin))
			fmt.Fprintln(stderr, "\nstdin is a terminal, so there is no MCP client to talk to: exiting.")
			return 0
		}
		err = bridge.Serve(ctx, cfg, bridge.ServeOptions{Logger: logger, Version: version(), In: stdin, Out: nopCloser{stdout}})
	case cmd == "exec":
		return execCmd(ctx, cfg, logger, fs.Args(), timeout, stdin, stdout, stderr)
	case cmd == "memory":
		return memoryCmd(cfg, fs.Args(), stdout, stderr)
	case cmd == "audit":
		return auditCmd(cfg, auditF, stdout, stderr)
	case cmd == "setup":
		return setupCmd(ctx, cfg, setupF, stdin, stderr)
	case cmd == "import":
		return importCmd(cfg, importF, pin, stdout, stderr)
	case cmd == "doctor":
		err = bridge.Doctor(ctx, cfg, bridge.DoctorOptions{Logger: logger, Out: stdout})
	case cmd == "servers":
		err = bridge.ListServers(ctx, cfg, bridge.ListOptions{Logger: logger, Tools: *tools, Out: stdout})
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "codebridge %s: %v\n", cmd, err)
		return 1
	}
	return 0
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

// logLevel is the stderr log level of cmd: the setting when given; otherwise
// info for serve, whose stderr an agent keeps as a log, and warn for the
// commands a person runs, who wants the output and problems only.
func logLevel(cmd string, cfg settings.Config) slog.Level {
	if cmd != "serve" && os.Getenv(settings.EnvPrefix+"LOG_LEVEL") == "" {
		return slog.LevelWarn
	}
	return cfg.LogLevel
}

func execCmd(ctx context.Context, cfg settings.Config, logger *slog.Logger, args []string, timeout time.Duration, stdin *os.File, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "codebridge exec: want one FILE, or - for stdin; e.g. echo 'print(1)' | codebridge exec -")
		return 2
	}
	if timeout == 0 {
		timeout = cfg.Timeout
	}
	if timeout > cfg.MaxTimeout {
		fmt.Fprintf(stderr, "codebridge exec: --timeout %s is over the %s maximum (%sMAX_TIMEOUT): ask for less, or raise %sMAX_TIMEOUT\n",
			timeout, cfg.MaxTimeout, settings.EnvPrefix, settings.EnvPrefix)
		return 2
	}
	var code []byte
	var err error
	if name := args[0]; name == "-" {
		if isTerminal(stdin) {
			fmt.Fprintln(stderr, "codebridge exec: reading Python code from stdin until Ctrl-D (end of input)")
		}
		code, err = io.ReadAll(stdin)
	} else {
		code, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "codebridge exec: %v\n", err)
		return 2
	}
	status, err := bridge.Exec(ctx, cfg, string(code), bridge.ExecOptions{
		Logger: logger, Timeout: timeout, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "codebridge exec: %v\n", err)
		return 1
	}
	return status
}

// stampedVersion is set by release builds (scripts/release.sh, .goreleaser.yaml):
// -ldflags "-X main.stampedVersion=v1.2.3".
var stampedVersion string

// version is the stamped release version, else the module version when built
// by `go install`/`go run pkg@version`, else the VCS revision.
func version() string {
	if stampedVersion != "" {
		return stampedVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
