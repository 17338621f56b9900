package podman

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// EngineOptions configure an [Engine]. Zero values mean the defaults.
type EngineOptions struct {
	URI      string // Podman API; see [Options.URI]
	StateDir string // see [Options.StateDir]
	Image    string // the configured image; "" chooses [confine.DefaultImage], else [confine.FallbackImage]
	// Spec is the template of every container: its Image is filled in from
	// the resolved image; Command is required. The engine adds its seccomp
	// profile ([confine.SeccompProfile]). Its Runtime is the Podman
	// service's: see [Options.Runtime].
	Spec     confine.Spec
	Logger   *slog.Logger                   // nil discards
	Declined func(container, reason string) // see [Options.Declined]
	// ExitDelay and ExitInterval give containers exit turns
	// ([enginekit.Options.ExitDelay]): each container that exits costs Podman
	// 4.3 a process ('podman container cleanup').
	ExitDelay    string
	ExitInterval time.Duration // 0 means [enginekit.DefaultExitInterval]

	serviceIdle time.Duration // see [Options.idle]
	exitBurst   int           // see [enginekit.Options.ExitBurst]; tests lower it
}

// Engine is the Podman driver, a [sandbox.Engine]: it starts containers from
// one spec on a Podman it connects to on first use, through the engines'
// shared life cycle ([enginekit.Lifecycle]: connecting and connecting again,
// the image, exit turns, the sweep) on a [Client].
type Engine struct {
	*enginekit.Lifecycle
	opts EngineOptions
}

var _ sandbox.Engine = (*Engine)(nil)

// NewEngine returns an engine; it does not touch Podman until used.
func NewEngine(opts EngineOptions) *Engine {
	connect := func(ctx context.Context) (enginekit.Conn, error) {
		c, err := Connect(ctx, Options{URI: opts.URI, StateDir: opts.StateDir, Runtime: opts.Spec.Runtime, Logger: opts.Logger, Declined: opts.Declined, idle: opts.serviceIdle})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return &Engine{enginekit.New(connect, enginekit.Options{
		Name:         "Podman",
		Image:        imagePolicy(opts.Image),
		StateDir:     opts.StateDir,
		Spec:         opts.Spec,
		Logger:       opts.Logger,
		ExitDelay:    opts.ExitDelay,
		ExitInterval: opts.ExitInterval,
		ExitBurst:    opts.exitBurst,
	}), opts}
}

// Describe connects to Podman if needed, without resolving the image, and
// says which Podman answered and, asking it when no runtime was chosen
// ([confine.Spec.Runtime]), which OCI runtime it runs. Name, Fix and Setup
// are set even with an error.
func (e *Engine) Describe(ctx context.Context) (enginekit.Description, error) {
	d := enginekit.Description{Name: "Podman", Setup: "codebridge setup",
		Fix: "codebridge setup installs Podman; with CONTAINER_HOST or CONTAINER_CONNECTION set, check that Podman answers there"}
	conn, err := e.Connected(ctx)
	if err != nil {
		if u, ok := errors.AsType[*confine.UnavailableError](err); ok {
			err = u // its message says what to do, without the wrapping
		}
		return d, err
	}
	c := conn.(*Client)
	d.Version, d.Endpoint, d.SharesFiles, d.Runtime = c.APIVersion(), c.URI(), SharesFiles(c.URI()), c.Runtime()
	if d.Runtime == "" {
		name, path, err := c.ociRuntime(ctx)
		if err != nil {
			c.log.Info("podman did not say which OCI runtime it runs", "err", err)
		}
		d.Runtime = cmp.Or(name, path)
	}
	d.Via = "a Podman API socket"
	if c.Private() {
		d.Via = "the 'podman system service' codebridge processes start and share"
	}
	return d, nil
}

// Launch starts a container of s through c, with the sandbox's seccomp
// profile, its socket's folder made in channelDir ("" none): what an
// [enginekit.Lifecycle] asks of a Podman connection.
func (c *Client) Launch(ctx context.Context, s confine.Spec, channelDir string) (enginekit.APIContainer, error) {
	s.Runtime = cmp.Or(s.Runtime, c.runtime) // the service's: Podman runs no other
	profile, err := c.seccomp(ctx, s.Image, s.Runtime)
	if err != nil {
		return nil, err
	}
	ct, err := c.start(ctx, s, placement{seccomp: profile, channelDir: channelDir})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ct, nil
}

// RemoveByClient removes every container created through a client with one
// of these labels ([Client.Label]).
func (c *Client) RemoveByClient(ctx context.Context, labels ...string) (int, error) {
	return removeByClient(ctx, c, labels...)
}

// Ping asks whether Podman still answers.
func (c *Client) Ping(ctx context.Context) error {
	pctx, cancel := deadlineCtx(ctx, pingTimeout)
	defer cancel()
	return c.api().Do(pctx, pingTimeout, "GET", "/_ping", nil, nil, nil)
}

// Gone says why c can no longer be used: the shared Podman service it used
// has exited.
func (c *Client) Gone() string {
	if c.serviceExited() {
		return "the podman service codebridge processes share has exited"
	}
	return ""
}

// Label names c on the containers created through it.
func (c *Client) Label() string { return c.owner[labelClient] }

// Endpoint is the address of the Podman API c uses.
func (c *Client) Endpoint() string { return c.uri }

// SharesFiles reports whether the Podman c uses runs on this host and sees
// its files ([SharesFiles]).
func (c *Client) SharesFiles() bool { return SharesFiles(c.uri) }

// seccomp returns the path, on the Podman host, of the sandbox's seccomp
// profile for containers started through c. Where the Podman service reads
// this host's files, the profile is a file in the state directory, checked
// and written again if it is gone or differs (a state directory in /tmp or
// $XDG_RUNTIME_DIR may be cleaned while codebridge runs) on every start: a
// read of a small file. Elsewhere (ssh, podman machine) it is put on the
// Podman host through the API once per client. Failing either way is an
// error: a sandbox does not silently lose the profile.
func (c *Client) seccomp(ctx context.Context, image, runtime string) (string, error) {
	if !SharesFiles(c.URI()) {
		c.placeMu.Lock() // concurrent starts place it once
		defer c.placeMu.Unlock()
		if c.placed != "" {
			return c.placed, nil
		}
		path, err := c.placeSeccompProfile(ctx, image, runtime)
		if err != nil {
			return "", fmt.Errorf("%w; the sandbox does not start without its seccomp profile", err)
		}
		c.log.Info("put the sandbox's seccomp profile on the Podman host", "podman", c.URI(), "path", path)
		c.placed = path
		return path, nil
	}
	path, err := confine.WriteSeccompProfile(enginekit.StateDir(c.stateDir), runtime)
	if err != nil {
		return "", fmt.Errorf("%w: set a state directory codebridge can write", err)
	}
	return path, nil
}

// removeOwned removes every container created through c.
func removeOwned(ctx context.Context, c *Client) (int, error) {
	return removeByClient(ctx, c, c.owner[labelClient])
}

// removeByClient removes, through c, every container created through a
// client with one of these labels.
func removeByClient(ctx context.Context, c *Client, clients ...string) (int, error) {
	list, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	var theirs []string
	for _, sm := range list {
		if slices.Contains(clients, sm.Labels[labelClient]) {
			theirs = append(theirs, sm.ID)
		}
	}
	return enginekit.RemoveEach(ctx, theirs, c.remove)
}

// serviceExited reports whether c's shared Podman service has exited.
func (c *Client) serviceExited() bool {
	if c.svc == nil {
		return false
	}
	select {
	case <-c.svc.gone:
		return true
	default:
		return false
	}
}
