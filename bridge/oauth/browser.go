package oauth

import (
	"errors"
	"os/exec"
	"strings"
)

// Browser returns how to open a URL in the user's browser: the command in
// $BROWSER (getenv's; the URL replaces %s, else is its last argument; several
// commands separated by ':' are tried in turn), else the platform's opener
// for goos (xdg-open, open, or rundll32's FileProtocolHandler on Windows).
// It returns nil when there is none. The command is started, not waited for:
// a browser may keep running.
func Browser(getenv func(string) string, goos string) func(url string) error {
	var cmds [][]string
	if b := strings.TrimSpace(getenv("BROWSER")); b != "" {
		for _, c := range strings.Split(b, ":") {
			if f := strings.Fields(c); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	}
	switch goos {
	case "windows":
		cmds = append(cmds, []string{"rundll32", "url.dll,FileProtocolHandler"})
	case "darwin":
		cmds = append(cmds, []string{"open"})
	default:
		cmds = append(cmds, []string{"xdg-open"})
	}
	var found [][]string
	for _, c := range cmds {
		if _, err := exec.LookPath(c[0]); err == nil {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return func(url string) error {
		var errs []error
		for _, c := range found {
			args, replaced := make([]string, 0, len(c)), false
			for _, a := range c[1:] {
				if strings.Contains(a, "%s") {
					a, replaced = strings.ReplaceAll(a, "%s", url), true
				}
				args = append(args, a)
			}
			if !replaced {
				args = append(args, url)
			}
			cmd := exec.Command(c[0], args...)
			if err := cmd.Start(); err != nil {
				errs = append(errs, err)
				continue
			}
			// Released, not waited for: codebridge login ends soon after,
			// and a browser may outlive it.
			return cmd.Process.Release()
		}
		return errors.Join(errs...)
	}
}
