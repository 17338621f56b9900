package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

const loginHelp = `Usage: codebridge login [--no-browser] [--timeout T] NAME

Signs in to NAME, a remote server of ~/MCPs that asks for an OAuth sign-in
(most hosted MCP servers do), the way agents sign in to them: codebridge finds
the server's authorization server, registers itself there unless NAME's entry
names a client ("oauth": {"clientId": ...}), and opens the sign-in page in your
browser: $BROWSER when set, else xdg-open, open or rundll32. The address is
always printed too. Once you approve, the browser is sent back to codebridge
on 127.0.0.1, which says who is signed in and until when.

The tokens go to the OS keyring (else to a 0600 file under the state
directory), never to ~/MCPs, and never reach the sandbox. codebridge refreshes
them without asking you; when the server refuses them, calls fail with
MCPError code auth_required until you run codebridge login NAME again, unless
the agent's client supports URL-mode elicitation: then it asks you to open the
sign-in page, and the call goes on once you signed in.

Flags:
  --no-browser      print the address only; open it yourself (e.g. on another
                    machine, while this one can still be reached at 127.0.0.1)
  --timeout T       how long to wait for the sign-in (default 5m)
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when signed in; 1 when the sign-in failed or timed out; 2 when
the command line is wrong.
`

// loginCommand defines login's flags and returns its run function.
func loginCommand(fs *flag.FlagSet) runFunc {
	noBrowser := fs.Bool("no-browser", false, "print the sign-in address only")
	timeout := oauth.DefaultLoginTimeout
	fs.Func("timeout", "how long to wait for the sign-in", func(s string) (err error) {
		timeout, err = settings.ParseSeconds(s)
		return err
	})
	return func(ctx context.Context, c *call) int {
		if len(c.args) != 1 {
			fmt.Fprintln(c.stderr, "codebridge login: want the NAME of one server; codebridge servers lists them")
			return 2
		}
		res, err := bridge.Login(ctx, c.cfg, c.args[0], bridge.LoginOptions{
			Logger: c.logger, Out: c.stderr, NoBrowser: *noBrowser, Timeout: timeout, Version: version(),
		})
		if errors.Is(err, oauth.ErrNoSignInNeeded) {
			fmt.Fprintf(c.stdout, "%v\n", err)
			return 0
		}
		if err != nil {
			return c.exit(err)
		}
		fmt.Fprintf(c.stdout, "%s: %s.\n", c.args[0], res.Record.Describe(time.Now()))
		if res.Record.Subject == "" {
			fmt.Fprintln(c.stdout, "(The authorization server did not say which account signed in: whichever you chose in the browser.)")
		}
		fmt.Fprintf(c.stdout, "It lists %d tools. The sign-in is kept in %s.\n", res.Tools, res.Where)
		return 0
	}
}

const logoutHelp = `Usage: codebridge logout NAME

Forgets codebridge's sign-in to NAME (codebridge login NAME): its tokens leave
the OS keyring or the state directory. The server itself may still consider
the sign-in valid until the tokens expire; revoke it there to end it at once.

Flags:
  --config-dir DIR  folder of MCP server configs (default ~/MCPs, or MCP_BRIDGE_CONFIG_DIR)

Exit status: 0 when it is forgotten (or there was none); 1 when removing it
failed; 2 when the command line is wrong.
`

func logoutCmd(_ context.Context, c *call) int {
	if len(c.args) != 1 {
		fmt.Fprintln(c.stderr, "codebridge logout: want the NAME of one server; codebridge servers lists them")
		return 2
	}
	found, err := bridge.Logout(c.cfg, c.args[0])
	if err != nil {
		return c.exit(err)
	}
	if found {
		fmt.Fprintf(c.stdout, "signed out of %s: its tokens are removed\n", c.args[0])
	} else {
		fmt.Fprintf(c.stdout, "%s: codebridge was not signed in\n", c.args[0])
	}
	return 0
}
