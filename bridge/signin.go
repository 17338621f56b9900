package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/discovery"
)

// LoginOptions configure [Login].
type LoginOptions struct {
	Logger    *slog.Logger
	Out       io.Writer     // the authorization URL and progress
	NoBrowser bool          // print the URL only
	Timeout   time.Duration // for the whole sign-in; 0 means oauth.DefaultLoginTimeout
	Version   string        // codebridge's, for initialize and registration
}

// Login signs in to the configured server name, as `codebridge login` does
// (see [oauth.Login]), and saves the sign-in where codebridge finds it.
func Login(ctx context.Context, cfg settings.Config, name string, opts LoginOptions) (*oauth.LoginResult, error) {
	def, err := signInServer(cfg, name)
	if err != nil {
		return nil, err
	}
	var open func(string) error
	if !opts.NoBrowser {
		open = oauth.Browser(os.Getenv, goruntime.GOOS)
	}
	return oauth.Login(ctx, def, oauth.LoginOptions{
		Store: oauth.NewStore(cfg.StateDir), Open: open, Out: opts.Out, Timeout: opts.Timeout,
		Client: &mcp.Implementation{Name: "codebridge", Version: opts.Version}, ClientMetadataURL: cfg.OAuthClientMetadataURL,
	})
}

// Logout forgets the sign-in of the configured server name, and reports
// whether there was one.
func Logout(cfg settings.Config, name string) (bool, error) {
	def, err := signInServer(cfg, name)
	if err != nil {
		return false, err
	}
	return oauth.NewStore(cfg.StateDir).Delete(def.Name, def.URL)
}

// signInServer is the configured server name, if codebridge can sign in to
// it.
func signInServer(cfg settings.Config, name string) (*discovery.Server, error) {
	conf := discovery.Load(cfg.ConfigDir, nil, discovery.Options{AllowSelf: cfg.AllowSelf})
	def := conf.Server(name)
	if def == nil {
		for _, p := range conf.Problems {
			if p.Server == name {
				return nil, fmt.Errorf("%s: fix its entry first", settings.ExplainProblem(p))
			}
		}
		return nil, fmt.Errorf("no server %q in %s (configured: %s)", name, cfg.ConfigDir, strings.Join(conf.Names(), ", "))
	}
	if !oauth.Signs(def) {
		switch {
		case def.Transport == discovery.Stdio:
			return nil, fmt.Errorf("%s is a local server started by codebridge: there is nothing to sign in to", name)
		case def.Transport == discovery.SSE:
			return nil, fmt.Errorf("%s uses the older SSE transport: codebridge signs in to streamable HTTP servers only", name)
		default:
			return nil, fmt.Errorf("%s sends its own Authorization header (in %s): remove it to sign in with OAuth instead", name, def.Source)
		}
	}
	return def, nil
}

// signInStates is what servers and doctor say of each server codebridge
// may sign in to, by name.
func signInStates(st *state, servers []*discovery.Server) map[string]string {
	store := st.oauth
	out := map[string]string{}
	for _, s := range servers {
		if st := store.State(s, time.Now()); st != "" {
			out[s.Name] = st
		}
	}
	return out
}

// isAuthRequired reports whether err says a server needs a sign-in.
func isAuthRequired(err error) bool { return errors.Is(err, oauth.ErrAuthRequired) }
