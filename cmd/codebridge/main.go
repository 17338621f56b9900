// Command codebridge is an MCP server that gives an agent one tool, run_python,
// through which its code reaches every MCP server configured in ~/MCPs.
//
// Usage:
//
//	codebridge [--config-dir DIR]            serve MCP over stdio (what agents run)
//	codebridge exec [--timeout S] FILE|-     run a Python file in the sandbox, print its output
//	codebridge servers [--tools]             list configured servers and their state
//	codebridge version                       print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/term"

	"github.com/codebridge-mcp/codebridge/bridge"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `codebridge: one MCP tool, run_python, in front of all your MCP servers.

An agent sees a single tool instead of every server's schemas. Its Python code runs
in a locked-down Podman container and finds, inspects and calls the tools of the
servers configured in ~/MCPs/*.json, which codebridge starts on demand.

Usage:
  codebridge [--config-dir DIR]          serve MCP on stdin/stdout (agents run this)
  codebridge exec [--timeout S] FILE|-   run a Python file in the sandbox and print its output
  codebridge servers [--tools]           list the configured servers and their state
  codebridge memory [list|show|delete|tools|show-tool|delete-tool]
                                         see and remove what agents stored
  codebridge version                     print the version

Add it to an agent (Claude Code):
  claude mcp add codebridge -- go run github.com/codebridge-mcp/codebridge/cmd/codebridge@latest

Configure servers by dropping files into ~/MCPs (picked up while running), e.g.
  {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}

Settings are MCP_BRIDGE_* environment variables; see the README.
`

func run(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("codebridge", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.Usage = func() { fmt.Fprint(stderr, usage) }
	configDir := global.String("config-dir", "", "folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)")
	if err := global.Parse(args); err != nil {
		return exitUsage(err)
	}
	args = global.Args()
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}

	switch cmd {
	case "version":
		fmt.Fprintln(stdout, "codebridge", version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}

	bootLogger := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := bridge.LoadConfig(os.Environ(), bootLogger)
	if err != nil {
		fmt.Fprintf(stderr, "codebridge: %v\n", err)
		return 2
	}
	if *configDir != "" {
		cfg.ConfigDir = *configDir
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch cmd {
	case "serve":
		if isTerminal(stdin) {
			fmt.Fprint(stderr, usage)
			fmt.Fprintln(stderr, "\nstdin is a terminal, so there is no MCP client to talk to: exiting.")
			return 0
		}
		err = bridge.Serve(ctx, cfg, bridge.ServeOptions{Logger: logger, Version: version(), In: stdin, Out: nopCloser{stdout}})
	case "exec":
		return execCmd(ctx, cfg, logger, args, stdin, stdout, stderr)
	case "memory":
		return memoryCmd(cfg, args, stdout, stderr)
	case "servers":
		fs := flag.NewFlagSet("servers", flag.ContinueOnError)
		fs.SetOutput(stderr)
		tools := fs.Bool("tools", false, "start each server and list its tools")
		if err := fs.Parse(args); err != nil {
			return exitUsage(err)
		}
		err = bridge.ListServers(ctx, cfg, bridge.ListOptions{Logger: logger, Tools: *tools, Out: stdout})
	default:
		fmt.Fprintf(stderr, "codebridge: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "codebridge: %v\n", err)
		return 1
	}
	return 0
}

func execCmd(ctx context.Context, cfg bridge.Config, logger *slog.Logger, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", cfg.Timeout, "time limit for the run")
	if err := fs.Parse(args); err != nil {
		return exitUsage(err)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "codebridge exec: want one FILE, or - for stdin; e.g. echo 'print(1)' | codebridge exec -")
		return 2
	}
	var code []byte
	var err error
	if name := fs.Arg(0); name == "-" {
		code, err = io.ReadAll(stdin)
	} else {
		code, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "codebridge exec: %v\n", err)
		return 2
	}
	status, err := bridge.Exec(ctx, cfg, string(code), bridge.ExecOptions{
		Logger: logger, Timeout: min(*timeout, cfg.MaxTimeout), Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "codebridge exec: %v\n", err)
		return 1
	}
	return status
}

func exitUsage(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// version is the module version when built by `go install`/`go run pkg@version`,
// else the VCS revision.
func version() string {
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
