package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/front"
	bridgehost "github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// shutdownBudget is how long codebridge's parts have to stop, once serving
// or a command's work has ended (by a signal, the end of input, or done):
// the MCP server's sessions, the downstream servers, the containers and the
// engine's connection, all within it ([bridge.App.Shutdown]). Over HTTP,
// runs in progress get MCP_BRIDGE_SHUTDOWN_GRACE on top.
const shutdownBudget = 45 * time.Second

// withApp builds the App of cfg, runs f on it, and then shuts it down within
// extra+shutdownBudget, even when ctx has ended.
func (c *call) withApp(ctx context.Context, cfg settings.Config, extra time.Duration, f func(*bridge.App) error) error {
	app, err := bridge.New(ctx, cfg, bridge.Options{Logger: c.logger, Version: version(), Settings: c.layers})
	if err != nil {
		return err
	}
	err = f(app)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), extra+shutdownBudget)
	defer cancel()
	return errors.Join(err, app.Shutdown(sctx))
}

// serveStdio serves MCP over c's stdin and stdout until the client closes
// its end or ctx ends.
func serveStdio(ctx context.Context, c *call) error {
	return c.withApp(ctx, c.cfg, 0, func(app *bridge.App) error {
		return app.ServeStdio(ctx, c.stdin, c.stdout)
	})
}

// serveHTTP serves MCP over streamable HTTP on c.cfg.HTTP until ctx ends.
// The address is bound before anything else starts, so that a port in use
// is reported before the container engine is contacted.
func serveHTTP(ctx context.Context, c *call) error {
	f, err := front.Listen(bridge.FrontOptions(c.cfg, c.logger, c.stderr))
	if err != nil {
		return err
	}
	err = c.withApp(ctx, c.cfg, c.cfg.ShutdownGrace, func(app *bridge.App) error {
		served := make(chan error, 1)
		go func() { served <- app.ServeHTTP(f) }()
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
			return nil // Shutdown stops the front; ServeHTTP then returns nil
		}
	})
	f.Close() // a front that never served; else closed already
	return err
}

// runExec runs code once, as exec does, copying its output to c's stdout and
// stderr. It returns the code's exit status, or 1 when the code did not
// exit by itself (an exception, the time limit, a crash without status);
// the error is for codebridge's own failures, such as a sandbox that cannot
// start (the status is 1 then too).
func runExec(ctx context.Context, c *call, code string, timeout time.Duration) (status int, err error) {
	cfg := c.cfg
	cfg.WarmSandboxes = 0 // one run: nothing to start ahead of time
	cfg.Preload = nil
	status = 1
	err = c.withApp(ctx, cfg, 0, func(app *bridge.App) error {
		res, att, err := app.Exec(ctx, code, timeout)
		if err != nil {
			return err
		}
		status, err = printExec(c.stdout, c.stderr, res, att)
		return err
	})
	if err != nil {
		return 1, err
	}
	return status, nil
}

// printExec writes a run's output, what it returned that exec does not
// show, and its failure, and returns its exit status.
func printExec(stdout, stderr io.Writer, res *python.Result, att *bridgehost.Attachments) (int, error) {
	io.WriteString(stdout, res.Stdout)
	io.WriteString(stderr, res.Stderr)
	if _, kept, dropped, more := att.Contents(); len(kept)+len(dropped) > 0 {
		for _, a := range kept {
			fmt.Fprintf(stderr, "codebridge: the run returned %s %q (%s, %s), which exec does not show: an MCP client receives it from run_python\n",
				a.Kind, a.Name, a.MIMEType, bridgehost.ByteSize(a.Bytes))
		}
		for _, d := range dropped {
			fmt.Fprintf(stderr, "codebridge: %s %q not returned: %s\n", d.Kind, d.Name, d.Reason)
		}
		if more > 0 {
			fmt.Fprintf(stderr, "codebridge: and %d more not returned\n", more)
		}
	}
	if f := res.Error; f != nil {
		if f.Kind == protocol.FailUnavailable {
			return 1, errors.New(f.Message)
		}
		msg := f.Traceback
		if msg == "" {
			msg = f.Message + "\n"
		}
		fmt.Fprint(stderr, msg)
		if res.ExitCode <= 0 { // -1: no status of its own; not 255 from os.Exit(-1)
			return 1, nil
		}
	}
	return res.ExitCode, nil
}
