package bridge

import (
	"cmp"
	"context"
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
		WarmPool:     cfg.K8sWarmPool,
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
	return &heldBox{Container: b, e: e, holder: newHolder()}, nil
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
		return info, unwrapped[*kube.UnavailableError](err)
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
	tmpl, err := newKubeEngine(cfg, spec, slog.New(slog.DiscardHandler)).e.Template(name)
	if err != nil {
		return nil, err
	}
	pool := map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxWarmPool",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"replicas": replicas, "sandboxTemplateRef": map[string]any{"name": name}},
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{tmpl, pool}}, nil
}
