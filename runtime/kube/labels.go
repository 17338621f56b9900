package kube

import (
	"context"
	"net/http"
	"net/url"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// Relabel sets labels and annotations on one of the namespace's pods,
// leaving the others as they are (a JSON merge patch of its metadata). A
// nil map changes nothing of its kind.
func (e *Engine) Relabel(ctx context.Context, pod string, labels, annotations map[string]string) error {
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
	return c.do(ctx, requestTimeout, http.MethodPatch, path, nil, map[string]any{"metadata": meta}, nil)
}

// Find lists the namespace's codebridge pods, of every replica, that also
// match selector (a label selector).
func (e *Engine) Find(ctx context.Context, selector string) ([]PodSummary, error) {
	c, ns, err := e.connected(ctx)
	if err != nil {
		return nil, err
	}
	return list(ctx, c, ns, confine.LabelManaged+"=true,"+selector)
}
