// Command codebridge is an MCP server that gives an agent one tool, run_python,
// through which its code reaches every MCP server configured in ~/MCPs.
//
// Without a command it serves MCP over stdio, which is what agents run. Its
// commands, from the table in commands.go, and their flags are listed by
//
//	codebridge help
//
// and each command's own help by codebridge help COMMAND. Every command takes
// --help, --version and --config-dir.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGHUP too: a closed terminal stops codebridge as cleanly as Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
