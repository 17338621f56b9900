package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/kube"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Sessions by handle from any replica, on Kubernetes: the labels that make a
// session's pod findable by its handle. The pod is the record: nothing else
// holds the handles, so a replica that dies loses none, and a pod's deletion
// forgets its handle. Label values hold at most 63 characters, so the
// handle's and owner's SHA-256 ([sandbox.HandleRef]) are cut to 128 bits: the
// handle itself (130 random bits) and the token are never on the pod.
const (
	labelHandle  = "io.codebridge.handle"       // first 32 hex digits of HandleRef.Handle
	labelOwner   = "io.codebridge.handle-owner" // first 32 hex digits of HandleRef.Owner
	labelSession = "io.codebridge.session"      // the session's id, kept across replicas
	// labelHolder names the stream that holds the pod now: set by the
	// replica that marks or adopts it, so the one it was taken from knows.
	labelHolder = "io.codebridge.holder"
)

// podLabels is what adoption needs of runtime/kube: setting a pod's labels
// and annotations, and finding codebridge's pods by a label selector, from
// any replica. Until the engine has both, sessions stay with the replica
// that started them, as before.
type podLabels interface {
	Relabel(ctx context.Context, pod string, labels, annotations map[string]string) error
	Find(ctx context.Context, selector string) ([]kube.PodSummary, error)
}

// labels returns the engine's pod labelling, or nil without it.
func (e kubeEngine) labels() podLabels {
	pl, _ := any(e.e).(podLabels)
	return pl
}

// heldBox is a sandbox pod's stream as this replica holds it: its Remove
// leaves alone a pod another stream has taken since.
type heldBox struct {
	*kube.Container
	e      kubeEngine
	holder string // this stream's value of labelHolder

	mu  sync.Mutex
	ref sandbox.HandleRef // the session's, once marked
}

func newHolder() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func handleSelector(ref sandbox.HandleRef) string {
	return labelHandle + "=" + ref.Handle[:32] + "," + labelOwner + "=" + ref.Owner[:32]
}

// Mark labels ct's pod with the session's handle, owner and id, and as held
// by ct's stream.
func (e kubeEngine) Mark(ctx context.Context, ct sandbox.Container, ref sandbox.HandleRef, id string) error {
	pl, b := e.labels(), ct.(*heldBox)
	if pl == nil {
		return nil
	}
	b.mu.Lock()
	b.ref = ref
	b.mu.Unlock()
	return pl.Relabel(ctx, b.ID(), map[string]string{
		labelHandle: ref.Handle[:32], labelOwner: ref.Owner[:32], labelSession: id, labelHolder: b.holder,
	}, nil)
}

// Adopt finds the running pod marked with ref, makes it this replica's (its
// replica, owner and holder labels, so this replica's shutdown deletes it
// and no sweep takes it for a dead replica's) and opens a new stream to it,
// which ends the stream of the replica that held it.
func (e kubeEngine) Adopt(ctx context.Context, ref sandbox.HandleRef) (sandbox.Container, string, int, error) {
	pl := e.labels()
	if pl == nil {
		return nil, "", 0, sandbox.ErrUnknownHandle
	}
	pods, err := pl.Find(ctx, handleSelector(ref))
	if err != nil {
		return nil, "", 0, fmt.Errorf("looking for the session's sandbox pod: %w", err)
	}
	var pod *kube.PodSummary
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
	labels := map[string]string{kube.LabelReplica: e.e.Replica(), labelHolder: holder}
	if start, ok := owner[confine.LabelOwnerStart]; ok {
		labels[confine.LabelOwnerStart] = start
	}
	if err := pl.Relabel(ctx, pod.Name, labels, owner); err != nil {
		return nil, "", 0, fmt.Errorf("taking over sandbox pod %s: %w", pod.Name, err)
	}
	box, runs, err := e.e.Resume(ctx, pod.Name)
	if err != nil {
		return nil, "", 0, err
	}
	return &heldBox{Container: box, e: e, holder: holder, ref: ref}, pod.Labels[labelSession], runs, nil
}

// Lost reports whether ct's pod, still running, is held by another stream:
// another replica (or this one, again) adopted it.
func (e kubeEngine) Lost(ctx context.Context, ct sandbox.Container) bool {
	pl, b := e.labels(), ct.(*heldBox)
	b.mu.Lock()
	ref := b.ref
	b.mu.Unlock()
	if pl == nil || ref.Handle == "" {
		return false
	}
	pods, err := pl.Find(ctx, handleSelector(ref))
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

// Remove deletes the pod, unless another stream holds it now: then it only
// closes this one.
func (b *heldBox) Remove(ctx context.Context) error {
	if b.e.Lost(ctx, b) {
		return b.Stream().Close()
	}
	return b.Container.Remove(ctx)
}

var _ sandbox.Adopter = kubeEngine{}
