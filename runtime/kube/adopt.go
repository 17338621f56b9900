package kube

import (
	"context"
	"fmt"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Sessions by handle from any replica ([sandbox.Adopter]): the labels that
// make a session's pod findable by its handle. The pod is the record:
// nothing else holds the handles, so a replica that dies loses none, and a
// pod's deletion forgets its handle. Label values hold at most 63
// characters, so the handle's and owner's SHA-256 ([sandbox.HandleRef]) are
// cut to 128 bits: the handle itself (130 random bits) and the token are
// never on the pod.
const (
	labelHandle  = "io.codebridge.handle"       // first 32 hex digits of HandleRef.Handle
	labelOwner   = "io.codebridge.handle-owner" // first 32 hex digits of HandleRef.Owner
	labelSession = "io.codebridge.session"      // the session's id, kept across replicas
	// labelHolder names the stream that holds the pod now: set by the
	// replica that marks or adopts it, so the one it was taken from knows.
	labelHolder = "io.codebridge.holder"
)

var _ sandbox.Adopter = (*Engine)(nil)

func newHolder() string { return randomHex(8) }

func handleSelector(ref sandbox.HandleRef) string {
	return labelHandle + "=" + ref.Handle[:32] + "," + labelOwner + "=" + ref.Owner[:32]
}

// Mark labels ct's pod with the session's handle, owner and id, and as held
// by ct's stream.
func (e *Engine) Mark(ctx context.Context, ct sandbox.Container, ref sandbox.HandleRef, id string) error {
	b, ok := ct.(*Container)
	if !ok {
		return fmt.Errorf("marking a sandbox that is not a pod of this engine: %T", ct)
	}
	b.mu.Lock()
	b.ref = ref
	b.mu.Unlock()
	return e.relabel(ctx, b.ID(), map[string]string{
		labelHandle: ref.Handle[:32], labelOwner: ref.Owner[:32], labelSession: id, labelHolder: b.holder,
	}, nil)
}

// Adopt finds the running pod marked with ref, makes it this replica's (its
// replica, owner and holder labels, so this replica's shutdown deletes it
// and no sweep takes it for a dead replica's) and opens a new stream to it,
// which ends the stream of the replica that held it.
func (e *Engine) Adopt(ctx context.Context, ref sandbox.HandleRef) (sandbox.Container, string, int, error) {
	pods, err := e.find(ctx, handleSelector(ref))
	if err != nil {
		return nil, "", 0, fmt.Errorf("looking for the session's sandbox pod: %w", err)
	}
	var pod *PodSummary
	for i, p := range pods {
		if !p.Deleted && p.Ended.IsZero() && p.Phase == "Running" {
			pod = &pods[i]
		}
	}
	if pod == nil {
		return nil, "", 0, sandbox.ErrUnknownHandle
	}
	holder := newHolder()
	owner := confine.Self().Labels()
	labels := map[string]string{LabelReplica: e.replica, labelHolder: holder}
	if start, ok := owner[confine.LabelOwnerStart]; ok {
		labels[confine.LabelOwnerStart] = start
	}
	if err := e.relabel(ctx, pod.Name, labels, owner); err != nil {
		return nil, "", 0, fmt.Errorf("taking over sandbox pod %s: %w", pod.Name, err)
	}
	b, runs, err := e.resume(ctx, pod.Name)
	if err != nil {
		return nil, "", 0, err
	}
	b.holder, b.ref = holder, ref
	return b, pod.Labels[labelSession], runs, nil
}

// Lost reports whether ct's pod, still running, is held by another stream:
// another replica (or this one, again) adopted it.
func (e *Engine) Lost(ctx context.Context, ct sandbox.Container) bool {
	b, ok := ct.(*Container)
	if !ok {
		return false
	}
	b.mu.Lock()
	ref := b.ref
	b.mu.Unlock()
	if ref.Handle == "" {
		return false
	}
	pods, err := e.find(ctx, handleSelector(ref))
	if err != nil {
		return false // as before adoption: the pod is taken as this replica's
	}
	for _, p := range pods {
		if p.Name == b.ID() && !p.Deleted && p.Labels[labelHolder] != b.holder {
			return true
		}
	}
	return false
}
