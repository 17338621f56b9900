package bridge

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/docker"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/kube"
	"github.com/codebridge-mcp/codebridge/runtime/podman"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// driver is a container engine driver (runtime/podman's, runtime/docker's or
// runtime/kube's Engine) as codebridge uses it: what the App runs sandboxes
// on ([sandboxEngine]; for Kubernetes also a [sandbox.Adopter]), and what
// doctor and the listing ask of it. [newEngine] chooses one by name.
type driver interface {
	sandboxEngine
	// Describe connects to the engine if needed, without resolving the
	// image, and says what answered. Name, Fix and Setup are set even with
	// an error.
	Describe(ctx context.Context) (enginekit.Description, error)
	// HasImage reports whether the image is in the engine's store, without
	// pulling it.
	HasImage(ctx context.Context, image string) (bool, error)
}

// newEngine returns the engine driver the settings name, which reaches its
// engine only when used. It is the one place where an engine is chosen by
// name.
func newEngine(cfg settings.Config, logger *slog.Logger) (driver, error) {
	name, why := ChooseEngine(cfg)
	logger.Info("container engine", "engine", name, "why", why)
	spec := sandboxSpec(cfg)
	switch name {
	case settings.EnginePodman:
		return podman.NewEngine(podman.EngineOptions{
			Image:    cfg.Image,
			StateDir: cfg.StateDir,
			Spec:     spec,
			// A codebridge's sandboxes exit in turns when their streams all
			// close at once: each exit costs Podman 4.3 a process.
			ExitDelay: python.ExitDelayEnv,
			Logger:    logger.With("component", "podman"),
			Declined:  declined(logger, "podman", "Podman"),
		}), nil
	case settings.EngineDocker:
		return docker.NewEngine(docker.EngineOptions{
			Image:    cfg.Image,
			StateDir: cfg.StateDir,
			Spec:     spec,
			Logger:   logger.With("component", "docker"),
			Declined: declined(logger, "docker", "Docker"),
		}), nil
	case settings.EngineKubernetes:
		return newKube(cfg, spec, logger), nil
	}
	return nil, fmt.Errorf("unknown container engine %q: codebridge drives podman, docker and kubernetes", name)
}

// declined logs that a sandbox of the engine (named so in logs and for
// people) could not connect to its socket.
func declined(logger *slog.Logger, component, engine string) func(container, reason string) {
	return func(container, reason string) {
		logger.Warn("a sandbox could not connect to its socket and talks through "+engine+"'s attach stream, which makes tool calls slower; on an SELinux host, MCP_BRIDGE_SANDBOX_STREAM=attach uses that stream from the start",
			"component", component, "container", container, "reason", reason)
	}
}

// newKube returns the Kubernetes driver of the settings: each sandbox a pod.
func newKube(cfg settings.Config, spec confine.Spec, logger *slog.Logger) *kube.Engine {
	return kube.NewEngine(kube.Options{
		Namespace: cfg.K8sNamespace,
		Image:     cfg.Image,
		Spec:      spec,
		Seccomp:   cfg.K8sSeccomp,
		// MCP_BRIDGE_RUNTIME names a RuntimeClass here (e.g. gvisor); the
		// spec carries it too, so the hardening follows gVisor's.
		RuntimeClass: cfg.Runtime,
		WarmPool:     cfg.K8sWarmPool,
		// The interpreter serves its stream in its pod, so that a stream
		// lost with a replica loses nothing else.
		Serve:  &kube.Serve{Env: python.ServeEnv, Relay: python.RelayCommand()},
		Logger: logger.With("component", "kubernetes"),
	})
}

// KubeWarmPool returns, as one Kubernetes List, the agent-sandbox
// SandboxTemplate whose pod is the one the settings give codebridge's
// sandboxes, and a SandboxWarmPool of replicas of it, both named
// k8s_warm_pool (or codebridge): what MCP_BRIDGE_K8S_WARM_POOL claims from.
// The template's interpreter has no wait limit in its environment, as a
// pool's waits for its claim however long; its session gets one in its
// start frame.
func KubeWarmPool(cfg settings.Config, replicas int) (any, error) {
	spec := sandboxSpec(cfg)
	delete(spec.Env, python.WaitLimitEnv)
	name := cmp.Or(cfg.K8sWarmPool, "codebridge")
	return newKube(cfg, spec, slog.New(slog.DiscardHandler)).WarmPool(name, replicas)
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
