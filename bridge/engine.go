package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/docker"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// engine is a container engine driver (runtime/podman, ...) as codebridge
// uses it: the sandbox manager's [sandbox.Engine], and what the composition
// root needs around it. Each driver has an adapter here (Podman's and
// Docker's are one, [localEngine], over runtime/enginekit's life cycle), and
// [newEngine] chooses one by name.
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
	// Setup is the command that prepares the engine and builds its images.
	Setup string
}

// newEngine returns the engine driver the settings name, which reaches its
// engine only when used. It is the one place where an engine is chosen by
// name.
func newEngine(cfg settings.Config, logger *slog.Logger) (engine, error) {
	name, why := ChooseEngine(cfg)
	logger.Info("container engine", "engine", name, "why", why)
	spec := sandboxSpec(cfg)
	switch name {
	case settings.EnginePodman:
		return newPodmanEngine(cfg, spec, logger), nil
	case settings.EngineDocker:
		return newDockerEngine(cfg, spec, logger), nil
	case settings.EngineKubernetes:
		return newKubeEngine(cfg, spec, logger), nil
	}
	return nil, fmt.Errorf("unknown container engine %q: codebridge drives podman, docker and kubernetes", name)
}

// chooseEngine resolves the engine setting to a driver's name and says why:
// auto takes Podman where it is present (installed, or a socket or
// CONTAINER_HOST set), else Docker where a daemon looks reachable (see
// docker.Present), else Podman (whose error then says how to install it).
// Kubernetes is never chosen by auto: it is named.
func chooseEngine(setting string, podmanPresent, dockerPresent func() bool) (name, why string) {
	switch setting {
	case settings.EnginePodman, settings.EngineDocker, settings.EngineKubernetes:
		return setting, "MCP_BRIDGE_ENGINE=" + setting
	}
	switch {
	case podmanPresent():
		return settings.EnginePodman, "auto: Podman is here"
	case dockerPresent():
		return settings.EngineDocker, "auto: Docker is here and Podman is not"
	}
	return settings.EnginePodman, "auto: neither Podman nor Docker is here"
}

// ChooseEngine says which container engine the settings choose
// (settings.EnginePodman, EngineDocker or EngineKubernetes) and why, without
// connecting to it.
func ChooseEngine(cfg settings.Config) (name, why string) {
	return chooseEngine(cfg.Engine, podman.Present, func() bool { return docker.Present(os.Getenv) })
}

// EngineChoice says which container engine the settings choose and why, for
// codebridge servers.
func EngineChoice(cfg settings.Config) string {
	name, why := ChooseEngine(cfg)
	return name + " (" + why + ")"
}

// waitLimit is how long an interpreter waits for its next run, a little
// after the manager would end it anyway (a warm container unused, a session
// idle), so a codebridge killed hard leaves nothing running for long; 0, for
// ever: sessions kept until their MCP session ends wait for ever, and the
// next codebridge start removes what a dead one left.
func waitLimit(cfg settings.Config) time.Duration {
	if cfg.Sessions && cfg.SessionIdle == 0 {
		return 0
	}
	return max(sandbox.DefaultWarmLimit, cfg.SessionIdle) + time.Minute
}

// sandboxSpec is the container every engine starts, from the settings.
func sandboxSpec(cfg settings.Config) confine.Spec {
	wait := waitLimit(cfg)
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

// localEngine adapts the engine of a driver built on runtime/enginekit's life
// cycle (runtime/podman's, runtime/docker's); describe is the driver's own.
type localEngine struct {
	e        *enginekit.Lifecycle
	describe func(ctx context.Context) (engineInfo, error)
}

func (e localEngine) Start(ctx context.Context, w sandbox.Wait) (sandbox.Container, error) {
	b, err := e.e.Start(ctx, confine.ImageWatch(w)) // the engine prepares by resolving the image
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return b, nil
}

func (e localEngine) Ready(ctx context.Context, w sandbox.Wait) error {
	return e.e.Ready(ctx, confine.ImageWatch(w))
}

func (e localEngine) Close(ctx context.Context) error { return e.e.Close(ctx) }

func (e localEngine) Describe(ctx context.Context) (engineInfo, error) { return e.describe(ctx) }

func (e localEngine) HasImage(ctx context.Context, image string) (bool, error) {
	return e.e.ImageExists(ctx, image)
}

// unwrapped is the error of type E in err, whose message says what to do,
// without the wrapping; else err.
func unwrapped[E error](err error) error {
	if u, ok := errors.AsType[E](err); ok {
		return u
	}
	return err
}

func newPodmanEngine(cfg settings.Config, spec confine.Spec, logger *slog.Logger) localEngine {
	pe := podman.NewEngine(podman.EngineOptions{
		Image:    cfg.Image,
		StateDir: cfg.StateDir,
		Spec:     spec,
		// A codebridge's sandboxes exit in turns when their streams all
		// close at once: each exit costs Podman 4.3 a process.
		ExitDelay: python.ExitDelayEnv,
		Logger:    logger.With("component", "podman"),
		Declined: func(container, reason string) {
			logger.Warn("a sandbox could not connect to its socket and talks through Podman's attach stream, which makes tool calls slower; on an SELinux host, MCP_BRIDGE_SANDBOX_STREAM=attach uses that stream from the start",
				"component", "podman", "container", container, "reason", reason)
		},
	})
	return localEngine{pe.Lifecycle, func(ctx context.Context) (engineInfo, error) {
		info := engineInfo{Name: "Podman", Setup: "codebridge setup",
			Fix: "codebridge setup installs Podman; with CONTAINER_HOST or CONTAINER_CONNECTION set, check that Podman answers there"}
		pi, err := pe.Info(ctx)
		if err != nil {
			return info, unwrapped[*confine.UnavailableError](err)
		}
		info.Version, info.Endpoint, info.SharesFiles = pi.APIVersion, pi.URI, podman.SharesFiles(pi.URI)
		info.Runtime = pi.Runtime
		info.Via = "a Podman API socket"
		if pi.Private {
			info.Via = "the 'podman system service' codebridge processes start and share"
		}
		return info, nil
	}}
}

func newDockerEngine(cfg settings.Config, spec confine.Spec, logger *slog.Logger) localEngine {
	de := docker.NewEngine(docker.EngineOptions{
		Image:    cfg.Image,
		StateDir: cfg.StateDir,
		Spec:     spec,
		Logger:   logger.With("component", "docker"),
		Declined: func(container, reason string) {
			logger.Warn("a sandbox could not connect to its socket and talks through Docker's attach stream, which makes tool calls slower; on an SELinux host, MCP_BRIDGE_SANDBOX_STREAM=attach uses that stream from the start",
				"component", "docker", "container", container, "reason", reason)
		},
	})
	return localEngine{de.Lifecycle, func(ctx context.Context) (engineInfo, error) {
		info := engineInfo{Name: "Docker", Setup: "codebridge setup --engine docker", Fix: docker.StartHint}
		di, err := de.Info(ctx)
		if err != nil {
			return info, unwrapped[*confine.UnavailableError](err)
		}
		info.Version = di.Version + ", API " + di.APIVersion
		info.Endpoint, info.Runtime, info.SharesFiles = di.Host, di.Runtime, di.SharesFiles
		info.Via = "the Docker daemon found through " + di.From
		return info, nil
	}}
}
