package kube

import (
	"context"
	"net/http"
	"net/url"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// relabel sets labels and annotations on one of the namespace's pods,
// leaving the others as they are (a JSON merge patch of its metadata). A
// nil map changes nothing of its kind.
func (e *Engine) relabel(ctx context.Context, pod string, labels, annotations map[string]string) error {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return err
	}
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	path := podsPath(ns) + "/" + url.PathEscape(pod)
	var p Pod
	if err := c.api().Do(ctx, requestTimeout, http.MethodPatch, path, nil, map[string]any{"metadata": meta}, &p); err != nil {
		return err
	}
	// A claimed pod's claim goes with it to the replica that takes it, so
	// that the replica it left does not delete the claim at its shutdown.
	claim := p.Metadata.Labels[LabelClaim]
	if _, moved := labels[LabelReplica]; !moved || claim == "" {
		return nil
	}
	claimMeta := map[string]any{"labels": map[string]string{LabelReplica: labels[LabelReplica]}}
	if annotations != nil {
		claimMeta["annotations"] = annotations
	}
	return c.api().Do(ctx, requestTimeout, http.MethodPatch, claimsPath(ns)+"/"+url.PathEscape(claim), nil, map[string]any{"metadata": claimMeta}, nil)
}

// find lists the namespace's codebridge pods, of every replica, that also
// match selector (a label selector).
func (e *Engine) find(ctx context.Context, selector string) ([]PodSummary, error) {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return nil, err
	}
	return list(ctx, c, ns, confine.LabelManaged+"=true,"+selector)
}
