package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// commands is the table of codebridge's commands, in the order codebridge
// --help lists them: a command added here is parsed, run and listed. The
// command help is not in it, as it reads the table (see [parse]); nor is a
// command's own table of verbs, such as [memoryVerbs] and [toolsVerbs].
// It is a function, not a variable, because serve's run prints the usage made
// from it.
func commands() []command {
	return []command{
		{name: "serve", synopsis: "--http ADDR", help: serveHelp, flags: serveCommand, check: checkServe,
			summary: "serve MCP over streamable HTTP at http://ADDR/mcp\n(token auth; see the README's \"Serve over HTTP\")"},
		{name: "exec", synopsis: "[--timeout T] FILE|-", help: execHelp, flags: execCommand, operands: true,
			summary: "run a Python file in the sandbox and print its output"},
		{name: "servers", synopsis: "[--tools]", help: serversHelp, flags: serversCommand,
			summary: "list the configured servers and their state"},
		{name: "memory", synopsis: "[VERB]", help: memoryHelp, flags: noFlags(memoryCmd), operands: true,
			summary: "see and remove what agents stored (memory --help)"},
		{name: "audit", synopsis: "[-n N] [--server S]", help: auditHelp, flags: auditCommand,
			summary: "the tool calls code made, most recent last (audit --help)"},
		{name: "check", synopsis: "[SERVER[.TOOL]...]", help: checkHelp, flags: checkCommand, operands: true,
			summary: "say whether each tool could be called now, or why not"},
		{name: "tools", synopsis: "review|approve [S]", help: toolsHelp, flags: noFlags(toolsCmd), operands: true,
			summary: "see and approve tools whose definition changed (tools --help)"},
		{name: "login", synopsis: "[--no-browser] NAME", help: loginHelp, flags: loginCommand, operands: true,
			summary: "sign in to a remote server that asks for OAuth (login --help)"},
		{name: "logout", synopsis: "NAME", help: logoutHelp, flags: noFlags(logoutCmd), operands: true,
			summary: "forget the sign-in to a remote server"},
		{name: "secret", synopsis: "set|check|rm SERVICE/ACCOUNT", help: secretHelp, flags: noFlags(secretCmd), operands: true, bare: true,
			summary: "keep a server's token in the OS keyring, for ${keyring:...}"},
		{name: "setup", synopsis: "[--engine E] [--yes]", help: setupHelp, flags: setupCommand,
			summary: "install Podman (or prepare Docker) and build the sandbox image"},
		{name: "doctor", help: doctorHelp, flags: noFlags(doctorCmd),
			summary: "check everything codebridge needs and say how to fix it"},
		{name: "config", synopsis: "[--json]", help: configHelp, flags: configCommand,
			summary: "print every setting, its value and where it came from"},
		{name: "import", synopsis: "[--write]", help: importHelp, flags: importCommand,
			summary: "bring the MCP servers of your agents' configs into ~/MCPs"},
		{name: "version", help: versionHelp, flags: noFlags(versionCmd), bare: true,
			summary: "print the version"},
	}
}

const serveHelp = `Usage: codebridge [--config-dir DIR]
       codebridge serve [--http ADDR] [--lane LANE]

Serves MCP: on stdin and stdout, which is what an agent runs (codebridge without
a command does the same), or with --http over streamable HTTP at
http://ADDR/mcp. Started on stdio in a terminal, where there is no MCP client
to talk to, it prints codebridge's help and exits.

Flags:
  --http ADDR       serve over streamable HTTP on HOST:PORT (127.0.0.1:8080, or
                    :8080 for every interface), with token auth; see the
                    README's "Serve over HTTP". Default MCP_BRIDGE_HTTP.
  --lane LANE       what clients are served: code (run_python), tools (every
                    downstream tool directly) or search (find, describe and
                    call them); see docs/lanes.md. Default MCP_BRIDGE_LANE
                    (code). Over HTTP, ?codemode=false on the URL picks tools.
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when the client or a signal ends it; 1 when serving failed; 2
when the command line or a setting is wrong.
`

// serveCommand defines serve's flags and returns its run function.
func serveCommand(fs *flag.FlagSet) runFunc {
	// --http is the top layer of the http setting: c.cfg.HTTP has it.
	fs.String("http", "", "serve MCP over streamable HTTP on HOST:PORT")
	// --lane is the top layer of the lane setting.
	fs.String("lane", "", "what clients are served: code, tools or search")
	return func(ctx context.Context, c *call) int {
		if c.cfg.HTTP != "" {
			useServerGC()
			return c.exit(serveHTTP(ctx, c))
		}
		if isTerminal(c.stdin) {
			fmt.Fprint(c.stderr, usage(c.pin))
			fmt.Fprintln(c.stderr, "\nstdin is a terminal, so there is no MCP client to talk to: exiting.")
			return 0
		}
		return c.exit(serveStdio(ctx, c))
	}
}

// checkServe checks serve's --http address before the settings are read.
func checkServe(fs *flag.FlagSet) error {
	addr := fs.Lookup("http").Value.String()
	if _, _, err := net.SplitHostPort(addr); addr != "" && err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT such as 127.0.0.1:8080 (or :8080 for every interface)", addr)
	}
	return nil
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

// execCommand defines exec's flags and returns its run function.
func execCommand(fs *flag.FlagSet) runFunc {
	var timeout time.Duration
	fs.Func("timeout", "time limit: whole seconds or a Go duration", func(s string) (err error) {
		timeout, err = settings.ParseSeconds(s)
		return err
	})
	return func(ctx context.Context, c *call) int { return execCmd(ctx, c, timeout) }
}

func execCmd(ctx context.Context, c *call, timeout time.Duration) int {
	if len(c.args) != 1 {
		fmt.Fprintln(c.stderr, "codebridge exec: want one FILE, or - for stdin; e.g. echo 'print(1)' | codebridge exec -")
		return 2
	}
	if timeout == 0 {
		timeout = c.cfg.Timeout
	}
	if timeout > c.cfg.MaxTimeout {
		fmt.Fprintf(c.stderr, "codebridge exec: --timeout %s is over the %s maximum (%sMAX_TIMEOUT): ask for less, or raise %sMAX_TIMEOUT\n",
			timeout, c.cfg.MaxTimeout, settings.EnvPrefix, settings.EnvPrefix)
		return 2
	}
	var code []byte
	var err error
	if name := c.args[0]; name == "-" {
		if isTerminal(c.stdin) {
			fmt.Fprintln(c.stderr, "codebridge exec: reading Python code from stdin until Ctrl-D (end of input)")
		}
		code, err = io.ReadAll(c.stdin)
	} else {
		code, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge exec: %v\n", err)
		return 2
	}
	status, err := runExec(ctx, c, string(code), timeout)
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge exec: %v\n", err)
		return 1
	}
	return status
}

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

// serversCommand defines the flags of servers and returns its run function.
func serversCommand(fs *flag.FlagSet) runFunc {
	tools := fs.Bool("tools", false, "start each server and list its tools")
	return func(ctx context.Context, c *call) int {
		return c.exit(c.withListing(ctx, func(l *bridge.Listing) error {
			return listServers(ctx, c.cfg, l, listOptions{logger: c.logger, tools: *tools, out: c.stdout})
		}))
	}
}

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
               it took (all are started at once, then stopped), and the
               OAuth sign-in of a remote server (codebridge login NAME)
  state        the state directory can be written

Flags:
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when nothing failed (warnings allowed); 1 when a check failed;
2 when the command line is wrong.
`

func doctorCmd(ctx context.Context, c *call) int {
	return c.exit(c.withListing(ctx, func(l *bridge.Listing) error { return doctor(ctx, l, c.stdout) }))
}

const versionHelp = `Usage: codebridge version

Prints codebridge's version: the module version it was built from (go install
or go run ...@VERSION), else the source revision.
`

func versionCmd(_ context.Context, c *call) int {
	fmt.Fprintln(c.stdout, "codebridge", version())
	return 0
}
