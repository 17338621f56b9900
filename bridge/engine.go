package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// engine is a container engine driver (runtime/podman, ...) as codebridge
// uses it: the sandbox manager's [sandbox.Engine], and what the composition
// root needs around it. Each driver has an adapter here, and [newEngine]
// chooses one by name.
type engine interface {
	sandbox.Engine
	// Ready connects to the engine and resolves the sandbox image, waiting
	// for it as w says.
	Ready(ctx context.Context, w sandbox.Wait) error
	// Close ends every container of the engine and closes its connection
	// (and a service codebridge started).
	Close(ctx context.Context) error
	// Describe connects to the engine if needed, without resolving the
	// image, and says what answered. Name and Fix are set even with an
	// error.
	Describe(ctx context.Context) (engineInfo, error)
	// HasImage reports whether the image is in the engine's store, without
	// pulling it.
	HasImage(ctx context.Context, image string) (bool, error)
}

// engineInfo is what [engine.Describe] reports, for doctor and servers.
type engineInfo struct {
	Name     string // the engine, as people call it: "Podman"
	Version  string // the version of its API
	Endpoint string // where it answered: a URI
	Via      string // how codebridge reached it, e.g. "a Podman API socket"
	Runtime  string // the OCI runtime sandboxes run under; "" when the driver does not say
	// SharesFiles says that the engine reads this host's files, so a sandbox
	// may talk over a unix socket ([confine.Channel]).
	SharesFiles bool
	// Fix is what to do when the engine does not answer.
	Fix string
}

// newEngine returns the engine driver the settings name, which reaches its
// engine only when used. It is the one place where an engine is chosen by
// name.
func newEngine(cfg settings.Config, logger *slog.Logger) (engine, error) {
	name := "podman" // the one driver so far; a setting will choose
	spec := sandboxSpec(cfg)
	switch name {
	case "podman":
		return newPodmanEngine(cfg, spec, logger), nil
	}
	return nil, fmt.Errorf("unknown container engine %q: codebridge drives podman", name)
}

// sandboxSpec is the container every engine starts, from the settings.
func sandboxSpec(cfg settings.Config) confine.Spec {
	// An interpreter gives up waiting for its next run a little after the
	// manager would end it anyway (a warm container unused, a session idle),
	// so a codebridge killed hard leaves nothing running for long. Sessions
	// kept until their MCP session ends wait for ever; the next codebridge
	// start removes what a dead one left.
	wait := max(sandbox.DefaultWarmLimit, cfg.SessionIdle) + time.Minute
	if cfg.Sessions && cfg.SessionIdle == 0 {
		wait = 0
	}
	channel := ""
	if cfg.SocketStream {
		channel = python.ChannelEnv
	}
	env := map[string]string{python.WaitLimitEnv: strconv.Itoa(int(wait.Seconds()))}
	if confine.GVisor(cfg.Runtime) {
		env[python.GVisorEnv] = "1"
	}
	return confine.Spec{
		Command: python.Command(),
		Env:     env,
		Channel: channel,
		User:    cfg.ContainerUser,
		Memory:  cfg.Memory,
		CPUs:    cfg.CPUs,
		Pids:    cfg.Pids,
		Runtime: cfg.Runtime,
	}
}

// podmanEngine adapts runtime/podman's engine.
type podmanEngine struct{ e *podman.Engine }

func newPodmanEngine(cfg settings.Config, spec confine.Spec, logger *slog.Logger) podmanEngine {
	return podmanEngine{podman.NewEngine(podman.EngineOptions{
		Image:    cfg.Image,
		StateDir: cfg.StateDir,
		Spec:     spec,
		Logger:   logger.With("component", "podman"),
		Declined: func(container, reason string) {
			logger.Warn("a sandbox could not connect to its socket and talks through Podman's attach stream, which makes tool calls slower; on an SELinux host, MCP_BRIDGE_SANDBOX_STREAM=attach uses that stream from the start",
				"component", "podman", "container", container, "reason", reason)
		},
	})}
}

func (e podmanEngine) Start(ctx context.Context, w sandbox.Wait) (sandbox.Container, error) {
	b, err := e.e.Start(ctx, podman.ImageWatch(w)) // the engine prepares by resolving the image
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return b, nil
}

func (e podmanEngine) Ready(ctx context.Context, w sandbox.Wait) error {
	return e.e.Ready(ctx, podman.ImageWatch(w))
}

func (e podmanEngine) Close(ctx context.Context) error { return e.e.Close(ctx) }

func (e podmanEngine) Describe(ctx context.Context) (engineInfo, error) {
	info := engineInfo{Name: "Podman",
		Fix: "codebridge setup installs Podman; with CONTAINER_HOST or CONTAINER_CONNECTION set, check that Podman answers there"}
	pi, err := e.e.Info(ctx)
	if err != nil {
		var u *podman.UnavailableError
		if errors.As(err, &u) {
			err = u // its message says what to do, without the wrapping
		}
		return info, err
	}
	info.Version, info.Endpoint, info.SharesFiles = pi.APIVersion, pi.URI, podman.SharesFiles(pi.URI)
	info.Runtime = pi.Runtime
	info.Via = "a Podman API socket"
	if pi.Private {
		info.Via = "a private 'podman system service' codebridge starts"
	}
	return info, nil
}

func (e podmanEngine) HasImage(ctx context.Context, image string) (bool, error) {
	return e.e.ImageExists(ctx, image)
}
