package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// Sandboxes claimed from agent-sandbox (sigs.k8s.io/agent-sandbox, v1beta1):
// with [Options.WarmPool] set, the engine does not create pods; it creates a
// SandboxClaim on that SandboxWarmPool, whose controller hands it a pod made
// from the pool's SandboxTemplate (a warm one when the pool has one ready),
// and deleting the claim deletes the pod. The template's pod must be the one
// this engine would create ([Engine.Template]).
const (
	claimsAPI  = "/apis/extensions.agents.x-k8s.io/v1beta1"
	sandboxAPI = "/apis/agents.x-k8s.io/v1beta1"
	// podNameAnnotation is where a Sandbox names the pod it adopted from a
	// warm pool; without it the pod has the Sandbox's name.
	podNameAnnotation = "agents.x-k8s.io/pod-name"
	// LabelClaim names, on a claimed pod, the SandboxClaim that holds it:
	// what the sweep deletes instead of the pod, which the Sandbox's
	// controller would make again.
	LabelClaim = "io.codebridge.claim"
)

// errClaimGone is why a wait for a claim ended: it was deleted.
var errClaimGone = errors.New("the sandbox claim was deleted")

func claimsPath(ns string) string {
	return claimsAPI + "/namespaces/" + url.PathEscape(ns) + "/sandboxclaims"
}

// claimObject is a SandboxClaim as far as the engine reads and writes it.
type claimObject struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		WarmPoolRef struct {
			Name string `json:"name"`
		} `json:"warmPoolRef"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
		Sandbox struct {
			Name string `json:"name"`
		} `json:"sandbox"`
	} `json:"status"`
}

// claimReady is done when the claim's sandbox is ready.
func claimReady(c *claimObject) (bool, error) {
	if c.Status.Sandbox.Name == "" {
		return false, nil
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Ready" && cond.Status == "True" {
			return true, nil
		}
	}
	return false, nil
}

// claim starts a sandbox as a claim on the warm pool: it creates the claim,
// waits for its sandbox to be ready, marks the pod as this replica's and
// opens its stream.
func (e *Engine) claim(ctx context.Context, c *Client, ns string) (*Container, error) {
	owner := e.owner.Labels()
	labels := map[string]string{confine.LabelManaged: "true", LabelReplica: e.replica}
	if start, ok := owner[confine.LabelOwnerStart]; ok {
		labels[confine.LabelOwnerStart] = start
	}
	var cl claimObject
	cl.APIVersion, cl.Kind = "extensions.agents.x-k8s.io/v1beta1", "SandboxClaim"
	cl.Metadata.Name = "codebridge-" + randomHex(8)
	cl.Metadata.Labels, cl.Metadata.Annotations = labels, owner
	cl.Spec.WarmPoolRef.Name = e.opts.WarmPool
	if err := c.api().Do(ctx, requestTimeout, http.MethodPost, claimsPath(ns), nil, cl, nil); err != nil {
		return nil, fmt.Errorf("claiming a sandbox from warm pool %s in namespace %s (agent-sandbox): %w", e.opts.WarmPool, ns, err)
	}
	b := &Container{e: e, c: c, ns: ns, claim: cl.Metadata.Name, serve: e.opts.Serve != nil}
	return e.launch(ctx, b, func(ctx context.Context) error {
		got, err := waitObject(ctx, c, claimsPath(ns), "sandbox claim", cl.Metadata.Name, errClaimGone, claimReady)
		if err != nil {
			return err
		}
		var sb struct {
			Metadata objectMeta `json:"metadata"`
		}
		sbPath := sandboxAPI + "/namespaces/" + url.PathEscape(ns) + "/sandboxes/" + url.PathEscape(got.Status.Sandbox.Name)
		if err := c.api().Do(ctx, requestTimeout, http.MethodGet, sbPath, nil, nil, &sb); err != nil {
			return fmt.Errorf("the sandbox of claim %s: %w", cl.Metadata.Name, err)
		}
		b.name = cmp.Or(sb.Metadata.Annotations[podNameAnnotation], sb.Metadata.Name)
		// The pod's labels say which replica holds it, as for the pods the
		// engine makes, and its claim; the Sandbox's controller leaves
		// labels it did not set.
		podLabels := maps.Clone(labels)
		podLabels[LabelClaim] = cl.Metadata.Name
		return e.relabel(ctx, b.name, podLabels, owner)
	})
}

// deleteClaim deletes a claim, and with it its sandbox and pod (owner
// references); a claim gone is not an error.
func deleteClaim(ctx context.Context, c *Client, ns, name string) error {
	err := c.api().Do(ctx, requestTimeout, http.MethodDelete, claimsPath(ns)+"/"+url.PathEscape(name), nil, map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Template returns the agent-sandbox SandboxTemplate, named name, whose pod
// is the one this engine would create for a sandbox, without this replica's
// labels (a claim's pod gets them when claimed), and whose NetworkPolicy
// denies all traffic. A SandboxWarmPool of it is what [Options.WarmPool]
// names.
func (e *Engine) Template(name string) (map[string]any, error) {
	pod, _, err := e.pod(e.opts.Spec, nil, "", "")
	if err != nil {
		return nil, err
	}
	delete(pod.Metadata.Labels, LabelReplica)
	return map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxTemplate",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"podTemplate": map[string]any{
				"metadata": map[string]any{"labels": pod.Metadata.Labels, "annotations": pod.Metadata.Annotations},
				"spec":     pod.Spec,
			},
			// No rules: the controller's policy for the template's pods
			// denies all ingress and egress.
			"networkPolicy": map[string]any{},
		},
	}, nil
}

// WarmPool returns, as one Kubernetes List, the [Engine.Template] named name
// and a SandboxWarmPool of replicas of it, also named name: what
// [Options.WarmPool] claims from once applied.
func (e *Engine) WarmPool(name string, replicas int) (map[string]any, error) {
	tmpl, err := e.Template(name)
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
