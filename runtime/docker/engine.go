package docker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// EngineOptions configure an [Engine]. Zero values mean the defaults.
type EngineOptions struct {
	Host     string // Docker API; see [Options.Host]
	StateDir string // holds the sandboxes' socket folders; "" means [enginekit.StateDir]'s default
	Image    string // the configured image; "" chooses [confine.DefaultImage], else [confine.FallbackImage]
	// Spec is the template of every container: its Image is filled in from
	// the resolved image; Command is required. Its Runtime is the OCI
	// runtime containers run under, a name the daemon knows (its
	// daemon.json "runtimes"); "" is the daemon's default.
	Spec     confine.Spec
	Logger   *slog.Logger                   // nil discards
	Declined func(container, reason string) // see [Options.Declined]
	Getenv   func(string) string            // see [Options.Getenv]
}

// Engine is the Docker driver, a [sandbox.Engine]: it starts containers from
// one spec on a Docker daemon it connects to on first use, through the
// engines' shared life cycle ([enginekit.Lifecycle]: connecting and
// connecting again, the image, the sweep) on a [Client].
type Engine struct {
	*enginekit.Lifecycle
	opts EngineOptions
}

var _ sandbox.Engine = (*Engine)(nil)

// NewEngine returns an engine; it does not touch Docker until used.
func NewEngine(opts EngineOptions) *Engine {
	connect := func(ctx context.Context) (enginekit.Conn, error) {
		c, err := Connect(ctx, Options{Host: opts.Host, Logger: opts.Logger, Declined: opts.Declined, Getenv: opts.Getenv})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return &Engine{enginekit.New(connect, enginekit.Options{
		Name:     "Docker",
		Image:    imagePolicy(opts.Image),
		StateDir: opts.StateDir,
		Spec:     opts.Spec,
		Logger:   opts.Logger,
	}), opts}
}

// Describe connects to Docker if needed, without resolving the image, and
// says which daemon answered. Name, Fix and Setup are set even with an
// error.
func (e *Engine) Describe(ctx context.Context) (enginekit.Description, error) {
	d := enginekit.Description{Name: "Docker", Setup: "codebridge setup --engine docker", Fix: StartHint}
	conn, err := e.Connected(ctx)
	if err != nil {
		if u, ok := errors.AsType[*confine.UnavailableError](err); ok {
			err = u // its message says what to do, without the wrapping
		}
		return d, err
	}
	c := conn.(*Client)
	d.Version = c.Version() + ", API " + c.APIVersion()
	d.Endpoint, d.Runtime, d.SharesFiles = c.Host(), cmp.Or(e.opts.Spec.Runtime, c.Runtime()), c.SharesFiles()
	d.Via = "the Docker daemon found through " + c.from
	return d, nil
}

// Launch starts a container of s through c, under its OCI runtime
// ([confine.Spec.Runtime]), its socket's folder made in channelDir ("" none):
// what an [enginekit.Lifecycle] asks of a Docker connection. The seccomp profile
// goes inline in the create request.
func (c *Client) Launch(ctx context.Context, s confine.Spec, channelDir string) (enginekit.APIContainer, error) {
	ct, err := c.start(ctx, s, placement{channelDir: channelDir})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ct, nil
}

// Ping asks whether the daemon still answers.
func (c *Client) Ping(ctx context.Context) error {
	pctx, cancel := deadlineCtx(ctx, pingTimeout)
	defer cancel()
	return c.do(pctx, "GET", "/_ping", nil, nil, nil)
}

// Gone is "": a client stays usable while the daemon answers.
func (c *Client) Gone() string { return "" }

// Label names c on the containers created through it.
func (c *Client) Label() string { return c.owner[labelClient] }

// Endpoint is where the daemon answered.
func (c *Client) Endpoint() string { return c.host }
