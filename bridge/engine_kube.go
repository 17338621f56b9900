package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/kube"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// kubeEngine adapts runtime/kube's engine: each sandbox a pod.
type kubeEngine struct{ e *kube.Engine }

func newKubeEngine(cfg settings.Config, spec confine.Spec, logger *slog.Logger) kubeEngine {
	return kubeEngine{kube.NewEngine(kube.Options{
		Namespace: cfg.K8sNamespace,
		Image:     cfg.Image,
		Spec:      spec,
		Seccomp:   cfg.K8sSeccomp,
		// MCP_BRIDGE_RUNTIME names a RuntimeClass here (e.g. gvisor); the
		// spec carries it too, so the hardening follows gVisor's.
		RuntimeClass: cfg.Runtime,
		// The interpreter serves its stream in its pod, so that a stream
		// lost with a replica loses nothing else.
		Serve:  &kube.Serve{Env: python.ServeEnv, Relay: python.RelayCommand()},
		Logger: logger.With("component", "kubernetes"),
	})}
}

func (e kubeEngine) Start(ctx context.Context, _ sandbox.Wait) (sandbox.Container, error) {
	b, err := e.e.Start(ctx) // the kubelet pulls images; nothing to wait for here
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return &heldBox{Box: b, e: e, holder: newHolder()}, nil
}

func (e kubeEngine) Ready(ctx context.Context, _ sandbox.Wait) error {
	_, err := e.e.Info(ctx)
	return err
}

func (e kubeEngine) Close(ctx context.Context) error { return e.e.Close(ctx) }

func (e kubeEngine) Describe(ctx context.Context) (engineInfo, error) {
	// The image is built where Podman runs; a cluster's nodes then take it
	// from a registry they pull from, or scripts/kube.sh load copies it.
	info := engineInfo{Name: "Kubernetes", Setup: "codebridge setup",
		Fix: "set KUBECONFIG to the cluster's kubeconfig (or run codebridge in a pod with a service account that may create pods, pods/exec and networkpolicies in its namespace)"}
	ki, err := e.e.Info(ctx)
	if err != nil {
		var u *kube.UnavailableError
		if errors.As(err, &u) {
			err = u // its message says what to do, without the wrapping
		}
		return info, err
	}
	info.Version, info.Endpoint = ki.Version, ki.Server
	info.Via = fmt.Sprintf("context %q of %s, namespace %s", ki.Context, ki.Source, ki.Namespace)
	if ki.Context == "in-cluster" {
		info.Via = "the pod's service account, namespace " + ki.Namespace
	}
	info.Runtime = ki.RuntimeClass
	if info.Runtime == "" {
		info.Runtime = "the cluster's default runtime class"
	}
	return info, nil
}

func (e kubeEngine) HasImage(ctx context.Context, image string) (bool, error) {
	return e.e.ImageOnNodes(ctx, image)
}
